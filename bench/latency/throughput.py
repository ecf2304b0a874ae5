"""Throughput statistics of a batch-size sweep: per-batch timings in, sentences/s with CIs, crossovers out.

Kept free of timing code (like :mod:`bench.latency.stats`) so the arithmetic is tested on synthetic
batches. A batch is the unit of resampling: items in one batch share one clock reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

NS_PER_S = 1e9


@dataclass(frozen=True)
class Throughput:
    """One (system, B, threads) cell: rates over the whole timed set, CIs from a bootstrap over batches."""

    batch_size: int
    n_batches: int
    sentences: int
    tokens: int
    timed_s: float
    sentences_per_s: float
    sentences_per_s_ci95: tuple[float, float]
    tokens_per_s: float
    tokens_per_s_ci95: tuple[float, float]
    batch_p50_ms: float
    batch_p90_ms: float
    batch_p99_ms: float

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["sentences_per_s_ci95"] = list(self.sentences_per_s_ci95)
        out["tokens_per_s_ci95"] = list(self.tokens_per_s_ci95)
        return out


def throughput(
    batch_ns: Sequence[float], batch_items: Sequence[int], batch_tokens: Sequence[int], batch_size: int,
    n_resamples: int = 2000, seed: int = 0,
) -> Throughput:
    """Sentences/s and target tokens/s as totals over total time (what a user draining a queue sees), each
    with a 95% bootstrap CI over batches; per-batch latency percentiles (numpy linear interpolation)."""
    ns = np.asarray(batch_ns, dtype=np.float64)
    items = np.asarray(batch_items, dtype=np.float64)
    toks = np.asarray(batch_tokens, dtype=np.float64)
    if ns.size == 0 or not ns.size == items.size == toks.size:
        raise ValueError(f"throughput needs one time, item count and token count per batch; got {ns.size}, "
                         f"{items.size}, {toks.size}. Time at least one batch.")
    if np.any(ns <= 0):
        raise ValueError("Batch times must be positive; the clock read 0 ns for a batch.")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, ns.size, size=(n_resamples, ns.size))
    t = ns[idx].sum(axis=1) / NS_PER_S
    ms = ns / 1e6
    p50, p90, p99 = np.percentile(ms, [50.0, 90.0, 99.0])
    total_s = float(ns.sum()) / NS_PER_S
    return Throughput(
        batch_size=batch_size, n_batches=int(ns.size), sentences=int(items.sum()), tokens=int(toks.sum()),
        timed_s=total_s, sentences_per_s=float(items.sum()) / total_s,
        sentences_per_s_ci95=_interval(items[idx].sum(axis=1) / t), tokens_per_s=float(toks.sum()) / total_s,
        tokens_per_s_ci95=_interval(toks[idx].sum(axis=1) / t), batch_p50_ms=float(p50), batch_p90_ms=float(p90),
        batch_p99_ms=float(p99),
    )


def crossover(baseline: Mapping[int, float], system: Mapping[int, float]) -> int | str:
    """The smallest batch size at which the baseline's sentences/s reaches the system's, or "none up to
    B_max" (``baseline``/``system``: batch size -> sentences/s; only sizes both were timed at count)."""
    shared = sorted(set(baseline) & set(system))
    if not shared:
        raise ValueError("No batch size was timed for both the baseline and the system; sweep them together.")
    for b in shared:
        if baseline[b] >= system[b]:
            return b
    return f"none up to B_max={shared[-1]}"


def track(threads: int, cores: int, device: str) -> str:
    """The WMT efficiency track a setting belongs to: one thread is the latency track, every core the
    throughput track (CPU); on a GPU the device decides, not the threads."""
    if device != "cpu":
        return "gpu"
    if threads == 1:
        return "latency (1 thread)"
    if threads >= cores:
        return f"throughput (all {cores} cores)"
    return f"partial ({threads} of {cores} cores)"


def _interval(samples: np.ndarray) -> tuple[float, float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


__all__ = ["Throughput", "crossover", "throughput", "track"]
