"""A sweep record's rates, speed-ups and crossovers derived again from its raw per-batch timings.

Why: the speed page prints each cell's sentences/s, tokens/s, batch percentiles and speed-up, and each
crossover, as facts. Here they are recomputed from ``batch_ns``/``batch_items``/``batch_tokens`` through the
sweep's own arithmetic (:func:`bench.latency.throughput.throughput`,
:func:`bench.latency.stats.paired_bootstrap_speedup` with the record's resamples and seed,
:func:`bench.latency.throughput.crossover`), so a hand-edited figure fails ``bench table --check --deep``
naming the record and the field.
"""

from __future__ import annotations

from typing import Any

from bench.latency.rederive import LatencyCheck
from bench.latency.stats import paired_bootstrap_speedup
from bench.latency.throughput import crossover, throughput
from bench.store.differences import Difference, compare_numbers

#: fields of a cell that are a function of its batches alone
RATE_FIELDS = ("sentences_per_s", "sentences_per_s_ci95", "tokens_per_s", "tokens_per_s_ci95", "batch_p50_ms",
               "batch_p90_ms", "batch_p99_ms", "sentences", "tokens", "n_batches", "timed_s")
DEFAULT_RESAMPLES = 2000


def _resamples(cells: list[dict[str, Any]]) -> int:
    """The bootstrap size the sweep used: stored with each speed-up (the rates' CIs used the same)."""
    for c in cells:
        sp = c.get("speedup")
        if isinstance(sp, dict) and isinstance(sp.get("n_resamples"), int):
            return int(sp["n_resamples"])
    return DEFAULT_RESAMPLES


def rederive_sweep(rec: dict[str, Any], where: str | None = None) -> LatencyCheck:
    """Every cell's rates and speed-up, and every crossover, of the sweep record ``rec`` against its batches."""
    where = where or f"results/sweep/{rec.get('sweep_id')}.json"
    out = LatencyCheck()
    sw = rec.get("sweep") or {}
    cells: list[dict[str, Any]] = list(sw.get("cells") or [])
    seed = int(sw.get("seed") or 0)
    resamples = _resamples(cells)
    baseline = (rec.get("spec") or {}).get("baseline")
    by_key = {(c.get("system"), c.get("batch_size"), c.get("threads")): c for c in cells}
    rates: dict[int, dict[str, dict[int, float]]] = {}
    for i, c in enumerate(cells):
        at = f"{where} sweep.cells[{i}] ({c.get('system')}, B={c.get('batch_size')}, threads={c.get('threads')})"
        try:
            fresh = throughput(c["batch_ns"], c["batch_items"], c["batch_tokens"], int(c["batch_size"]), resamples,
                               seed).to_json()
        except (KeyError, TypeError, ValueError) as exc:
            out.differences.append(Difference(at, "batch_ns", "per-batch timings", f"not derivable: {exc}"))
            continue
        for key in RATE_FIELDS:
            out.differences += compare_numbers(at, key, c.get(key), fresh[key])
        rate = fresh["sentences_per_s"]
        assert isinstance(rate, float | int)
        rates.setdefault(c["threads"], {}).setdefault(c["system"], {})[c["batch_size"]] = float(rate)
        sp = c.get("speedup")
        base = by_key.get((baseline, c.get("batch_size"), c.get("threads"))) if baseline else None
        if not isinstance(sp, dict):
            continue
        if base is None:
            out.differences.append(Difference(at, "speedup", sp.get("median"), "no baseline cell at this B"))
            continue
        try:
            s = paired_bootstrap_speedup(base["batch_ns"], c["batch_ns"], int(sp.get("n_resamples") or resamples),
                                         seed)
        except (KeyError, TypeError, ValueError) as exc:
            out.differences.append(Difference(at, "speedup", sp.get("median"), f"not computable: {exc}"))
            continue
        out.differences += compare_numbers(at, "speedup.median", sp.get("median"), s.median)
        out.differences += compare_numbers(at, "speedup.median_ci95", sp.get("median_ci95"), list(s.median_ci95))
        out.differences += compare_numbers(at, "speedup.mean", sp.get("mean"), s.mean)
        out.differences += compare_numbers(at, "speedup.mean_ci95", sp.get("mean_ci95"), list(s.mean_ci95))
    stored = sw.get("crossover") or {}
    if baseline:
        for t, per in sorted(rates.items()):
            if baseline not in per:
                continue
            for name, r in sorted(per.items()):
                if name == baseline:
                    continue
                try:
                    want: Any = crossover(per[baseline], r)
                except ValueError as exc:
                    want = f"not computable: {exc}"
                have = (stored.get(str(t)) or {}).get(name)
                if have != want:
                    out.differences.append(Difference(where, f"sweep.crossover.{t}.{name}", have, want))
    return out


__all__ = ["rederive_sweep"]
