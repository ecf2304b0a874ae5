"""The query schedule: which items are timed, in what order, by which system first.

The meter owns the schedule (MLPerf LoadGen's rule) so every system sees the same seeded item list
and systems take turns round by round: a slow drift of the machine (thermal, a neighbour's job)
then lands on all systems alike instead of biasing whichever ran last.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ItemPlan:
    """Example indices for warm-up and for timing, drawn from one seeded permutation.

    Timed items read the permutation from the front and warm-up items from the back, so the two
    are disjoint whenever the split has at least ``n + warm-up`` items: a system that caches
    outputs cannot be warmed up on the very items it is then timed on.
    """

    n_examples: int
    seed: int

    def _permutation(self, cycle: int) -> np.ndarray:
        return np.random.default_rng([self.seed, cycle]).permutation(self.n_examples)

    def timed(self) -> Iterator[int]:
        """Endless stream of timed example indices (a fresh permutation after each full pass)."""
        cycle = 0
        while True:
            yield from (int(i) for i in self._permutation(cycle))
            cycle += 1

    def warmup(self) -> Iterator[int]:
        """Endless stream of warm-up indices, starting from the far end of the first permutation."""
        cycle = 0
        while True:
            yield from (int(i) for i in self._permutation(cycle)[::-1])
            cycle += 1

    def take_timed(self, count: int, offset: int = 0) -> list[int]:
        """Timed indices ``offset .. offset+count`` of the stream (deterministic for a seed)."""
        out: list[int] = []
        for pos, idx in enumerate(self.timed()):
            if pos >= offset + count:
                break
            if pos >= offset:
                out.append(idx)
        return out


def round_sizes(n: int, rounds: int) -> list[int]:
    """Split ``n`` items into ``rounds`` slices whose sizes differ by at most one."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}.")
    if n < rounds:
        raise ValueError(f"n={n} items cannot fill rounds={rounds}; use n >= rounds.")
    base, extra = divmod(n, rounds)
    return [base + (1 if r < extra else 0) for r in range(rounds)]


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    """System order for one round: rotate by the round index so each system leads in turn."""
    if not names:
        return []
    k = round_index % len(names)
    return list(names[k:]) + list(names[:k])
