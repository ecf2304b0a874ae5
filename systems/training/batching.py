"""Which examples form each micro-batch: seeded, stateless, optionally length-bucketed.

Batches are padded to their longest item, so a batch that mixes a 12-token and a 60-token
example pays for 60 twice. Bucketing (fairseq's and HF's "group by length") sorts each pool of
``pool`` consecutive global micro-batches of a seeded permutation by length, cuts the pool into
micro-batches and shuffles their order: batches hold similar lengths, every example is still seen
exactly once per epoch, and the order stays a pure function of (seed, epoch) so resume is exact.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch


def pad_length(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (compiled kernels see repeating shapes)."""
    return n if multiple <= 1 else -(-n // multiple) * multiple


class BatchOrder:
    """The endless stream of example indices, cut into global micro-batches of ``span`` items
    (incomplete tails dropped); epoch e is a permutation drawn with seed ``seed + e``."""

    def __init__(self, n: int, seed: int, span: int, lengths: Sequence[int] | None = None, pool: int = 0) -> None:
        if lengths is not None and len(lengths) != n:
            raise ValueError(f"{len(lengths)} lengths for {n} training examples")
        self.n, self.seed, self.span, self.lengths, self.pool = n, seed, span, lengths, pool
        self.usable = (n // span) * span
        if self.usable == 0:
            raise ValueError(f"{n} training examples cannot fill one global micro-batch of {span}")
        self._cache: tuple[int, list[int]] | None = None

    @property
    def bucketed(self) -> bool:
        return self.lengths is not None and self.pool > 1

    def epoch(self, e: int) -> list[int]:
        """Epoch ``e``'s order (its first ``usable`` items are read)."""
        if self._cache is not None and self._cache[0] == e:
            return self._cache[1]
        perm = torch.randperm(self.n, generator=torch.Generator().manual_seed(self.seed + e)).tolist()
        if self.bucketed:
            assert self.lengths is not None
            lengths, span, group = self.lengths, self.span, self.span * self.pool
            rng = random.Random(self.seed * 7_919 + e)
            head, out = perm[: self.usable], list[list[int]]()
            for start in range(0, self.usable, group):
                chunk = sorted(head[start : start + group], key=lambda i: lengths[i])
                batches = [chunk[b : b + span] for b in range(0, len(chunk), span)]
                rng.shuffle(batches)
                out.extend(i for batch in batches for i in batch)
            perm = out + perm[self.usable :]
        self._cache = (e, perm)
        return perm

    def indices(self, micro_index: int, micro: int, rank: int) -> list[int]:
        """The examples of global micro-batch ``micro_index`` that rank ``rank`` reads."""
        start = micro_index * self.span + rank * micro
        out = []
        for pos in range(start, start + micro):
            e, off = divmod(pos, self.usable)
            out.append(self.epoch(e)[off])
        return out
