"""Choosing a canary's size once per run, so its fixed workload takes a set time on this machine.

Why: a canary too small for the machine measures launch jitter, not contention. On an idle H200 a
128×128 chain took 0.10–0.20 ms (launch-bound, a 2× spread with nothing else running) while a
2048×2048 chain took 1.42–1.51 ms. The size that makes a workload compute-bound differs between
machines, so it is found by timing, at the start of a run, and then held fixed for the whole run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sizing:
    """The size chosen for a run, the time it took, the target, and every (size, ms) tried on the way."""

    size: int
    ms: float
    target_ms: tuple[float, float]
    trials: tuple[tuple[int, float], ...]

    @property
    def in_range(self) -> bool:
        low, high = self.target_ms
        return low <= self.ms <= high

    def to_json(self) -> dict[str, object]:
        return {
            "size": self.size, "ms": self.ms, "target_ms": list(self.target_ms), "in_range": self.in_range,
            "trials": [[s, ms] for s, ms in self.trials],
        }


def choose_size(
    time_at: Callable[[int], float],
    target_ms: tuple[float, float],
    start: int,
    granule: int = 1,
    max_size: int = 1 << 30,
    max_trials: int = 24,
    min_size: int = 1,
) -> Sizing:
    """The first size (a multiple of ``granule``) whose ``time_at(size)`` in ms lies in ``target_ms``.

    Doubles from ``start`` while too fast, halves (not below ``min_size``) while too slow, and
    bisects once a too-fast and a too-slow size bracket the target (a matmul's cost grows as size³,
    so doubling alone can jump over a 3× window). When no size lands inside (a bound was reached,
    or timing noise), the size whose time was closest to the window (by ratio) is returned and
    ``in_range`` is False.
    """
    low, high = target_ms
    if not 0 < low <= high:
        raise ValueError(f"target_ms must be 0 < low <= high, got {target_ms}.")
    cap, floor = _snap(max_size, granule), _snap(min_size, granule)
    trials: list[tuple[int, float]] = []
    below: int | None = None  # largest size seen too fast
    above: int | None = None  # smallest size seen too slow
    size = max(min(_snap(start, granule), cap), floor)
    while len(trials) < max_trials:
        ms = time_at(size)
        trials.append((size, ms))
        if low <= ms <= high:
            return Sizing(size, ms, (low, high), tuple(trials))
        if ms < low:
            below = size if below is None else max(below, size)
        else:
            above = size if above is None else min(above, size)
        nxt = _next_size(size, ms < low, below, above, granule, floor, cap)
        if nxt is None:
            break
        size = nxt
    best = min(trials, key=lambda t: _distance(t[1], low, high))
    return Sizing(best[0], best[1], (low, high), tuple(trials))


def _next_size(
    size: int, too_fast: bool, below: int | None, above: int | None, granule: int, floor: int, cap: int
) -> int | None:
    if below is not None and above is not None:
        mid = _snap((below + above) // 2, granule)
        return None if mid <= below or mid >= above else mid
    if too_fast:
        return None if size >= cap else min(size * 2, cap)
    return None if size <= floor else max(_snap(size // 2, granule), floor)


def _snap(size: int, granule: int) -> int:
    return max(granule, round(size / granule) * granule)


def _distance(ms: float, low: float, high: float) -> float:
    if ms <= 0:
        return math.inf
    return math.log(low / ms) if ms < low else math.log(ms / high) if ms > high else 0.0


__all__ = ["Sizing", "choose_size"]
