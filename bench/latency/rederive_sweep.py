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
        if not isinstance(sp, dict) or sw.get("groups"):  # paired groups: derived by _groups below
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
    out.differences += _groups(rec, where, cells, resamples)
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


def _groups(rec: dict[str, Any], where: str, cells: list[dict[str, Any]], resamples: int) -> list[Difference]:
    """Each (threads, B) group's medians, speed-ups, A/A control and verdicts from its trials; each cell's verdict,
    the sweep's verdict and its milliseconds' label (:mod:`bench.latency.rederive_paired`)."""
    from bench.latency.rederive_paired import canary_label_reasons, overall_verdict, rederive_block

    sw = rec.get("sweep") or {}
    baseline = (rec.get("spec") or {}).get("baseline")
    out: list[Difference] = []
    verdicts: list[str] = []
    ms: list[str] = []
    broken = False
    for g in sw.get("groups") or []:
        t, b = g.get("threads"), g.get("batch_size")
        at = f"{where} sweep.groups (threads={t}, B={b})"
        mine = {c["system"]: c for c in cells if c.get("threads") == t and c.get("batch_size") == b}
        diffs, timed = rederive_block(at, g, baseline, resamples, {n: c.get("batch_ns") for n, c in mine.items()},
                                      {n: c.get("speedup") for n, c in mine.items()}, [], {})
        out += diffs
        if timed is None:
            broken = True
            continue
        problems = bool(timed.design_problems()) or bool(timed.system_problems())
        broken = broken or problems
        for name, cell in mine.items():
            want = timed.speedups[name].verdict if name in timed.speedups else ("INVALID" if problems else "VALID")
            if cell.get("verdict") != want:
                out.append(Difference(f"{at} {name}", "verdict", cell.get("verdict"), want))
            verdicts.append(want)
        verdicts += [c.verdict for c in (timed.aa, timed.x2) if c is not None]
        canary = (g.get("canary") or {})
        device = {**(canary.get("device") or {}), "host": canary.get("host")}
        c_diffs, reasons = canary_label_reasons(device, float(rec.get("canary_tolerance", 0.25)),
                                                str(sw.get("device") or "cpu"))
        out += [Difference(f"{at} {d.where}", d.field, d.stored, d.recomputed) for d in c_diffs]
        ms += reasons
    verdict = overall_verdict(verdicts, [], broken)
    if rec.get("verdict") != verdict:
        out.append(Difference(where, "verdict", rec.get("verdict"), verdict))
    gate = sw.get("quiet_gate")
    if isinstance(gate, dict):
        limit = float(gate.get("max_ungated", 0.05))
        ms += [f"{c['system']} ungated" for c in cells if isinstance(c.get("quiet_gate"), dict)
               and c["quiet_gate"].get("ungated", 0) > limit * max(1, c["quiet_gate"].get("accepted", 0)
                                                                 + c["quiet_gate"].get("ungated", 0))]
    label = "VALID" if not ms and verdict != "INVALID" else "INDICATIVE"
    if rec.get("ms_label", label) != label:
        out.append(Difference(where, "ms_label", rec.get("ms_label"), f"{label} ({'; '.join(ms) or 'no reason'})"))
    return out


__all__ = ["rederive_sweep"]
