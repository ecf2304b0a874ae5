"""The paired design's evidence in a record, checked at load: the design, every timing, the rounds, the A/A control.

Latency records (schema 2) keep it at their top level, sweep records once per (threads, B) group. What is checked
here is what a reader needs before any number is shown: the types, the design's completeness (every (round, unit,
arm) timed exactly once, nothing else), each speed-up's verdict one of the four, its per-round ratios positive,
its point inside its CI. Whether the numbers follow from the timings is the deep check's
(:mod:`bench.latency.rederive`); this module raises nothing and returns :class:`~bench.store.integrity.Problem`\\ s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard

from bench.api.numbers import finite
from bench.store.integrity import Problem

#: a speed-up's verdicts (bench.latency.paired.VERDICTS; the store sits below the meter, so the list is repeated
#: here and a test keeps the two equal)
VERDICTS = ("VALID", "INCONCLUSIVE", "UNSTABLE", "INVALID")
LABELS = ("VALID", "INDICATIVE")
#: the columns of a trial log (bench.latency.trials.COLUMNS), each with the type of its values
COLUMNS = {"round": int, "unit": int, "arm": str, "position": int, "start_ns": int, "wall_ns": int, "cpu_ns": int,
           "tokens": int, "out_hash": str}
MAX_NS = 86_400 * 10**9
MAX_RATIO = 1e6


_num = finite  # the store's name for bench.api.numbers.finite


def _int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def trial_problems(trials: Any, arms: list[str], units: int, rounds: int, where: str) -> Iterator[Problem]:
    """The trial log: typed columns of one length, every (round, unit, arm) exactly once, times positive."""
    if not isinstance(trials, Mapping):
        yield Problem(where, "must be an object of columns")
        return
    length = None
    for column, kind in COLUMNS.items():
        values = trials.get(column)
        if not isinstance(values, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
            yield Problem(f"{where}.{column}", f"must be a list of {kind.__name__}s")
            return
        if length is not None and len(values) != length:
            yield Problem(f"{where}.{column}", f"has {len(values)} entries, the other columns {length}")
            return
        length = len(values)
    cells = list(zip(trials["round"], trials["unit"], trials["arm"], strict=True))
    want = {(r, u, a) for r in range(rounds) for u in range(units) for a in arms}
    if len(set(cells)) != len(cells) or set(cells) != want:
        yield Problem(where, f"must time every (round, unit, arm) of {rounds} rounds x {units} units x "
                             f"{len(arms)} arms exactly once; it holds {len(cells)} timings, {len(set(cells) & want)} "
                             "of them in the design")
    if not all(0 < v <= MAX_NS for v in trials["wall_ns"]):
        yield Problem(f"{where}.wall_ns", "must be positive nanoseconds below a day")
    if not all(0 <= v <= MAX_NS for v in trials["cpu_ns"]) or not all(v >= 0 for v in trials["tokens"]):
        yield Problem(f"{where}.cpu_ns", "cpu_ns and tokens must be non-negative")
    if not all(0 <= p < len(arms) for p in trials["position"]):
        yield Problem(f"{where}.position", f"must be a place in the order of {len(arms)} arms")


def speedup_problems(sp: Any, where: str) -> Iterator[Problem]:
    """A paired speed-up (``bench.latency.paired.PairedSpeedup.to_json``): ratios, CI holding its point, verdict."""
    if not isinstance(sp, Mapping):
        yield Problem(where, "must be an object")
        return
    for point, ci in (("mean", "mean_ci95"), ("median", "median_ci95")):
        v, iv = sp.get(point), sp.get(ci)
        if not (_num(v) and 0 < v <= MAX_RATIO):
            yield Problem(f"{where}.{point}", f"must be a positive ratio, got {v!r}")
            continue
        if not (isinstance(iv, list) and len(iv) == 2 and all(_num(x) and 0 < x <= MAX_RATIO for x in iv)
                and iv[0] <= iv[1]):
            yield Problem(f"{where}.{ci}", f"must be [lo, hi], two ratios with lo <= hi, got {iv!r}")
        elif not iv[0] * (1 - 1e-9) <= v <= iv[1] * (1 + 1e-9):
            yield Problem(f"{where}.{point}", f"is {v!r}, outside its CI {iv!r}")
    if "verdict" in sp or "per_round" in sp:
        if sp.get("verdict") not in VERDICTS:
            yield Problem(f"{where}.verdict", f"must be one of {', '.join(VERDICTS)}, got {sp.get('verdict')!r}")
        rounds = sp.get("per_round")
        if not (isinstance(rounds, list) and rounds and all(_num(x) and 0 < x <= MAX_RATIO for x in rounds)):
            yield Problem(f"{where}.per_round", f"must be a non-empty list of positive ratios, got {rounds!r}")
        if not (_num(sp.get("geomean")) and 0 < sp["geomean"] <= MAX_RATIO):
            yield Problem(f"{where}.geomean", f"must be a positive ratio, got {sp.get('geomean')!r}")
        reasons = sp.get("reasons")
        if not (isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)):
            yield Problem(f"{where}.reasons", "must be a list of strings")
        elif (sp.get("verdict") == "VALID") != (not reasons):
            yield Problem(f"{where}.verdict", f"is {sp.get('verdict')!r} with {len(reasons)} reason(s): a VALID "
                                              "speed-up has none, any other verdict at least one")


def design_problems(block: Mapping[str, Any], where: str = "") -> Iterator[Problem]:
    """The paired evidence of one timing (a latency record's top level, a sweep's group): design, trials, rounds,
    A/A control, reference hashes and work counts."""
    at = f"{where}." if where else ""
    design = block.get("design")
    if not isinstance(design, Mapping):
        yield Problem(f"{at}design", "must be an object (the paired design: kind, seed, units, rounds, arms)")
        return
    arms, units, rounds = design.get("arms"), design.get("units"), design.get("rounds")
    if not (isinstance(arms, list) and arms and all(isinstance(a, str) and a for a in arms)
            and len(set(arms)) == len(arms)):
        yield Problem(f"{at}design.arms", f"must be a list of distinct arm names, got {arms!r}")
        return
    if not (_int(units) and units >= 1 and _int(rounds) and rounds >= 1 and _int(design.get("seed"))):
        yield Problem(f"{at}design", "needs positive integer units and rounds and an integer seed")
        return
    if design.get("kind") not in ("paired", "block"):
        yield Problem(f"{at}design.kind", f"must be 'paired' or 'block', got {design.get('kind')!r}")
    yield from trial_problems(block.get("trials"), arms, units, rounds, f"{at}trials")
    rs = block.get("rounds")
    if not (isinstance(rs, list) and len(rs) == rounds and all(isinstance(r, Mapping) for r in rs)):
        yield Problem(f"{at}rounds", f"must be one object per round ({rounds})")
    for key, what in (("aa", "second arm"), ("x2", "twice-decoding arm")):
        control = block.get(key)
        if control is None:
            continue
        if not (isinstance(control, Mapping) and isinstance(control.get("system"), str)
                and f"{key}:{control['system']}" in arms):
            yield Problem(f"{at}{key}", f"must be null or name the system whose {what} ('{key}:<system>') was timed")
        else:
            yield from speedup_problems(control, f"{at}{key}")
    hashes = block.get("reference_hashes")
    if not (isinstance(hashes, Mapping) and all(
            isinstance(h, list) and len(h) == units and all(isinstance(x, str) for x in h) for h in hashes.values())):
        yield Problem(f"{at}reference_hashes", f"must map each system to {units} output hashes")
    work = block.get("work")
    if not isinstance(work, Mapping):
        yield Problem(f"{at}work", "must be an object of system -> counts")
    else:
        for name, w in work.items():
            if not isinstance(w, Mapping):
                yield Problem(f"{at}work.{name}", "must be an object")
                continue
            for key in ("passes_per_unit", "layer_evals_per_unit", "flops_per_sentence", "instructions_per_sentence"):
                v = w.get(key)
                if v is not None and not (_num(v) and v >= 0):
                    yield Problem(f"{at}work.{name}.{key}", f"must be null or a non-negative number, got {v!r}")
            for key in ("units", "sentences", "output_tokens", "parameters", "counted_units"):
                if not (_int(w.get(key)) and w[key] >= 0):
                    yield Problem(f"{at}work.{name}.{key}", f"must be a count, got {w.get(key)!r}")


def runs_problems(spec: Mapping[str, Any]) -> Iterator[Problem]:
    """``spec.runs`` (``bench latency --runs``): each timed system mapped to the recorded run whose model it timed, a
    run id by the one identifier rule (the board links a speed-up to that run's row by it). The claim is tied to the
    runs it names: weights "trained" if and only if runs are named, every timed system with a run of its own, each
    run id naming that system and the record's task, split and budget (a run id is its spec's,
    :mod:`bench.store.ids`, so a speed-up cannot be put on another system's or another task's row), and no system's
    override saying its weights were random."""
    from bench.api.names import identifier_problem

    runs = spec.get("runs")
    if runs is None:
        if spec.get("weights") == "trained":
            yield Problem("spec.weights", "is 'trained' but 'spec.runs' names no runs whose models were timed")
        return
    systems = spec.get("systems")
    if not isinstance(runs, Mapping) or not runs:
        yield Problem("spec.runs", "must be a non-empty object of system -> run id")
        return
    for system, run_id in runs.items():
        if not isinstance(systems, list) or system not in systems:
            yield Problem("spec.runs", f"names {str(system)[:60]!r}, which is not one of 'spec.systems'")
        elif not isinstance(run_id, str) or identifier_problem(run_id) is not None:
            yield Problem(f"spec.runs.{system}", "must be a run id (letters, digits, '_', '.', '+' and '-')")
        elif not run_id.startswith(f"{system}--{spec.get('task')}--{spec.get('split')}--{spec.get('budget')}--"):
            yield Problem(f"spec.runs.{system}", f"is {run_id!r}, not a run of {system} on the record's task, split "
                                                 f"and budget ({system}--{spec.get('task')}--{spec.get('split')}--"
                                                 f"{spec.get('budget')}--…): a speed-up is shown on its run's row")
    if isinstance(systems, list) and not set(systems) <= set(runs):
        missing = sorted(str(s) for s in set(systems) - set(runs))
        yield Problem("spec.runs", f"names no run for {', '.join(missing)[:120]}: with --runs every timed system is a "
                                   "recorded run's model")
    ids = [r for r in runs.values() if isinstance(r, str)]
    if len(set(ids)) != len(ids):
        yield Problem("spec.runs", "names one run for two systems: each run's model is timed once")
    overrides = spec.get("overrides")
    for system, values in (overrides.items() if isinstance(overrides, Mapping) else ()):
        if isinstance(values, Mapping) and values.get("weights") == "random":
            yield Problem(f"spec.overrides.{system}.weights", "is 'random' in a record of the runs' trained models")
    if spec.get("weights") != "trained":
        yield Problem("spec.weights", "must be 'trained' where 'spec.runs' names the runs whose models were timed")


def arm_timings(block: Mapping[str, Any], arm: str) -> int:
    """How many timings ``arm`` has in a block's trial log (the quiet gate's counts must cover exactly these)."""
    trials = block.get("trials")
    arms = trials.get("arm") if isinstance(trials, Mapping) else None
    return sum(1 for a in arms if a == arm) if isinstance(arms, list) else 0


__all__ = ["COLUMNS", "LABELS", "VERDICTS", "arm_timings", "design_problems", "speedup_problems", "trial_problems"]
