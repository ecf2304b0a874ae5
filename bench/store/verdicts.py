"""A latency or sweep record's verdicts, re-derived at load from the numbers the record stores beside them (#57).

Why: a digest is a checksum, not a signature. A forger who flipped a record's verdict (UNSTABLE to VALID, with
``valid`` set to match) and resealed it with the public sealing function had the flipped word shown by
``bench table`` until ``--deep`` derived the verdicts again from the raw trials. Most of a verdict needs no
trials: a speed-up's verdict is the worst of rules on numbers stored beside it (its CI's width and its per-round
spread against the thresholds the record states, the A/A and known-ratio controls' reads, the design's and each
system's reasons); the record's verdict is the worst of its speed-ups' and controls'; ``valid`` and
``invalid_reasons``, ``ms_label`` and ``ms_reasons`` follow from it; and a judged canary's drift is a function of
its stored per-round readings. Those rules are :mod:`bench.latency.paired`'s and :mod:`bench.latency.canary`'s:
the store sits below the meter, so they are repeated here on the stored JSON, and a test keeps the two equal.

A system whose timed outputs differ from its untimed reference outputs (the trials' ``out_hash`` against the
stored ``reference_hashes``) is INVALID and a reason must say so: that too is read off the stored evidence.

What stays the deep check's (``bench table --check --deep``): whether the stored CIs, per-round ratios, control
reads and medians follow from the trials' timings (a bootstrap, re-run), and whether the stored hashes are the
outputs the systems wrote (the reference outputs are not kept).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.api.numbers import finite
from bench.store.integrity import Problem
from bench.store.paired import VERDICTS

#: a stored drift against the drift of its stored readings (floats written by json round-trip exactly)
DRIFT_RTOL = 1e-9
#: the canary tolerance of a record that does not state one (bench latency's default)
CANARY_TOLERANCE = 0.25


def worst(verdicts: Sequence[str]) -> str:
    """The worst of ``verdicts`` (VALID when there are none), as :func:`bench.latency.paired.worst`."""
    return max(verdicts, key=VERDICTS.index, default="VALID")


@dataclass(frozen=True)
class Rules:
    """The thresholds a record states (:class:`bench.latency.paired.Thresholds`, read as its ``from_json``)."""

    aa_max: float = 0.03
    ci_ratio: float = 1.10
    round_spread: float = 1.15
    x2_band: float | None = 0.03

    @classmethod
    def of(cls, data: Any) -> Rules:
        if not isinstance(data, Mapping):
            return cls()
        kept = {k: float(data[k]) for k in ("aa_max", "ci_ratio", "round_spread") if k in data}
        return cls(**kept, x2_band=float(data["x2_band"]) if "x2_band" in data else None)


#: the harness's rules: :class:`bench.latency.paired.Thresholds`' defaults (a test keeps them equal); no command
#: states others
HARNESS = Rules()
#: per threshold, the least value that is still a rule (a ratio below 1 or a negative band no speed-up meets)
_LEAST = {"aa_max": 0.0, "ci_ratio": 1.0, "round_spread": 1.0, "x2_band": 0.0}


def rules_problems(thresholds: Any, tolerance: Any, at: str, tolerance_at: str) -> Iterator[Problem]:
    """The thresholds and the canary tolerance a record states are the harness's, or stricter: each verdict here is
    derived against them, so a forger who loosened them (``ci_ratio`` 1e9, a tolerance of 10) and resealed had every
    verdict derive VALID. Absent ones are the harness's (``x2_band`` absent: the older known-ratio rule)."""
    if thresholds is not None:
        if not isinstance(thresholds, Mapping):
            yield Problem(at, "must be an object of thresholds")
            return
        for key, least in _LEAST.items():
            most = getattr(HARNESS, key)
            value = thresholds.get(key)
            if key in thresholds and not (finite(value) and least <= value <= most):
                yield Problem(f"{at}.{key}", f"is {value!r}, but a record is judged by the harness's threshold {most} "
                                             f"or a stricter one (from {least}): a loosened rule would make a verdict "
                                             "VALID")
    if tolerance is not None and not (finite(tolerance) and 0 < tolerance <= CANARY_TOLERANCE):
        yield Problem(tolerance_at, f"is {tolerance!r}, but the canary is judged by the harness's tolerance "
                                    f"{CANARY_TOLERANCE} or a stricter one (above 0): a loosened tolerance would hide "
                                    "a drift")


