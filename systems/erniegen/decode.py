"""ERNIE-GEN's infilling decoding (docs/systems.md §3.6): its own step, searched by :mod:`systems.decoding`.

The search is the shared one under the ``paddle`` rule (the reference's Paddle ``beam_search`` op: GNMT-normalised
scores, finished hypotheses kept in the beam). What stays here is the one thing only ERNIE-GEN does, so it is
the step function handed to the search: each step feeds the previous token *and* an ``[ATTN]`` placeholder,
reads the next token off the placeholder, and keeps only the previous token's K/V (the placeholder's are
dropped, Fig. 4) -- not UniLM's ``[MASK]`` query, whose slot the next step overwrites in the same cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from systems.backbone.cache import KVBuffer, KVCache
from systems.decoding import SearchConfig, search
from systems.erniegen.model import ErnieGen


def reorder(cache: KVCache | KVBuffer, rows: Tensor) -> KVCache | KVBuffer:
    """Cache rows ``rows`` (beam expansion or reordering): in place for a buffer, a new ``KVCache`` otherwise."""
    return cache.reorder_(rows) if isinstance(cache, KVBuffer) else cache.select(rows)


@dataclass(frozen=True)
class DecodeIds:
    bos: int  # [CLS], the first step's previous token
    eos: int  # [SEP]


class InfillingSteps:
    """The infilling step as a :class:`~systems.decoding.StepModel`; the state is (cache, source lengths, step)."""

    def __init__(self, model: ErnieGen, bos: int, src_max: int) -> None:
        self.model, self.bos, self.src_max = model, bos, src_max

    def step(self, state: tuple[Any, Tensor, int], prev: Tensor | None) -> tuple[Tensor, tuple[Any, Tensor, int]]:
        cache, src_len, t = state
        if prev is None:
            prev = torch.full((src_len.shape[0],), self.bos, dtype=torch.long, device=src_len.device)
        logits, cache = self.model.step(cache, prev, src_len, self.src_max, t)
        return logits.float().log_softmax(-1), (cache, src_len, t + 1)

    def reorder(self, state: tuple[Any, Tensor, int], index: Tensor) -> tuple[Any, Tensor, int]:
        cache, src_len, t = state
        index = index.to(src_len.device)
        return reorder(cache, index), src_len.index_select(0, index), t


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
    s = src_ids.shape[1]
    # the last step writes [prev, [ATTN]] at s + max_len - 1 and s + max_len
    cache = model.encode_source(src_ids, src_types, src_len, capacity=s + max_len + 1 if in_place else None)
    cfg = SearchConfig(beam_size=beam_size, max_len=max_len, min_len=0, eos_id=ids.eos, length_penalty=alpha,
                       no_repeat_ngram=no_repeat_ngram, rule="paddle")
    return search(InfillingSteps(model, ids.bos, s), (cache, src_len, 0), src_ids.shape[0], cfg)
