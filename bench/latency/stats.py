"""Per-system latency statistics and paired-bootstrap speedups.

Kept free of timing code so the arithmetic can be tested on synthetic latencies: the meter hands
over nanosecond integers, this module turns them into the numbers a run record stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

NS_PER_MS = 1_000_000.0


@dataclass(frozen=True)
class LatencyStats:
    """The single-stream summary stored in ``record["latency"]["stats"]`` (docs/run-record.md)."""

    n: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    min_ms: float
    std_ms: float
    tokens_per_s: float
    mean_iterations: float | None

    def to_json(self) -> dict[str, float | int | None]:
        return asdict(self)


def summarize(
    latencies_ns: Sequence[float],
    tokens: Sequence[int],
    iterations: Sequence[float] | None = None,
) -> LatencyStats:
    """Summarize timed items; percentiles use numpy's linear interpolation, std is the sample std.

    ``tokens`` are whitespace tokens of each output; tokens/s is total tokens over total timed time,
    which weights long outputs the way a user waiting on them would.
    """
    if len(latencies_ns) == 0:
        raise ValueError("Cannot summarize zero timed items: the meter timed nothing.")
    if len(tokens) != len(latencies_ns):
        raise ValueError(f"{len(tokens)} token counts for {len(latencies_ns)} latencies.")
    ms = np.asarray(latencies_ns, dtype=np.float64) / NS_PER_MS
    p50, p90, p99 = np.percentile(ms, [50.0, 90.0, 99.0])
    total_s = float(ms.sum()) / 1000.0
    mean_iter = float(np.mean(iterations)) if iterations else None
    return LatencyStats(
        n=int(ms.size),
        mean_ms=float(ms.mean()),
        p50_ms=float(p50),
        p90_ms=float(p90),
        p99_ms=float(p99),
        min_ms=float(ms.min()),
        std_ms=float(ms.std(ddof=1)) if ms.size > 1 else 0.0,
        tokens_per_s=float(sum(tokens)) / total_s if total_s > 0 else 0.0,
        mean_iterations=mean_iter,
    )


@dataclass(frozen=True)
class Speedup:
    """Baseline ÷ system on mean and median, each with a paired-bootstrap 95% CI."""

    mean: float
    median: float
    mean_ci95: tuple[float, float]
    median_ci95: tuple[float, float]
    n_resamples: int


def paired_bootstrap_speedup(
    baseline_ns: Sequence[float],
    system_ns: Sequence[float],
    n_resamples: int = 2000,
    seed: int = 0,
) -> Speedup:
    """Speedup of ``system`` over ``baseline`` with a paired bootstrap over items.

    Both sequences must be aligned item by item (the meter times the same item list for every
    system), so one resample of item positions is applied to both: per-item difficulty cancels
    and the CI reflects timing noise rather than which items happened to be drawn.
    """
    base = np.asarray(baseline_ns, dtype=np.float64)
    sys_ = np.asarray(system_ns, dtype=np.float64)
    if base.shape != sys_.shape or base.size == 0:
        raise ValueError(
            f"Paired bootstrap needs two equally long, non-empty latency lists; got {base.size} "
            f"and {sys_.size}. Time both systems on the same item list."
        )
    if np.any(sys_ <= 0) or np.any(base <= 0):
        raise ValueError("Latencies must be positive to form a ratio.")
    rng = np.random.default_rng(seed)
    mean_ratios = np.empty(n_resamples)
    median_ratios = np.empty(n_resamples)
    chunk = max(1, 4_000_000 // base.size)  # bound memory at ~32 MB per index block
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, base.size, size=(stop - start, base.size))
        b, s = base[idx], sys_[idx]
        mean_ratios[start:stop] = b.mean(axis=1) / s.mean(axis=1)
        median_ratios[start:stop] = np.median(b, axis=1) / np.median(s, axis=1)
    return Speedup(
        mean=float(base.mean() / sys_.mean()),
        median=float(np.median(base) / np.median(sys_)),
        mean_ci95=_interval(mean_ratios),
        median_ci95=_interval(median_ratios),
        n_resamples=n_resamples,
    )


def _interval(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)
