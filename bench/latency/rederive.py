"""A latency record's aggregates and speed-ups derived again from its stored per-item timings.

Why: the speed columns print ``speedup.mean`` and its CI as facts. Here they, and every statistic of
``stats``, are recomputed from ``systems.<name>.timings`` (the nanoseconds of each timed item, written
by ``bench latency --record``) through the meter's own arithmetic (:func:`bench.latency.stats.summarize`,
:func:`bench.latency.stats.paired_bootstrap_speedup`, with the record's resamples and seed). A record
written before items were kept can only be checked for consistency: each speed-up must be the ratio of
the stored means (and medians); the result says so in its notes. A CTranslate2 system's compute type (what
the speed view's "vs CT2" column names) must agree with what the record's spec asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.latency.stats import paired_bootstrap_speedup, summarize
from bench.store.differences import Difference, compare_numbers

#: fields of ``stats`` derived from the items (all of them)
STAT_FIELDS = ("n", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "min_ms", "std_ms", "tokens_per_s", "mean_iterations")


@dataclass
class LatencyCheck:
    """What re-deriving one latency record found: differences, and what could not be derived (notes)."""

    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _timings(entry: dict[str, Any]) -> dict[str, Any] | None:
    t = entry.get("timings")
    return t if isinstance(t, dict) and isinstance(t.get("latencies_ns"), list) else None


def rederive_latency(rec: dict[str, Any], where: str | None = None) -> LatencyCheck:
    """Every system's ``stats`` and ``speedup`` of the latency record ``rec`` against its items."""
    where = where or f"results/latency/{rec.get('latency_id')}.json"
    out = LatencyCheck()
    systems: dict[str, Any] = rec.get("systems") or {}
    baseline = rec.get("baseline")
    seed = int((rec.get("settings") or {}).get("seed", (rec.get("spec") or {}).get("seed", 0)))
    base = systems.get(baseline) if baseline else None
    legacy = [name for name, entry in systems.items() if _timings(entry) is None]
    if legacy:
        out.notes.append(f"{where}: no per-item timings for {', '.join(sorted(legacy))} (recorded before "
                         "`bench latency --record` kept them); speed-ups checked as ratios of the stored "
                         "means and medians only")
    if rec.get("schema", 1) >= 2:
        out.differences += _paired(rec, where, seed)
    for name, entry in sorted(systems.items()):
        at = f"{where} systems.{name}"
        out.differences += _compute_type(at, rec, name, entry)
        items = _timings(entry)
        stats = entry.get("stats") or {}
        if items is not None:
            out.differences += _stats(at, stats, items)
        sp = entry.get("speedup")
        if not isinstance(sp, dict) or base is None or rec.get("schema", 1) >= 2:  # schema 2: _paired derived it
            continue
        base_items = _timings(base)
        if items is not None and base_items is not None:
            try:
                fresh = paired_bootstrap_speedup(base_items["latencies_ns"], items["latencies_ns"],
                                                 int(sp.get("n_resamples") or 2000), seed)
            except (TypeError, ValueError) as exc:
                out.differences.append(Difference(at, "speedup", sp.get("mean"), f"not computable: {exc}"))
                continue
            out.differences += compare_numbers(at, "speedup.mean", sp.get("mean"), fresh.mean)
            out.differences += compare_numbers(at, "speedup.median", sp.get("median"), fresh.median)
            out.differences += compare_numbers(at, "speedup.mean_ci95", sp.get("mean_ci95"), list(fresh.mean_ci95))
            out.differences += compare_numbers(at, "speedup.median_ci95", sp.get("median_ci95"),
                                               list(fresh.median_ci95))
            continue
        bstats = base.get("stats") or {}
        out.differences += compare_numbers(at, "speedup.mean (baseline mean_ms ÷ mean_ms)", sp.get("mean"),
                                           _ratio(bstats.get("mean_ms"), stats.get("mean_ms")))
        if "median" in sp:
            out.differences += compare_numbers(at, "speedup.median (baseline p50_ms ÷ p50_ms)", sp.get("median"),
                                               _ratio(bstats.get("p50_ms"), stats.get("p50_ms")))
    return out


