"""Greedy and beam search over any incremental decoder (``StepModel``): the one search of every AR family here.

A system supplies ``step(state, prev_tokens) -> (log_probs [N, V], state)`` and ``reorder(state, index) -> state``,
the part that differs between families (UniLM's ``[MASK]`` query, ERNIE-GEN's ``[ATTN]`` placeholder, CopyBERT's
prefix scorers); the search owns the loop, lengths, EOS, forbidden tokens and n-gram blocking.

How a beam keeps, finishes and picks hypotheses is where the reference codes disagree, and each family reproduces
its reference's outputs, so that is the search's ``rule`` (:attr:`SearchConfig.rule`), one class each:
:class:`FairseqBeams` (UniLM; fairseq's and Hugging Face's generators), :class:`OpenNMTBeams` (CopyBERT's
reference, docs/systems.md §1.7) and :class:`PaddleBeams` (ERNIE-GEN's Paddle ``beam_search`` op, §3.6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

NEG_INF = float("-inf")
#: the score of every continuation of a finished slot under the ``opennmt`` rule (the reference's −1e10)
DEAD = -1e10


class StepModel(Protocol):
    def step(self, state: Any, prev: Tensor | None) -> tuple[Tensor, Any]:
        """Log-probabilities ``[N, V]`` of the next token for each row, in a tensor the search may write into;
        ``prev`` is None at the first step."""
        ...

    def reorder(self, state: Any, index: Tensor) -> Any:
        """Keep rows ``index`` (with repeats) of the state."""
        ...


#: the beam rules (see the module docstring)
RULES = ("fairseq", "opennmt", "paddle")


@dataclass(frozen=True)
class SearchConfig:
    beam_size: int = 1
    max_len: int = 48
    min_len: int = 1  # EOS is refused before this many tokens
    eos_id: int = 102
    # the rule's: fairseq score / len ** lp (0: raw sum); opennmt score / (1 + len) ** lp at the pick; paddle GNMT α
    length_penalty: float = 0.0
    no_repeat_ngram: int = 0  # block repeated n-grams of this size (0: off)
    ngram_ignore: frozenset[int] = frozenset()  # n-grams containing these ids may repeat (s2s-ft "." rule)
    forbidden: frozenset[int] = frozenset()  # ids never emitted (CopyBERT's [PAD]: docs/systems.md §1.4 ⚠)
    rule: str = "fairseq"
    n_best: int = 1  # opennmt: hypotheses collected before the search may stop

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"SearchConfig.rule={self.rule!r}: choose one of {', '.join(RULES)}")


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


def block_repeated_ngrams(
    logp: Tensor, seqs: Sequence[Sequence[int]], n: int, ignore: frozenset[int] = frozenset()
) -> None:
    """Set to −inf (in place) row ``i``'s log p of every token that would repeat an n-gram of ``seqs[i]``."""
    for row, seq in enumerate(seqs):
        banned = blocked_ngram_tokens(seq, n, ignore)
        if banned:
            logp[row, sorted(banned)] = NEG_INF


def constrain(logp: Tensor, prefixes: Callable[[], Sequence[Sequence[int]]], cfg: SearchConfig, t: int) -> Tensor:
    """``logp`` of step ``t`` with what no row may emit set to −inf, in place: EOS before ``min_len``, the
    forbidden ids, and tokens that repeat an n-gram of the row's prefix. ``prefixes`` (each row's tokens so far)
    is asked for only when blocking can bite: before step ``n`` no prefix holds an n-gram."""
    if t < cfg.min_len:
        logp[:, cfg.eos_id] = NEG_INF
    if cfg.forbidden:
        logp[:, sorted(cfg.forbidden)] = NEG_INF
    if cfg.no_repeat_ngram > 0 and t >= cfg.no_repeat_ngram:
        block_repeated_ngrams(logp, prefixes(), cfg.no_repeat_ngram, cfg.ngram_ignore)
    return logp


