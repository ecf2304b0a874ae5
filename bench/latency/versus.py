"""The speed-up of one system over a reference other than the record's baseline, from the same latency record.

Why: a speed column that also compares every row with an optimized AR decoder (``fairseq_transformer_ct2``)
must not divide two rounded speed-ups. Both systems were timed on the same items in the same interleaved
rounds, so the reference's per-item times over the system's give the speed-up and its paired-bootstrap CI
exactly as the meter derives a speed-up over the baseline (:func:`bench.latency.stats.paired_bootstrap_speedup`,
with the record's seed and resamples). A record written before per-item times were kept can only give the
ratio of the two stored speed-ups, which says so (``from_items`` False, no CI).

Nothing is stored: the value is computed from the record whenever it is shown, so ``bench table --check --deep``
covers it through what it already derives again (every system's ``stats`` from its items; every stored
speed-up from the items, or as the ratio of the stored means where there are none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.latency.stats import paired_bootstrap_speedup


@dataclass(frozen=True)
class Versus:
    """``reference`` mean latency ÷ ``system``'s, with a 95% CI when derived from per-item times, and (paired
    records) the verdict the meter's rules give it, with the record's own A/A control."""

    mean: float
    ci95: tuple[float, float] | None
    from_items: bool  # False: the ratio of the two stored speed-ups over the baseline (no per-item times)
    verdict: str | None = None  # VALID | INCONCLUSIVE | UNSTABLE | INVALID (paired records only)


def _items(entry: dict[str, Any]) -> dict[str, Any] | None:
    t = entry.get("timings")
    return t if isinstance(t, dict) and isinstance(t.get("latencies_ns"), list) and t["latencies_ns"] else None


def _stored_speedup(rec: dict[str, Any], name: str) -> float | None:
    """The stored speed-up over the baseline (1.0 for the baseline itself, whose entry may carry none)."""
    sp = rec["systems"][name].get("speedup")
    if isinstance(sp, dict) and isinstance(sp.get("mean"), (int, float)) and sp["mean"] > 0:
        return float(sp["mean"])
    return 1.0 if name == rec.get("baseline") else None


def speedup_over(rec: dict[str, Any], reference: str, system: str) -> Versus | str:
    """How much faster ``system`` ran than ``reference`` in the latency record ``rec``; a reason string when it
    cannot be said (one of them not timed, their items not the same, no speed-ups stored)."""
    systems = rec.get("systems") or {}
    missing = [n for n in (reference, system) if n not in systems]
    if missing:
        return f"{', '.join(missing)} not timed in this record"
    if reference == system:
        return Versus(1.0, (1.0, 1.0), True)
    if isinstance(rec.get("trials"), dict) and isinstance(rec.get("design"), dict):
        return _paired_over(rec, reference, system)
    ref, own = _items(systems[reference]), _items(systems[system])
    if ref is not None and own is not None:
        if ref.get("item_indices") != own.get("item_indices"):
            return "timed on different items"
        sp = (systems[system].get("speedup") or systems[reference].get("speedup") or {})
        seed = int((rec.get("settings") or {}).get("seed", (rec.get("spec") or {}).get("seed", 0)))
        try:
            fresh = paired_bootstrap_speedup(ref["latencies_ns"], own["latencies_ns"],
                                             int(sp.get("n_resamples") or 2000), seed)
        except (TypeError, ValueError) as exc:
            return f"not computable: {exc}"
        return Versus(fresh.mean, fresh.mean_ci95, True)
    a, b = _stored_speedup(rec, system), _stored_speedup(rec, reference)
    if a is None or b is None:
        return "no per-item times and no stored speed-up"
    return Versus(a / b, None, False)


#: (the record's content fingerprint, reference, resamples) -> (its rebuilt and judged timing, the per-system reasons).
#: Judging rebuilds every arm's bootstrap, the same for every system set against one reference: a page shows a dozen
#: cells against CT2 from one record, and each used to judge the whole record again (31 s for MIST Table 3).
_JUDGED: dict[tuple[int, str, int], tuple[Any, dict[str, list[str]]]] = {}


def _fingerprint(rec: dict[str, Any]) -> int:
    """A hash of the whole record (the trials' columns as tuples, the rest by its repr): an edited copy of a record,
    or a record edited in place, never meets another's entry (a few ms against seconds of judging)."""
    trials = rec.get("trials") or {}
    columns = tuple((k, tuple(v) if isinstance(v, list) else repr(v)) for k, v in sorted(trials.items()))
    return hash((columns, repr({k: v for k, v in rec.items() if k != "trials"})))


def _judged(rec: dict[str, Any], reference: str, resamples: int) -> tuple[Any, dict[str, list[str]]]:
    """The record's trials rebuilt against ``reference`` and judged (the A/A and known-ratio controls, the design),
    with each system's own reasons; once per record and reference in a process."""
    from bench.latency.rederive_paired import rebuild

    key = (_fingerprint(rec), reference, resamples)
    hit = _JUDGED.get(key)
    if hit is not None:
        return hit
    systems = rec["systems"]
    timed = rebuild(rec, reference, resamples)
    timed.judge(list(rec.get("design_reasons") or []),
                {n: list(e.get("design_reasons") or []) for n, e in systems.items()})
    per = {**{k: list(v) for k, v in timed.system_problems().items()},
           **{n: list(e.get("design_reasons") or []) for n, e in systems.items() if e.get("design_reasons")}}
    if len(_JUDGED) >= 16:
        _JUDGED.clear()
    _JUDGED[key] = (timed, per)
    return timed, per


def _paired_over(rec: dict[str, Any], reference: str, system: str) -> Versus | str:
    """A paired record: the speed-up over ``reference`` from the trials, judged by the meter's rules (the design's
    thresholds, the record's A/A and known-ratio controls, its design reasons and both systems' own)."""
    from bench.latency.paired import judge_all, paired_speedup

    systems = rec["systems"]
    sp: dict[str, Any] = next((e["speedup"] for e in systems.values() if isinstance(e.get("speedup"), dict)), {})
    try:
        timed, per = _judged(rec, reference, int(sp.get("n_resamples") or 2000))
        fresh = paired_speedup(timed.matrix(reference), timed.matrix(system), timed.plan.resamples, timed.plan.seed)
    except (KeyError, TypeError, ValueError) as exc:
        return f"not computable: {exc}"
    judged, _ = judge_all({system: fresh}, timed.aa, list(rec.get("design_reasons") or []) +
                          timed.design_problems(), timed.plan.thresholds, per_system=per, baseline=reference,
                          x2=timed.x2)
    out = judged[system]
    return Versus(out.mean, out.mean_ci95, True, out.verdict)


__all__ = ["Versus", "speedup_over"]
