"""Batched greedy and beam search over any incremental decoder (``StepModel``).

A system supplies ``step(state, prev_tokens) -> (log_probs [N, V], state)`` and
``reorder(state, index) -> state``; the search owns lengths, EOS, n-gram blocking and scoring, so
UniLM, CopyBERT and ERNIE-GEN share one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor


class StepModel(Protocol):
    def step(self, state: Any, prev: Tensor | None) -> tuple[Tensor, Any]:
        """Log-probabilities of the next token for each row; ``prev`` is None at the first step."""
        ...

    def reorder(self, state: Any, index: Tensor) -> Any:
        """Keep rows ``index`` (with repeats) of the state."""
        ...


@dataclass(frozen=True)
class SearchConfig:
    beam_size: int = 1
    max_len: int = 48
    min_len: int = 1
    eos_id: int = 102
    length_penalty: float = 0.0  # final score = sum log p / len ** length_penalty (0: raw sum)
    no_repeat_ngram: int = 0  # block repeated n-grams of this size (0: off)
    ngram_ignore: frozenset[int] = frozenset()  # n-grams containing these ids may repeat (s2s-ft "." rule)


def blocked_ngram_tokens(seq: Sequence[int], n: int, ignore: frozenset[int] = frozenset()) -> set[int]:
    """Tokens that would complete an n-gram already present in ``seq``."""
    if n <= 0 or len(seq) < n:
        return set()
    prefix = tuple(seq[len(seq) - n + 1 :]) if n > 1 else ()
    if any(t in ignore for t in prefix):
        return set()
    out = set()
    for i in range(len(seq) - n + 1):
        gram = seq[i : i + n]
        if tuple(gram[:-1]) == prefix and gram[-1] not in ignore:
            out.add(gram[-1])
    return out


def _apply_constraints(logp: Tensor, seqs: Iterable[list[int]], cfg: SearchConfig, length: int) -> Tensor:
    if length < cfg.min_len:
        logp[:, cfg.eos_id] = float("-inf")
    if cfg.no_repeat_ngram > 0:
        block_repeated_ngrams(logp, seqs, cfg.no_repeat_ngram, cfg.ngram_ignore)
    return logp


def block_repeated_ngrams(
    logp: Tensor, seqs: Iterable[Sequence[int]], n: int, ignore: frozenset[int] = frozenset()
) -> None:
    """Set to −inf (in place) row ``i``'s log p of every token that would repeat an n-gram of ``seqs[i]``
    (the n-gram blocking of every search here: this module's, CopyBERT's reference beam, ERNIE-GEN's)."""
    for row, seq in enumerate(seqs):
        banned = blocked_ngram_tokens(seq, n, ignore)
        if banned:
            logp[row, sorted(banned)] = float("-inf")


@torch.no_grad()
def greedy_search(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> list[list[int]]:
    """Argmax decoding; each output ends before its first EOS (which is not included)."""
    out: list[list[int]] = [[] for _ in range(batch_size)]
    done = [False] * batch_size
    prev: Tensor | None = None
    for t in range(cfg.max_len):
        logp, state = model.step(state, prev)
        logp = _apply_constraints(logp.float(), out, cfg, t)
        prev = logp.argmax(-1)
        for i, tok in enumerate(prev.tolist()):
            if done[i]:
                continue
            if tok == cfg.eos_id:
                done[i] = True
            else:
                out[i].append(tok)
        if all(done):
            break
    return out


@torch.no_grad()
def beam_search(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> list[list[int]]:
    """Beam search returning the best finished hypothesis per input (EOS excluded).

    A hypothesis finishes when it emits EOS (allowed from ``min_len``); an input stops when it holds
    ``beam_size`` finished hypotheses or at ``max_len``, where live beams are finished as they are.
    """
    k = cfg.beam_size
    if k == 1:
        return greedy_search(model, state, batch_size, cfg)
    dev_index = torch.arange(batch_size).repeat_interleave(k)
    state = model.reorder(state, dev_index)
    seqs: list[list[int]] = [[] for _ in range(batch_size * k)]
    scores = torch.zeros(batch_size, k)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep one alive at t=0
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch_size)]
    closed = [False] * batch_size
    prev: Tensor | None = None

    def final(score: float, seq: list[int]) -> float:
        return score / (max(len(seq), 1) ** cfg.length_penalty) if cfg.length_penalty else score

    for t in range(cfg.max_len):
        logp, state = model.step(state, prev)
        logp = _apply_constraints(logp.float().cpu(), seqs, cfg, t)
        vocab = logp.shape[-1]
        cand = (scores.view(-1, 1) + logp).view(batch_size, k * vocab)
        top_s, top_i = cand.topk(2 * k, dim=-1)
        new_seqs, new_scores, src_rows, next_tok = [], [], [], []
        for b in range(batch_size):
            kept = 0
            for s, i in zip(top_s[b].tolist(), top_i[b].tolist(), strict=True):
                beam, tok = divmod(i, vocab)
                row = b * k + beam
                if s == float("-inf"):
                    break
                if tok == cfg.eos_id:
                    if not closed[b] and len(finished[b]) < k:
                        finished[b].append((final(s, seqs[row]), list(seqs[row])))
                    continue
                if kept < k:
                    new_seqs.append(seqs[row] + [tok])
                    new_scores.append(s)
                    src_rows.append(row)
                    next_tok.append(tok)
                    kept += 1
            while kept < k:  # pad with dead beams
                new_seqs.append(list(seqs[b * k]))
                new_scores.append(float("-inf"))
                src_rows.append(b * k)
                next_tok.append(cfg.eos_id)
                kept += 1
            if len(finished[b]) >= k:
                closed[b] = True
        seqs = new_seqs
        scores = torch.tensor(new_scores).view(batch_size, k)
        for b in range(batch_size):
            if closed[b]:
                scores[b] = float("-inf")
        if all(closed):
            break
        state = model.reorder(state, torch.tensor(src_rows))
        prev = torch.tensor(next_tok)
    best = []
    for b in range(batch_size):
        pool = list(finished[b])
        if not closed[b]:
            for j in range(k):
                s = float(scores[b, j])
                if s > float("-inf"):
                    pool.append((final(s, seqs[b * k + j]), seqs[b * k + j]))
        best.append(max(pool, key=lambda x: x[0])[1] if pool else [])
    return best


def search(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> list[list[int]]:
    return (
        greedy_search(model, state, batch_size, cfg)
        if cfg.beam_size == 1
        else beam_search(model, state, batch_size, cfg)
    )
