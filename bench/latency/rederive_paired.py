"""A paired timing's numbers and verdicts derived again from its raw trials, for ``bench table --check --deep``.

Why: a record's speed-ups, their CIs, the per-round ratios, the A/A control and every verdict are shown as facts.
Here the per-unit medians are recomputed from every stored timing, and from them the speed-ups and the A/A control
through the meter's own arithmetic and rules (:meth:`bench.latency.timing.TimedUnits.judge`, with the record's
thresholds, seed and resamples and the design reasons it recorded); the canaries' per-round medians and drift come
from their raw samples, and the milliseconds' label from them and the trials. An edited timing, ratio, verdict or
label then fails the deep check, naming the record and the field. Work counts cannot be re-run here (that needs the
models); their output tokens must be the trials' and their passes the record's per-unit passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.latency.canary import CanaryResult, canary_drift, drift_reasons, middle
from bench.latency.paired import Thresholds, worst
from bench.latency.timing import TimedUnits, TimingPlan
from bench.latency.trials import Arm, TrialLog
from bench.store.differences import Difference, compare_numbers

#: the fields of a judged speed-up compared with the record's
SPEEDUP_NUMBERS = ("mean", "median", "mean_ci95", "median_ci95", "geomean", "per_round")


def rebuild(block: Mapping[str, Any], baseline: str | None, resamples: int) -> TimedUnits:
    """The :class:`~bench.latency.timing.TimedUnits` a block's design and trials describe (no models, no outputs:
    what judging needs). Raises ValueError when the trials are not a trial log."""
    design = block["design"]
    units = int(design["units"])
    items = design.get("unit_items") or [[u] for u in range(units)]
    plan = TimingPlan([list(u) for u in items], rounds=int(design.get("min_rounds") or 1),
                      max_rounds=max(int(design.get("max_rounds") or 1), int(design.get("min_rounds") or 1)),
                      seed=int(design["seed"]), design=str(design.get("kind") or "paired"),
                      thresholds=Thresholds.from_json(design.get("thresholds")), resamples=resamples)
    log = TrialLog.from_json(block["trials"])
    arms = [Arm(a, a.split(":", 1)[1] if a.startswith(("aa:", "x2:")) else a) for a in design["arms"]]
    aa, x2 = block.get("aa"), block.get("x2")
    return TimedUnits(plan, arms, log, list(block.get("rounds") or []),
                      {k: list(v) for k, v in (block.get("reference_hashes") or {}).items()}, {}, {}, {}, {},
                      aa.get("system") if isinstance(aa, Mapping) else None, baseline,
                      frozenset(design.get("probes") or ()), {},
                      x2_system=x2.get("system") if isinstance(x2, Mapping) else None)


def compare_speedup(at: str, stored: Any, fresh: Any) -> list[Difference]:
    """A stored speed-up (its numbers, verdict and reasons) against the one derived again."""
    if not isinstance(stored, Mapping):
        return [Difference(at, "speedup", stored, "a speed-up derived from the trials")]
    out: list[Difference] = []
    js = fresh.to_json()
    for key in SPEEDUP_NUMBERS:
        out += compare_numbers(at, f"speedup.{key}", stored.get(key), js[key])
    for key in ("verdict", "reasons"):
        if stored.get(key) != js[key]:
            out.append(Difference(at, f"speedup.{key}", stored.get(key), js[key]))
    return out


def rederive_block(where: str, block: Mapping[str, Any], baseline: str | None, resamples: int,
                   stored_medians: Mapping[str, Any], stored_speedups: Mapping[str, Any],
                   design_reasons: Sequence[str], system_reasons: Mapping[str, Sequence[str]],
                   ) -> tuple[list[Difference], TimedUnits | None]:
    """Medians, speed-ups, A/A control and their verdicts of one paired block, against what the record stores.
    ``stored_medians``: system -> per-unit medians as stored; ``stored_speedups``: system -> its speed-up (None for
    the baseline and probes). Returns the differences and the rebuilt timing (None when it cannot be rebuilt)."""
    try:
        timed = rebuild(block, baseline, resamples)
    except (KeyError, TypeError, ValueError) as exc:
        return [Difference(where, "trials", "a paired timing", f"not derivable: {exc}")], None
    out: list[Difference] = []
    for name, medians in stored_medians.items():
        out += compare_numbers(where, f"{name}: per-unit medians over rounds", medians, timed.medians(name))
    timed.judge(design_reasons, system_reasons)
    for name, fresh in timed.speedups.items():
        out += compare_speedup(f"{where} {name}", stored_speedups.get(name), fresh)
    for name, stored in stored_speedups.items():
        if stored is not None and name not in timed.speedups:
            out.append(Difference(f"{where} {name}", "speedup", "stored", "none derivable (baseline or probe)"))
    controls: list[tuple[str, str, Any]] = [("aa", "A/A control", timed.aa), ("x2", "known-ratio control", timed.x2)]
    for key, label, control in controls:
        stored = block.get(key)
        if control is not None:
            out += compare_speedup(f"{where} {label}", stored, control)
        elif stored is not None:
            out.append(Difference(where, key, "stored", f"no {label} arm in the design"))
    work = block.get("work") or {}
    for name, w in work.items():
        if isinstance(w, Mapping) and name in timed.reference:
            first = [t for r, a, t in zip(timed.log.round, timed.log.arm, timed.log.tokens, strict=True)
                     if r == 0 and a == name]
            if first and w.get("output_tokens") != sum(first):
                out.append(Difference(where, f"work.{name}.output_tokens", w.get("output_tokens"), sum(first)))
    return out, timed


def canary_label_reasons(canary: Any, tolerance: float, device: str) -> tuple[list[Difference], list[str]]:
    """The canaries' per-round medians and drift from their raw samples, and the reasons they label the
    milliseconds INDICATIVE (one per judged canary past ``tolerance``)."""
    from bench.latency.canary import HOST_CAUSE

    out: list[Difference] = []
    if not isinstance(canary, Mapping):
        return out, []
    rounds: dict[str, list[CanaryResult]] = {}
    workloads: dict[str, str] = {}
    for kind, c in (("device", canary), ("host", canary.get("host"))):
        if not isinstance(c, Mapping):
            continue
        samples = c.get("samples_ms_per_round")
        if not isinstance(samples, list):
            continue
        try:
            results = [CanaryResult(i, middle(s), tuple(s)) for i, s in enumerate(samples)]
        except (TypeError, IndexError) as exc:
            out.append(Difference(f"canary ({kind})", "samples_ms_per_round", "samples", f"not derivable: {exc}"))
            continue
        out += compare_numbers(f"canary ({kind})", "median_ms_per_round", c.get("median_ms_per_round"),
                               [r.median_ms for r in results])
        out += compare_numbers(f"canary ({kind})", "drift", c.get("drift"), canary_drift(results))
        if c.get("judged", kind == "device"):
            rounds[kind] = results
            workloads[kind] = str(c.get("workload") or kind)
    cause = {"device": "the GPU was contended or its clocks moved" if device == "cuda" else
             "the machine was contended", "host": HOST_CAUSE}
    return out, drift_reasons(rounds, workloads, tolerance, cause=cause)


def overall_verdict(speed_verdicts: Sequence[str], control_verdicts: Sequence[str | None], broken: bool) -> str:
    """A record's verdict: the worst of its speed-ups' and its controls' (A/A, known ratio); INVALID when the
    design broke."""
    return worst([*speed_verdicts, *(v for v in control_verdicts if v), *(["INVALID"] if broken else [])])


__all__ = ["canary_label_reasons", "compare_speedup", "overall_verdict", "rebuild", "rederive_block"]