def _paired(rec: dict[str, Any], where: str, seed: int) -> list[Difference]:
    """A paired (schema 2) record: medians, speed-ups, A/A control and verdicts from its trials, the canaries'
    drift and the milliseconds' label from their samples and the trials (:mod:`bench.latency.rederive_paired`)."""
    from bench.latency.rederive_paired import canary_label_reasons, overall_verdict, rederive_block

    systems: dict[str, Any] = rec.get("systems") or {}
    baseline = rec.get("baseline")
    settings = rec.get("settings") or {}
    medians = {n: (e.get("timings") or {}).get("latencies_ns") for n, e in systems.items()}
    speedups = {n: e.get("speedup") for n, e in systems.items()}
    resamples = next((int(sp["n_resamples"]) for sp in speedups.values() if isinstance(sp, dict)
                      and isinstance(sp.get("n_resamples"), int)), 2000)
    diffs, timed = rederive_block(where, rec, baseline, resamples, medians, speedups,
                                  list(rec.get("design_reasons") or []),
                                  {n: list(e.get("design_reasons") or []) for n, e in systems.items()})
    if timed is None:
        return diffs
    for name, entry in systems.items():
        if entry.get("verdict") != (timed.speedups[name].verdict if name in timed.speedups else
                                    ("INVALID" if entry.get("design_reasons") or rec.get("design_reasons")
                                     else "VALID")):
            fresh = timed.speedups[name].verdict if name in timed.speedups else "VALID/INVALID by design"
            diffs.append(Difference(f"{where} systems.{name}", "verdict", entry.get("verdict"), fresh))
    broken = bool(rec.get("design_reasons")) or any(e.get("design_reasons") for e in systems.values()) \
        or bool(timed.design_problems()) or bool(timed.system_problems())
    verdict = overall_verdict([s.verdict for s in timed.speedups.values()],
                              [c.verdict for c in (timed.aa, timed.x2) if c is not None], broken)
    if rec.get("verdict") != verdict:
        diffs.append(Difference(where, "verdict", rec.get("verdict"), verdict))
    canary_diffs, ms = canary_label_reasons(rec.get("canary"), float(settings.get("canary_tolerance", 0.25)),
                                            str(settings.get("device") or "cpu"))
    diffs += [Difference(f"{where} {d.where}", d.field, d.stored, d.recomputed) for d in canary_diffs]
    floor = float(settings.get("min_duration_s") or 0.0)
    probes = set((rec.get("design") or {}).get("probes") or ())
    ms += [f"{n} timed < min_duration_s" for n in systems if n not in probes and timed.timed_s(n) < floor]
    gate = rec.get("quiet_gate")
    if isinstance(gate, dict):
        limit = float(gate.get("max_ungated", 0.05))
        for name, c in (gate.get("systems") or {}).items():
            total = (c.get("accepted") or 0) + (c.get("ungated") or 0) if isinstance(c, dict) else 0
            if name not in probes and total and c.get("ungated", 0) > limit * total:
                ms.append(f"{name}: ungated")
    label = "VALID" if not ms and verdict != "INVALID" else "INDICATIVE"
    if rec.get("ms_label") != label:
        diffs.append(Difference(where, "ms_label", rec.get("ms_label"), f"{label} ({'; '.join(ms) or 'no reason'})"))
    return diffs


#: CTranslate2's "default" compute type by device, as ``systems/fairseq_ct2/presets.py`` resolves it
CT2_DEFAULT = {"cpu": "int8", "cuda": "float16"}


def _compute_type(at: str, rec: dict[str, Any], name: str, entry: dict[str, Any]) -> list[Difference]:
    """A CTranslate2 system's compute type (the "vs CT2" column's header) against what the record asked for: the
    override in ``spec``, and the device's default when none was set. No timing can derive it; it must agree."""
    config = (entry.get("system") or {}).get("config") or {}
    ct2 = config.get("ctranslate2")
    if not isinstance(ct2, dict):
        return []
    out: list[Difference] = []
    asked = (((rec.get("spec") or {}).get("overrides") or {}).get(name) or {}).get("compute_type")
    if asked is not None and ct2.get("compute_type") != asked:
        out.append(Difference(at, "system.config.ctranslate2.compute_type", ct2.get("compute_type"),
                              f"{asked} (spec.overrides)"))
    setting = ct2.get("compute_type") if asked is None else asked
    device = str((rec.get("settings") or {}).get("device") or "").partition(":")[0]
    expected = CT2_DEFAULT.get(device) if setting in (None, "default") else setting
    if expected is not None and ct2.get("compute_type_used") != expected:
        out.append(Difference(at, "system.config.ctranslate2.compute_type_used", ct2.get("compute_type_used"),
                              f"{expected} ({setting or 'default'} on {device})"))
    return out


def _ratio(a: Any, b: Any) -> float | str:
    try:
        return float(a) / float(b)
    except (TypeError, ValueError, ZeroDivisionError):
        return f"no ratio of {a!r} and {b!r}"


def _stats(at: str, stats: dict[str, Any], items: dict[str, Any]) -> list[Difference]:
    try:
        fresh = summarize(items["latencies_ns"], items.get("tokens") or [], items.get("iterations")).to_json()
    except (TypeError, ValueError) as exc:
        return [Difference(at, "timings", "per-item timings", f"not summarizable: {exc}")]
    out: list[Difference] = []
    for key in STAT_FIELDS:
        out += compare_numbers(at, f"stats.{key}", stats.get(key), fresh[key])
    return out


def rederive_run_latency(rec: dict[str, Any]) -> LatencyCheck:
    """A run record's own ``latency`` (``bench run --latency-n``): its stats and speed-up from its items."""
    out = LatencyCheck()
    lat = rec.get("latency")
    if not isinstance(lat, dict):
        return out
    at = f"{rec.get('run_id')} latency"
    items = _timings(lat)
    if items is None:
        out.notes.append(f"{at}: no per-item timings (recorded before runs kept them); not derived again")
        return out
    out.differences += _stats(at, lat.get("stats") or {}, items)
    base = items.get("baseline_latencies_ns")
    if lat.get("speedup_mean") is None or not isinstance(base, list):
        return out
    try:
        fresh = paired_bootstrap_speedup(base, items["latencies_ns"], int(items.get("n_resamples") or 2000),
                                         int(items.get("seed") or 0))
    except (TypeError, ValueError) as exc:
        out.differences.append(Difference(at, "speedup_mean", lat.get("speedup_mean"), f"not computable: {exc}"))
        return out
    out.differences += compare_numbers(at, "speedup_mean", lat.get("speedup_mean"), fresh.mean)
    out.differences += compare_numbers(at, "speedup_median", lat.get("speedup_median"), fresh.median)
    out.differences += compare_numbers(at, "speedup_ci95", lat.get("speedup_ci95"), list(fresh.mean_ci95))
    out.differences += compare_numbers(at, "speedup_median_ci95", lat.get("speedup_median_ci95"),
                                       list(fresh.median_ci95))
    return out