def _ci(sp: Mapping[str, Any]) -> tuple[float, float]:
    lo, hi = sp["mean_ci95"]
    return float(lo), float(hi)


def own_verdicts(sp: Mapping[str, Any], th: Rules) -> list[str]:
    """What a speed-up's own numbers give (``own_problems``): a CI wider than ``ci_ratio``, a per-round spread
    past ``round_spread``."""
    lo, hi = _ci(sp)
    per = sp.get("per_round") or []
    out = []
    if (hi / lo if lo > 0 else math.inf) > th.ci_ratio:
        out.append("INCONCLUSIVE")
    if (max(per) / min(per) if per else 1.0) > th.round_spread:
        out.append("UNSTABLE")
    return out


def aa_verdicts(aa: Mapping[str, Any] | None, th: Rules) -> list[str]:
    """What the A/A control gives every speed-up (``aa_problems``); no control makes nothing VALID."""
    if aa is None:
        return ["INCONCLUSIVE"]
    lo, hi = _ci(aa)
    out = [] if lo <= 1.0 <= hi else ["UNSTABLE"]
    return out + (["INCONCLUSIVE"] if abs(float(aa["mean"]) - 1.0) > th.aa_max else [])


def x2_verdicts(x2: Mapping[str, Any] | None, th: Rules) -> list[str]:
    """What the known-ratio control gives every speed-up (``x2_problems``, by the record's rule)."""
    if x2 is None:
        return []
    lo, hi = _ci(x2)
    mean = float(x2["mean"])
    if th.x2_band is not None:
        low, high = 2.0 * (1 - th.x2_band), 2.0 * (1 + th.x2_band)
        if not low <= mean <= high:
            return ["UNSTABLE"]
        return [] if low <= lo and hi <= high else ["INCONCLUSIVE"]
    out = [] if lo <= 2.0 <= hi else ["UNSTABLE"]
    return out + (["INCONCLUSIVE"] if abs(mean / 2.0 - 1.0) > th.aa_max else [])