@torch.no_grad()
def greedy_search(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> list[list[int]]:
    """Argmax decoding; each output ends before its first EOS (which is not included)."""
    out: list[list[int]] = [[] for _ in range(batch_size)]
    done = [False] * batch_size
    prev: Tensor | None = None
    for t in range(cfg.max_len):
        logp, state = model.step(state, prev)
        prev = constrain(logp.float(), lambda: out, cfg, t).argmax(-1)
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


class Beams(Protocol):
    """One rule's bookkeeping of a search over ``batch_size`` inputs × ``beam_size`` slots (rows input-major)."""

    #: True: the rule works on the host, so each step's log-probs move there before the constraints are applied
    on_host: bool

    def prefixes(self) -> Sequence[Sequence[int]]:
        """Each row's tokens so far (for n-gram blocking)."""
        ...

    def advance(self, logp: Tensor, t: int) -> tuple[Tensor, Tensor] | None:
        """Choose the next beams from step ``t``'s constrained log-probs ``[B*K, V]``: the rows they extend and
        their tokens (the next ``prev``), or None when the search is over."""
        ...

    def finish(self) -> list[list[int]]:
        """Each input's output tokens, once the search is over."""
        ...


@torch.no_grad()
def run_beams(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> tuple[list[list[int]], Beams]:
    """The search loop every rule shares: each input's outputs, and the rule's bookkeeping (what it kept)."""
    beams = _RULE_TYPES[cfg.rule](batch_size, cfg)
    k = cfg.beam_size
    if k > 1:  # with one slot the rows never move: no state is copied
        state = model.reorder(state, torch.arange(batch_size).repeat_interleave(k))
    prev: Tensor | None = None
    for t in range(cfg.max_len):
        logp, state = model.step(state, prev)
        logp = logp.float().cpu() if beams.on_host else logp.float()
        chosen = beams.advance(constrain(logp, beams.prefixes, cfg, t), t)
        if chosen is None:
            break
        rows, prev = chosen
        if k > 1:
            state = model.reorder(state, rows)
    return beams.finish(), beams


def beam_search(model: StepModel, state: Any, batch_size: int, cfg: SearchConfig) -> list[list[int]]:
    """Each input's output tokens (EOS excluded) under ``cfg.rule``; ``state`` holds one row per input."""
    if cfg.rule == "fairseq" and cfg.beam_size == 1:
        return greedy_search(model, state, batch_size, cfg)
    return run_beams(model, state, batch_size, cfg)[0]


#: the entry point the systems call (greedy is the fairseq rule's beam 1)
search = beam_search


class PrefixSteps:
    """A scorer of whole prefixes (``score(prefixes) -> log p [N, V]``) as a :class:`StepModel` whose state is
    each row's prefix: CopyBERT's scorers re-encode a prefix or gather their cache by it (docs/systems.md §1.7)."""

    def __init__(self, score: Callable[[Sequence[tuple[int, ...]]], Tensor]) -> None:
        self.score = score

    def step(self, state: list[tuple[int, ...]], prev: Tensor | None) -> tuple[Tensor, list[tuple[int, ...]]]:
        if prev is not None:
            state = [p + (t,) for p, t in zip(state, prev.tolist(), strict=True)]
        return self.score(state).float().cpu().clone(), state  # clone: a scorer may return a view of its state

    def reorder(self, state: list[tuple[int, ...]], index: Tensor) -> list[tuple[int, ...]]:
        return [state[i] for i in index.tolist()]


# --------------------------------------------------------------------------- the rules


class FairseqBeams:
    """The ``fairseq`` rule: 2k candidates a step; a hypothesis that emits EOS leaves the beam for its input's
    pool, which closes at k; the pick maximises ``score / len ** length_penalty`` (0: the raw sum). Beam 1 is
    greedy (:func:`beam_search`)."""

    on_host = True

    def __init__(self, batch_size: int, cfg: SearchConfig) -> None:
        self.b, self.k, self.cfg = batch_size, cfg.beam_size, cfg
        self.seqs: list[list[int]] = [[] for _ in range(batch_size * cfg.beam_size)]
        self.scores = torch.zeros(batch_size, cfg.beam_size)
        self.scores[:, 1:] = NEG_INF  # all beams start identical: keep one alive at t=0
        self.pool: list[list[tuple[float, list[int]]]] = [[] for _ in range(batch_size)]
        self.closed = [False] * batch_size

    def prefixes(self) -> list[list[int]]:
        return self.seqs

    def _final(self, score: float, seq: list[int]) -> float:
        lp = self.cfg.length_penalty
        return score / (max(len(seq), 1) ** lp) if lp else score

    def advance(self, logp: Tensor, t: int) -> tuple[Tensor, Tensor] | None:
        b, k, eos = self.b, self.k, self.cfg.eos_id
        vocab = logp.shape[-1]
        cand = (self.scores.view(-1, 1) + logp).view(b, k * vocab)
        top_s, top_i = cand.topk(2 * k, dim=-1)
        new_seqs, new_scores, src_rows, next_tok = [], [], [], []
        for i in range(b):
            kept = 0
            for s, flat in zip(top_s[i].tolist(), top_i[i].tolist(), strict=True):
                beam, tok = divmod(flat, vocab)
                row = i * k + beam
                if s == NEG_INF:
                    break
                if tok == eos:
                    if not self.closed[i] and len(self.pool[i]) < k:
                        self.pool[i].append((self._final(s, self.seqs[row]), list(self.seqs[row])))
                    continue
                if kept < k:
                    new_seqs.append(self.seqs[row] + [tok])
                    new_scores.append(s)
                    src_rows.append(row)
                    next_tok.append(tok)
                    kept += 1
            while kept < k:  # pad with dead beams
                new_seqs.append(list(self.seqs[i * k]))
                new_scores.append(NEG_INF)
                src_rows.append(i * k)
                next_tok.append(eos)
                kept += 1
            if len(self.pool[i]) >= k:
                self.closed[i] = True
        self.seqs = new_seqs
        self.scores = torch.tensor(new_scores).view(b, k)
        for i in range(b):
            if self.closed[i]:
                self.scores[i] = NEG_INF
        if all(self.closed):
            return None
        return torch.tensor(src_rows), torch.tensor(next_tok)

    def finish(self) -> list[list[int]]:
        best = []
        for i in range(self.b):
            pool = list(self.pool[i])
            if not self.closed[i]:  # live beams finish as they are
                for j in range(self.k):
                    s = float(self.scores[i, j])
                    if s > NEG_INF:
                        pool.append((self._final(s, self.seqs[i * self.k + j]), self.seqs[i * self.k + j]))
            best.append(max(pool, key=lambda x: x[0])[1] if pool else [])
        return best


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis the ``opennmt`` rule collected."""

    tokens: tuple[int, ...]  # generated tokens, the final EOS included when finished
    score: float  # cumulative log-prob
    finished: bool

    def rescored(self, length_penalty: float) -> float:
        """The final pick's score: ``score / (1 + len) ** length_penalty`` (+1 counts CopyBERT's [MASK] slot)."""
        return self.score / (1 + len(self.tokens)) ** length_penalty


class OpenNMTBeams:
    """The ``opennmt`` rule, one input at a time (CopyBERT's ``qg_utils/beam_search.py``, docs/systems.md §1.7).

    k candidates a step; a slot that emitted EOS stays in the beam with every continuation scored :data:`DEAD`,
    and every EOS hypothesis is collected; the search stops once the top slot has finished and ``n_best`` are
    collected; the pick maximises :meth:`Hypothesis.rescored` (``length_penalty`` 1 is the reference's). The
    output is the pick minus its **last** token (EOS, or a real token when the length ran out, as in the
    reference) and minus any EOS or forbidden id a dead slot carried.
    """

    on_host = True

    def __init__(self, batch_size: int, cfg: SearchConfig) -> None:
        if batch_size != 1:
            raise ValueError(f"the opennmt beam rule searches one input at a time (as CopyBERT's reference "
                             f"decodes, docs/systems.md §1.7), not {batch_size}")
        self.cfg = cfg
        self.tokens: list[tuple[int, ...]] = [()] * cfg.beam_size
        self.scores = torch.full((cfg.beam_size,), NEG_INF)
        self.scores[0] = 0.0
        self.collected: list[Hypothesis] = []  # every finished hypothesis, then (finish) live ones up to n_best
        self.top_done = False
        self.best: Hypothesis | None = None

    def prefixes(self) -> list[tuple[int, ...]]:
        return self.tokens

    def advance(self, logp: Tensor, t: int) -> tuple[Tensor, Tensor] | None:
        eos = self.cfg.eos_id
        cand = self.scores[:, None] + logp
        for i, prefix in enumerate(self.tokens):
            if prefix and prefix[-1] == eos:
                cand[i] = DEAD
        vocab = cand.shape[1]
        best, flat = cand.view(-1).topk(self.cfg.beam_size)
        parents, toks = flat // vocab, flat % vocab
        self.tokens = [self.tokens[p] + (tok,) for p, tok in zip(parents.tolist(), toks.tolist(), strict=True)]
        self.scores = best
        for i, tok in enumerate(toks.tolist()):
            if tok == eos:
                self.collected.append(Hypothesis(self.tokens[i], float(best[i]), True))
        if int(toks[0]) == eos:
            self.top_done = True
        if self.top_done and len(self.collected) >= self.cfg.n_best:
            return None
        return parents, toks

    def finish(self) -> list[list[int]]:
        cfg = self.cfg
        i = 0
        while len(self.collected) < cfg.n_best and i < cfg.beam_size:  # OpenNMT sort_finished(minimum=n_best)
            if self.tokens[i][-1:] != (cfg.eos_id,):
                self.collected.append(Hypothesis(self.tokens[i], float(self.scores[i]), False))
            i += 1
        self.collected.sort(key=lambda h: -h.score)
        self.best = max(self.collected, key=lambda h: h.rescored(cfg.length_penalty))
        drop = {cfg.eos_id, *cfg.forbidden}
        return [[t for t in self.best.tokens[:-1] if t not in drop]]


def gnmt_penalty(n: int | Tensor, alpha: float) -> float | Tensor:
    """GNMT's length penalty ``((5 + n) / 6) ** alpha``."""
    return ((5.0 + n) / 6.0) ** alpha


def renormalise(prev: Tensor, logp: Tensor, t: int, alpha: float) -> Tensor:
    """The ``paddle`` score after step ``t`` (0-based) from the score after ``t`` tokens and the new token's log p."""
    return (logp + prev * gnmt_penalty(t, alpha)) / gnmt_penalty(t + 1, alpha)


class PaddleBeams:
    """The ``paddle`` rule (ERNIE-GEN's Paddle ``beam_search`` op, docs/systems.md §3.6).

    The running score is GNMT-normalised, ``Σ log p / gnmt_penalty(n, length_penalty)``, renormalised every step;
    a finished hypothesis stays in the beam with its frozen score and competes with the open ones (its one
    continuation is EOS again, fed as the next ``prev``); the search stops when every slot has finished; the pick
    is the best slot. Kept on the log-probs' device: no host sync unless n-gram blocking asks for the prefixes.
    """

    on_host = False

    def __init__(self, batch_size: int, cfg: SearchConfig) -> None:
        self.b, self.k, self.cfg = batch_size, cfg.beam_size, cfg
        self.scores: Tensor | None = None  # [B, K], made on the first step's device
        self.finished = self.tokens = torch.zeros(0)

    def prefixes(self) -> list[list[int]]:
        hyps = self.tokens.reshape(self.b * self.k, self.tokens.shape[-1]).tolist()
        done = self.finished.view(-1).tolist()
        return [[] if d else hyp for hyp, d in zip(hyps, done, strict=True)]  # a finished one is frozen

    def advance(self, logp: Tensor, t: int) -> tuple[Tensor, Tensor] | None:
        b, k, eos = self.b, self.k, self.cfg.eos_id
        if self.scores is None:
            self.scores = torch.zeros(b, k, device=logp.device)
            self.scores[:, 1:] = NEG_INF  # all beams start identical: expand only the first
            self.finished = torch.zeros(b, k, dtype=torch.bool, device=logp.device)
            self.tokens = torch.zeros(b, k, 0, dtype=torch.long, device=logp.device)
        logp = logp.view(b, k, -1)
        v = logp.shape[-1]
        cand = renormalise(self.scores[:, :, None], logp, t, self.cfg.length_penalty)  # [B, K, V]
        frozen = torch.full_like(cand, NEG_INF)  # a finished hypothesis: one continuation, its frozen score
        frozen[:, :, eos] = self.scores
        cand = torch.where(self.finished[:, :, None], frozen, cand)
        top, idx = cand.view(b, k * v).topk(k, dim=-1)
        beam, tok = idx // v, idx % v
        was_finished = self.finished.gather(1, beam)
        tok = torch.where(was_finished, torch.full_like(tok, eos), tok)
        gathered = self.tokens.gather(1, beam[:, :, None].expand(-1, -1, self.tokens.shape[2]))
        self.tokens = torch.cat([gathered, tok[:, :, None]], 2)
        self.finished = was_finished | (tok == eos)
        self.scores = top
        if bool(self.finished.all()):
            return None
        return (beam + torch.arange(b, device=beam.device)[:, None] * k).view(-1), tok.view(-1)

    def finish(self) -> list[list[int]]:
        if self.scores is None:
            return [[] for _ in range(self.b)]
        best = self.scores.argmax(-1)
        out = []
        for i in range(self.b):
            seq = self.tokens[i, int(best[i])].tolist()
            out.append(seq[: seq.index(self.cfg.eos_id)] if self.cfg.eos_id in seq else seq)
        return out


_RULE_TYPES: dict[str, Callable[[int, SearchConfig], Beams]] = {
    "fairseq": FairseqBeams, "opennmt": OpenNMTBeams, "paddle": PaddleBeams,
}
