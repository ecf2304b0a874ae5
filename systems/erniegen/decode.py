"""Infilling decoding with a K/V cache and Paddle-style beam search (SYSTEMS.md §3.6).

Scores follow the reference ``beam_search`` op: a hypothesis keeps its *normalised* score
``Σ log p / lp(n)`` with GNMT ``lp(n) = ((5+n)/6)^α``, renormalised each step as
``(log p + prev·lp(t)) / lp(t+1)``; a finished hypothesis keeps its score and competes unchanged.
``no_repeat_ngram`` (off in the reference) blocks a token that would repeat an n-gram of its hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from systems.backbone.cache import KVBuffer, KVCache
from systems.decoding import block_repeated_ngrams
from systems.erniegen.model import ErnieGen


def length_penalty(n: int | Tensor, alpha: float) -> float | Tensor:
    """GNMT ``((5 + n) / 6) ** alpha``."""
    return ((5.0 + n) / 6.0) ** alpha


def renormalise(prev: Tensor, logp: Tensor, t: int, alpha: float) -> Tensor:
    """Score after step ``t`` (0-based) from the score after ``t`` tokens and the new token's log p."""
    return (logp + prev * length_penalty(t, alpha)) / length_penalty(t + 1, alpha)


def reorder(cache: KVCache | KVBuffer, rows: Tensor) -> KVCache | KVBuffer:
    """Cache rows ``rows`` (beam expansion or reordering): in place for a buffer, a new ``KVCache`` otherwise."""
    return cache.reorder_(rows) if isinstance(cache, KVBuffer) else cache.select(rows)


@dataclass(frozen=True)
class DecodeIds:
    bos: int  # [CLS]
    eos: int  # [SEP]
    pad: int


@torch.no_grad()
def infilling_decode(
    model: ErnieGen,
    src_ids: Tensor,
    src_types: Tensor,
    src_len: Tensor,
    ids: DecodeIds,
    beam_size: int = 1,
    alpha: float = 1.0,
    max_len: int = 48,
    in_place: bool = True,
    no_repeat_ngram: int = 0,
) -> list[list[int]]:
    """Best hypothesis per source, BOS stripped and cut before the first ``[SEP]``.

    ``in_place``: keep the K/V in a preallocated :class:`~systems.backbone.KVBuffer` (a step writes
    two positions and drops ``[ATTN]`` by moving the length pointer; beams are reordered in place),
    so a step's cost does not grow with the cache. False: the concatenating ``KVCache`` that copies
    the whole cache every step; kept as the reference the buffer is tested against (same tokens).
    """
    b, s = src_ids.shape
    k = beam_size
    dev = src_ids.device
    # the last step writes [prev, [ATTN]] at s + max_len - 1 and s + max_len
    cache = model.encode_source(src_ids, src_types, src_len, capacity=s + max_len + 1 if in_place else None)
    rows = torch.arange(b, device=dev).repeat_interleave(k)
    src_len_k = src_len.index_select(0, rows)
    if k > 1:
        cache = reorder(cache, rows)
    prev = torch.full((b * k,), ids.bos, dtype=torch.long, device=dev)
    scores = torch.zeros(b, k, device=dev)
    scores[:, 1:] = float("-inf")  # all beams start identical: expand only the first
    finished = torch.zeros(b, k, dtype=torch.bool, device=dev)
    tokens = torch.zeros(b, k, 0, dtype=torch.long, device=dev)
    for t in range(max_len):
        logits, cache = model.step(cache, prev, src_len_k, s, t)
        logp = logits.float().log_softmax(-1).view(b, k, -1)
        v = logp.shape[-1]
        if no_repeat_ngram > 0 and t >= no_repeat_ngram - 1:  # open hypotheses only: a finished one is frozen
            hyps = tokens.reshape(b * k, tokens.shape[2]).tolist()
            done = finished.view(-1).tolist()
            open_rows = [[] if d else hyp for hyp, d in zip(hyps, done, strict=True)]
            block_repeated_ngrams(logp.view(b * k, -1), open_rows, no_repeat_ngram)
        cand = renormalise(scores[:, :, None], logp, t, alpha)  # [B, K, V]
        # a finished hypothesis has one continuation (itself) with its frozen score
        frozen = torch.full_like(cand, float("-inf"))
        frozen[:, :, ids.eos] = scores
        cand = torch.where(finished[:, :, None], frozen, cand)
        top, idx = cand.view(b, k * v).topk(k, dim=-1)
        beam, tok = idx // v, idx % v
        was_finished = finished.gather(1, beam)
        tok = torch.where(was_finished, torch.full_like(tok, ids.pad), tok)
        tokens = torch.cat([tokens.gather(1, beam[:, :, None].expand(-1, -1, tokens.shape[2])), tok[:, :, None]], 2)
        finished = was_finished | (tok == ids.eos)
        scores = top
        if k > 1:  # with one beam, beam == 0 everywhere: the rows stay where they are
            cache = reorder(cache, (beam + torch.arange(b, device=dev)[:, None] * k).view(-1))
        prev = torch.where(was_finished, torch.full_like(tok, ids.eos), tok).view(-1)
        if bool(finished.all()):
            break
    best = scores.argmax(-1)
    out = []
    for i in range(b):
        seq = tokens[i, int(best[i])].tolist()
        cut = []
        for x in seq:
            if x == ids.eos:
                break
            cut.append(x)
        out.append(cut)
    return out