def _control(block: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    c = block.get(key)
    return c if isinstance(c, Mapping) else None


def _judged(sp: Mapping[str, Any]) -> bool:
    """A paired speed-up (it carries its own verdict), not an older record's plain ratio."""
    return isinstance(sp, Mapping) and "verdict" in sp


def _flip(field: str, stored: Any, want: str, basis: str) -> Problem:
    return Problem(field, f"is {stored!r}, but {basis} give {want!r}")


def _controls_checked(block: Mapping[str, Any], th: Rules, broken: bool, at: str) -> Iterator[Problem]:
    """The A/A and known-ratio controls' own verdicts (``judge_all``, ``judge_x2``)."""
    aa, x2 = _control(block, "aa"), _control(block, "x2")
    if aa is not None:
        spread = ["UNSTABLE"] if "UNSTABLE" in own_verdicts(aa, th) else []
        want = worst((["INVALID"] if broken else []) + aa_verdicts(aa, th) + spread)
        if aa.get("verdict") != want:
            yield _flip(f"{at}aa.verdict", aa.get("verdict"), want, "its mean and CI against the stated thresholds")
    if x2 is not None:
        want = worst((["INVALID"] if broken else []) + x2_verdicts(x2, th))
        if x2.get("verdict") != want:
            yield _flip(f"{at}x2.verdict", x2.get("verdict"), want, "its mean and CI against the stated thresholds")


def mismatched(block: Mapping[str, Any]) -> dict[str, int]:
    """Per system, the first unit where a timed output (its arm's, or its A/A or 2x arm's) is not its untimed
    reference output (``TimedUnits.system_problems``: the trials' ``out_hash`` against ``reference_hashes``). Such a
    system's timings are of other work: it is INVALID, and the meter says why."""
    trials, refs = block.get("trials"), block.get("reference_hashes")
    if not (isinstance(trials, Mapping) and isinstance(refs, Mapping)):
        return {}
    out: dict[str, int] = {}
    for arm, unit, h in zip(trials.get("arm") or [], trials.get("unit") or [], trials.get("out_hash") or [],
                            strict=False):
        system = arm.split(":", 1)[1] if isinstance(arm, str) and arm.startswith(("aa:", "x2:")) else arm
        ref = refs.get(system)
        if isinstance(ref, list) and isinstance(unit, int) and 0 <= unit < len(ref) and h != ref[unit]:
            out[system] = min(unit, out.get(system, unit))
    return out


def _unlike(system: str, unit: int) -> str:
    return (f"its timed outputs differ from its untimed reference outputs (unit {unit}: the trials' out_hash against "
            f"reference_hashes), so {system} is INVALID and a reason must say so")


def _reasons(value: Any) -> list[str] | None:
    return value if isinstance(value, list) and all(isinstance(r, str) for r in value) else None


def _summary_words(rec: Mapping[str, Any], verdict: str, at: str = "") -> Iterator[Problem]:
    """``valid``, ``invalid_reasons``, ``ms_label`` follow from ``verdict`` (``LatencyReport.valid``, ``ms_label``)."""
    reasons, ms = _reasons(rec.get("invalid_reasons")), _reasons(rec.get("ms_reasons", []))
    if reasons is None or ms is None:
        yield Problem(f"{at}invalid_reasons", "and 'ms_reasons' must be lists of strings")
        return
    if rec.get("verdict") != verdict:
        yield _flip(f"{at}verdict", rec.get("verdict"), verdict, "the verdicts stored beside it (the worst of its "
                                                                 "speed-ups' and controls', INVALID when the design "
                                                                 "or a system broke)")
    elif (verdict == "VALID") == bool(reasons):
        yield Problem(f"{at}verdict", f"is {verdict!r} with {len(reasons)} invalid reason(s): a VALID record has "
                                      "none, any other at least one")
    if "ms_label" in rec:
        label = "VALID" if not ms and verdict != "INVALID" else "INDICATIVE"
        if rec.get("ms_label") != label:
            yield _flip(f"{at}ms_label", rec.get("ms_label"), label, f"its {len(ms)} milliseconds reason(s) and "
                                                                     f"its verdict {verdict!r}")


def canary_problems(canary: Any, tolerance: float, ms_reasons: Sequence[str], at: str, *,
                    counts: bool = True) -> Iterator[Problem]:
    """Each canary's stored drift is the drift of its stored per-round readings (``canary_drift``: (q90 - min) /
    min over the rounds' medians, each the upper middle of its samples), and a judged one past ``tolerance`` left
    a reason (``counts``: the reasons given are this canary's block's)."""
    if not isinstance(canary, Mapping):
        return
    for kind, c in (("device", canary), ("host", canary.get("host"))):
        if not isinstance(c, Mapping):
            continue
        where = f"{at}canary" + (".host" if kind == "host" else "")
        medians = c.get("median_ms_per_round")
        samples = c.get("samples_ms_per_round")
        if isinstance(samples, list) and all(isinstance(s, list) and s and all(finite(x) for x in s)
                                             for s in samples):
            mids = [sorted(s)[len(s) // 2] for s in samples]
            if medians != mids:
                yield Problem(f"{where}.median_ms_per_round", "is not the median of each round's stored samples")
                continue
        if not (isinstance(medians, list) and all(finite(x) for x in medians)):
            continue
        drift = _drift([float(x) for x in medians])
        stored = c.get("drift")
        if finite(stored) and not math.isclose(stored, drift, rel_tol=DRIFT_RTOL, abs_tol=1e-12):
            yield Problem(f"{where}.drift", f"is {stored!r}, but its stored per-round readings drift {drift!r}")
        elif c.get("judged", kind == "device") and drift > tolerance and counts and not ms_reasons:
            yield Problem(f"{where}.drift", f"is {drift:.0%}, past the tolerance {tolerance:.0%}, but no reason "
                                            "says so: the milliseconds cannot be VALID")


def _drift(medians: list[float]) -> float:
    """``bench.latency.canary.canary_drift`` of per-round medians: (q90 - min) / min, numpy's linear q90."""
    if len(medians) < 2:
        return 0.0
    ordered = sorted(medians)
    low = ordered[0]
    if low <= 0:
        return 0.0 if ordered[-1] <= 0 else math.inf
    pos = 0.9 * (len(ordered) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(ordered) - 1)
    q90 = ordered[i] + (ordered[j] - ordered[i]) * (pos - i)
    return (q90 - low) / low


# ---------------------------------------------------------------- latency records

def latency_verdict_problems(rec: Mapping[str, Any]) -> list[Problem]:
    """Every verdict word of a (type-checked) latency record against the numbers stored beside it."""
    return list(_latency(rec))


def _latency(rec: Mapping[str, Any]) -> Iterator[Problem]:
    systems: Mapping[str, Any] = rec["systems"]
    given = rec.get("settings")
    settings: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    stated = [*rules_problems((rec.get("design") or {}).get("thresholds"), settings.get("canary_tolerance"),
                              "design.thresholds", "settings.canary_tolerance"),
              *rules_problems(settings.get("thresholds"), None, "settings.thresholds", "")]
    if stated:
        yield stated[0]
        return
    tolerance = _tolerance(settings.get("canary_tolerance"))
    if rec.get("schema", 1) < 2:  # the block design: no per-speed-up verdicts; valid is the verdict
        if (rec.get("valid") is True) == bool(rec.get("invalid_reasons")):
            yield Problem("valid", f"is {rec.get('valid')!r} with {len(rec.get('invalid_reasons') or [])} invalid "
                                   "reason(s): a valid record has none, an invalid one at least one")
        canary = rec.get("canary")
        drift = _drift(canary["median_ms_per_round"]) if isinstance(canary, Mapping) and isinstance(
            canary.get("median_ms_per_round"), list) and all(finite(x) for x in canary["median_ms_per_round"]) else 0.0
        yield from canary_problems(canary, tolerance, [], "", counts=False)
        if drift > tolerance and rec.get("valid") is True:
            yield Problem("valid", f"is true, but the canary drifted {drift:.0%}, past the tolerance {tolerance:.0%}")
        for name, entry in systems.items():
            yield from _entry_words(entry, f"systems.{name}.")
        return
    th = Rules.of((rec.get("design") or {}).get("thresholds"))
    design = _reasons(rec.get("design_reasons"))
    per = {n: _reasons(e.get("design_reasons", [])) for n, e in systems.items()}
    if design is None or any(r is None for r in per.values()):
        yield Problem("design_reasons", "must be a list of strings, at the top and in each system")
        return
    base = rec.get("baseline")
    for system, unit in sorted(mismatched(rec).items()):
        if system in per and not per[system]:
            yield Problem(f"systems.{system}.design_reasons", f"is empty, but {_unlike(system, unit)}")
            return
    control = aa_verdicts(_control(rec, "aa"), th) + x2_verdicts(_control(rec, "x2"), th)
    verdicts = ["INVALID"] if design or any(per.values()) else []
    # a control whose system has reasons of its own (outputs unlike its recorded run's, non-deterministic) times other
    # work, so the meter (TimedUnits.judge) counts it among the design's reasons: every verdict is then INVALID
    owners = [str(c.get("system")) for c in (_control(rec, "aa"), _control(rec, "x2")) if c is not None]
    design_broken = bool(design) or any(per.get(o) for o in owners)
    for name, entry in systems.items():
        sp = entry.get("speedup")
        at = f"systems.{name}."
        if _judged(sp):
            broken = design_broken or bool(per.get(str(base))) or (name != base and bool(per[name]))
            want = worst((["INVALID"] if broken else []) + control + own_verdicts(sp, th))
            if sp["verdict"] != want:
                yield _flip(f"{at}speedup.verdict", sp["verdict"], want, "its CI and per-round ratios, the A/A and "
                                                                         "known-ratio controls and the design's "
                                                                         "reasons against the stated thresholds")
            if entry.get("verdict") != sp["verdict"]:
                yield _flip(f"{at}verdict", entry.get("verdict"), sp["verdict"], "its speed-up's verdict")
            verdicts.append(sp["verdict"])
        elif (design or per[name]) and entry.get("verdict") != "INVALID":
            yield _flip(f"{at}verdict", entry.get("verdict"), "INVALID", "the design's or its own reasons")
        yield from _entry_words(entry, at)
    verdicts += [c["verdict"] for c in (_control(rec, "aa"), _control(rec, "x2")) if c is not None]
    yield from _controls_checked(rec, th, design_broken, "")
    yield from _summary_words(rec, worst(verdicts))
    yield from canary_problems(rec.get("canary"), tolerance, _reasons(rec.get("ms_reasons", [])) or [], "")


def _entry_words(entry: Mapping[str, Any], at: str) -> Iterator[Problem]:
    """A system's ``valid``, ``verdict`` and ``invalid_reasons`` agree (``LatencyReport.record``)."""
    reasons = _reasons(entry.get("invalid_reasons", []))
    if reasons is None or not isinstance(entry.get("valid", True), bool):
        yield Problem(f"{at}invalid_reasons", "must be a list of strings, and 'valid' true or false")
        return
    valid = entry.get("valid", not reasons)
    verdict = entry.get("verdict", "VALID" if valid else "INVALID")
    if valid == bool(reasons) or valid != (verdict == "VALID"):
        yield Problem(f"{at}valid", f"is {valid!r} with verdict {verdict!r} and {len(reasons)} invalid reason(s): "
                                    "a valid system is VALID with none")


def _tolerance(value: Any) -> float:
    return float(value) if finite(value) and value > 0 else CANARY_TOLERANCE


# ---------------------------------------------------------------- sweep records

def sweep_verdict_problems(rec: Mapping[str, Any]) -> list[Problem]:
    """Every verdict word of a (type-checked) sweep record against the numbers stored beside it."""
    return list(_sweep(rec))


def _sweep(rec: Mapping[str, Any]) -> Iterator[Problem]:
    sw: Mapping[str, Any] = rec["sweep"]
    for key in ("verdict", "valid", "invalid_reasons", "ms_label", "ms_reasons"):
        if key in sw and sw[key] != rec.get(key):
            yield Problem(f"sweep.{key}", f"is {sw[key]!r}, but the record's '{key}' is {rec.get(key)!r}: the "
                                          "sweep writes one value to both")
            return
    invalid, ms = _reasons(rec.get("invalid_reasons")) or [], _reasons(rec.get("ms_reasons", [])) or []
    baseline = (rec.get("spec") or {}).get("baseline")
    for i, group in enumerate(sw["groups"]):
        tolerance_given = rec.get("canary_tolerance") if i == 0 else None
        for problem in rules_problems(group["design"].get("thresholds"), tolerance_given,
                                      f"sweep.groups[{i}].design.thresholds", "canary_tolerance"):
            yield problem
            return
    tolerance = _tolerance(rec.get("canary_tolerance"))
    verdicts: list[str] = []
    for i, group in enumerate(sw["groups"]):
        t, b = group.get("threads"), group.get("batch_size")
        where, at = f"threads={t} B={b}: ", f"sweep.groups[{i}]."
        th = Rules.of(group["design"].get("thresholds"))
        broken = bool(group["design"].get("problems"))
        control = aa_verdicts(_control(group, "aa"), th) + x2_verdicts(_control(group, "x2"), th)
        said = any(r.startswith(where) for r in invalid)
        unlike = mismatched(group)
        for system, unit in sorted(unlike.items()):
            if not any(r.startswith(f"{where}{system}: ") for r in invalid):
                yield Problem(f"{at}trials", f"show {_unlike(system, unit)} (an invalid reason starting "
                                             f"'{where}{system}: ')")
                return
        for j, cell in enumerate(sw["cells"]):
            if cell.get("threads") != t or cell.get("batch_size") != b:
                continue
            sp, here = cell.get("speedup"), f"sweep.cells[{j}].verdict"
            if _judged(sp):
                other_work = cell.get("system") in unlike or baseline in unlike
                floor = worst((["INVALID"] if broken or other_work else []) + control + own_verdicts(sp, th))
                if sp["verdict"] != floor and not (sp["verdict"] == "INVALID" and said):
                    yield _flip(f"sweep.cells[{j}].speedup.verdict", sp["verdict"], floor,
                                "its CI and per-round ratios, its group's A/A and known-ratio controls and design "
                                "problems against the stated thresholds")
            elif (broken or cell.get("system") in unlike) and cell.get("verdict") != "INVALID":
                yield _flip(here, cell.get("verdict"), "INVALID", "its group's design problems or its outputs")
            elif cell.get("verdict") == "INVALID" and not said:
                yield Problem(here, f"is 'INVALID', but no invalid reason names threads={t} B={b}")
            verdicts.append(cell.get("verdict"))
        verdicts += [c["verdict"] for c in (_control(group, "aa"), _control(group, "x2")) if c is not None]
        verdicts += ["INVALID"] if broken else []
        yield from _controls_checked(group, th, broken, at)
        canary = group.get("canary")
        if isinstance(canary, Mapping):
            both = {**(canary.get("device") or {}), "host": canary.get("host")}
            yield from canary_problems(both, tolerance, [r for r in ms if r.startswith(where)], f"{at}")
    yield from _summary_words(rec, worst([v for v in verdicts if v in VERDICTS]))


__all__ = ["HARNESS", "Rules", "aa_verdicts", "canary_problems", "latency_verdict_problems", "own_verdicts",
           "rules_problems", "sweep_verdict_problems", "worst", "x2_verdicts"]
