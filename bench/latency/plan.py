"""What `bench latency` times and how, decided before anything is built: :func:`plan_latency`; then
:func:`run_latency` builds the systems, times them and (optionally) records the measurement.

The decisions live here, not in the command line, so a script timing systems makes the same ones:
the baseline is timed too (first, when ``systems`` lacks it); ``weights="random"`` (untrained, seeded
weights at the budget's size) implies length-forced timing, since untrained output lengths are arbitrary;
counts are refused with the wording every option uses (:mod:`bench.env.counts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.env.counts import at_least
from bench.latency.prepare import parse_stand_ins, parse_system_overrides
from bench.latency.record import LatencySpec

#: the choices of ``weights`` besides None (each system's own weights)
WEIGHTS = ("random",)


class LatencyPlanError(UserError, ValueError):
    """Options of a latency measurement that cannot be timed as given."""


@dataclass(frozen=True)
class LatencyPlan:
    """One measurement, settled: which systems (the baseline first when it was not named), with which
    overrides and stand-ins, how many items and rounds, length-forced or not; ``notes`` say what was decided
    for the user (e.g. random weights forcing lengths)."""

    task: str
    systems: tuple[str, ...]
    split: str = "test"
    baseline: str | None = None
    budget: str = "smoke"
    n: int = 100
    rounds: int = 5
    min_items: int = 100
    length_forced: bool = False
    weights: str | None = None
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # system -> key -> value
    stand_ins: Mapping[str, str] = field(default_factory=dict)  # row system -> timed system
    seed: int = 0
    precision: str = "fp32"
    notes: tuple[str, ...] = ()
    #: the meter's warm-up and duration floor (:func:`~bench.latency.meter.measure`'s defaults); a bounded
    #: run (``scripts/gpu_check.py``) lowers them so its total is n items per system plus a stated warm-up
    warmup_items: int = 20
    warmup_s: float = 5.0
    min_duration_s: float = 10.0
    #: the paired design's extension: up to this many rounds in all, within this many seconds of timing, while a
    #: speed-up is INCONCLUSIVE; the A/A control's system ("auto": the fastest; None: none)
    max_rounds: int = 12
    max_duration_s: float = 600.0
    aa: str | None = "auto"
    x2: str | None = None  # the known-ratio control's system ("auto": the fastest at float32; None: none)
    #: system -> the recorded run whose own trained model is timed (``bench latency --runs``;
    #: :mod:`bench.workflows.trained_latency` resolves and loads them)
    runs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LatencyRun:
    """The measurement (a :class:`~bench.latency.report.LatencyReport`) and where it was recorded (None: not)."""

    report: Any
    record: Path | None = None


def plan_latency(task: str, systems: str | Sequence[str], *, split: str = "test", baseline: str | None = None,
                 budget: str = "smoke", n: int = 100, rounds: int = 5, min_items: int = 100,
                 length_forced: bool = False, weights: str | None = None, sets: Sequence[str] = (),
                 stand_ins: Sequence[str] = (), seed: int = 0, precision: str = "fp32", warmup_items: int = 20,
                 warmup_s: float = 5.0, min_duration_s: float = 10.0, max_rounds: int = 12,
                 max_duration_s: float = 600.0, aa: str | None = "auto", x2: str | None = None,
                 runs: Mapping[str, str] | None = None) -> LatencyPlan:
    """Check and settle the options of a measurement (``systems``: names, or one comma-separated string;
    ``sets``: ``key=value`` for every system or ``system.key=value``; ``stand_ins``: ``ROW=TIMED``). Raises a
    :class:`~bench.api.errors.UserError` naming the option; builds nothing."""
    for option, value, low in (("--n", n, 1), ("--rounds", rounds, 1), ("--min-items", min_items, 1),
                               ("--seed", seed, 0), ("--warmup-items", warmup_items, 0),
                               ("--max-rounds", max_rounds, rounds)):
        at_least(option, value, low)
    if max_duration_s < 0:
        raise LatencyPlanError(f"--time-budget-s {max_duration_s:g}: give the seconds of timing extra rounds may "
                               "take, ≥ 0 (0: exactly --rounds rounds)")
    for flag, seconds in (("--warmup-s", warmup_s), ("--min-duration-s", min_duration_s)):
        if seconds < 0:
            raise LatencyPlanError(f"{flag} {seconds:g}: {flag.lstrip('-')} must be ≥ 0 (got {seconds:g})")
    items = systems.split(",") if isinstance(systems, str) else list(systems)
    names = [s.strip() for s in items if s.strip()]
    if baseline and baseline not in names:
        names.insert(0, baseline)
    if aa not in (None, "auto") and aa not in names:
        raise LatencyPlanError(f"--aa {aa!r}: the A/A control must be one of the timed systems ({', '.join(names)}), "
                               "'auto' (the fastest) or 'none'.")
    if x2 not in (None, "auto") and x2 not in names:
        raise LatencyPlanError(f"--x2-control {x2!r}: the known-ratio control must be one of the timed systems "
                               f"({', '.join(names)}), 'auto' (the fastest system at float32) or 'none'.")
    runs = dict(runs or {})
    if runs and weights is not None:
        raise LatencyPlanError(f"--runs with --weights {weights}: a recorded run is timed with its own trained "
                               "model; leave --weights out (or time architectures with --weights random alone).")
    if weights is not None and weights not in WEIGHTS:
        raise LatencyPlanError(f"--weights {weights!r}: the only choice is 'random' (leave it out for the systems' "
                               "own weights).")
    notes: list[str] = []
    if weights == "random" and not length_forced:
        notes.append("--weights random implies --length-forced (untrained lengths are arbitrary)")
        length_forced = True
    if length_forced:
        _refuse_references(names, "--weights random" if weights == "random" else "--length-forced")
    overrides = parse_system_overrides(([] if weights is None else [f"weights={weights}"]) + list(sets), names)
    return LatencyPlan(task=task, systems=tuple(names), split=split, baseline=baseline, budget=budget, n=n,
                       rounds=rounds, min_items=min_items, length_forced=length_forced, weights=weights,
                       overrides=overrides, stand_ins=parse_stand_ins(stand_ins, names), seed=seed,
                       precision=precision, notes=tuple(notes), warmup_items=warmup_items, warmup_s=warmup_s,
                       min_duration_s=min_duration_s, max_rounds=max_rounds, max_duration_s=max_duration_s, aa=aa,
                       x2=x2, runs=runs)


def _refuse_references(names: Sequence[str], option: str) -> None:
    """A reference baseline (copy_source, lead1: no model) has no weights to randomize and no length to force: its
    output is the input's, so timing it under ``option`` would be meaningless. One line naming it and the fix (#58:
    it was refused as "Unknown override(s) ['weights']")."""
    from systems import SYSTEMS

    refs = [n for n in names if n in SYSTEMS and SYSTEMS.meta(n).get("family") == "reference"]
    if refs:
        what = "is a reference baseline" if len(refs) == 1 else "are reference baselines"
        raise LatencyPlanError(f"{' and '.join(refs)} {what} (no model: the output is the input's), with no weights "
                               f"and no length to force, so {option} cannot time it; leave it out of --systems "
                               "(a speed table needs a model as the baseline, e.g. fairseq_transformer).")


def run_latency(plan: LatencyPlan, *, data_dir: Path | None = None, device: str = "auto",
                say: Callable[[str], None] = print, console: Any = None, record_to: Path | None = None,
                harness: Mapping[str, Any] | None = None, quiet_gate: float | None = None,
                loaders: Mapping[str, Callable[[str], Any]] | None = None,
                reference_outputs: Mapping[str, Sequence[str]] | None = None) -> LatencyRun:
    """Place, build (every system first: a bad override writes no split cache), time ``plan`` interleaved
    and, with ``record_to`` (a results folder), write its latency record (``harness``: the code that timed)."""
    import tempfile

    from bench.data import load_split
    from bench.env.device import activate, resolve_device
    from bench.latency.meter import measure
    from bench.latency.prepare import prepare
    from bench.latency.record import build_record
    from bench.store.latency import write_latency_record

    placed = resolve_device(device)
    activate(placed)
    names = list(plan.systems)
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as work:
        prep = prepare(names, plan.budget, plan.overrides, plan.task, Path(work), plan.stand_ins, data_dir,
                       say=say, device=placed, loaders=loaders)
        sp = load_split(plan.task, plan.split, data_dir=data_dir)
        report = measure(prep.systems, list(sp.examples), baseline=plan.baseline, n=plan.n, rounds=plan.rounds,
                         length_forced=plan.length_forced, seed=plan.seed, min_items=plan.min_items,
                         console=console, precision=plan.precision, device=placed,
                         warmup_items=plan.warmup_items, warmup_s=plan.warmup_s, min_duration_s=plan.min_duration_s,
                         quiet_gate=quiet_gate, aa=plan.aa, x2=plan.x2, max_rounds=plan.max_rounds,
                         max_duration_s=plan.max_duration_s, say=say, reference_outputs=reference_outputs)
    if record_to is None:
        return LatencyRun(report)
    spec = LatencySpec(task=plan.task, split=plan.split, budget=plan.budget, systems=tuple(names),
                       baseline=plan.baseline, n=plan.n, rounds=plan.rounds, length_forced=plan.length_forced,
                       weights=_weights(plan), overrides=prep.overrides, stand_ins=prep.stand_ins,
                       seed=plan.seed, runs=plan.runs)
    record = build_record(spec, report, prep.infos, prep.stand_in_basis, harness)
    return LatencyRun(report, write_latency_record(record_to, record))


def _weights(plan: LatencyPlan) -> str:
    """What a record says the timed weights were: "random", "trained" (recorded runs' own models) or as configured."""
    return plan.weights or ("trained" if plan.runs else "as-configured")


def positive_ints(option: str, text: str) -> list[int]:
    """A comma-separated list of positive integers (``--batch-sizes 1,8,32``), or a one-line error naming ``option``."""
    from bench.api.errors import UserError

    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise UserError(f"{option} {text!r}: give positive integers separated by commas, e.g. {option} 1,8,32.")
    return values


def run_sweep(plan: LatencyPlan, batch_sizes: Sequence[int], threads: Sequence[int], *, bucket: str = "none",
              energy: bool = False, min_batches: int = 8, data_dir: Path | None = None, device: str = "auto",
              say: Callable[[str], None] = print, record_to: Path | None = None,
              harness: Mapping[str, Any] | None = None, quiet_gate: float | None = None,
              loaders: Mapping[str, Callable[[str], Any]] | None = None) -> tuple[dict[str, Any], Path | None]:
    """``bench latency --batch-sizes``: build ``plan``'s systems as :func:`run_latency` does, sweep them
    (:func:`bench.latency.sweep.sweep`) and, with ``record_to``, write ``sweep/<id>.json`` there (a record
    of its own kind, so the latency records and the tables that read them are untouched)."""
    import datetime as dt
    import tempfile

    from bench.data import load_split
    from bench.env.device import activate, resolve_device
    from bench.env.fingerprint import device_label, environment_fingerprint
    from bench.latency.prepare import prepare
    from bench.latency.record import system_summary
    from bench.latency.sweep import sweep
    from bench.store.sweeps import SWEEP_RECORD_SCHEMA, write_sweep_record

    placed = resolve_device(device)
    activate(placed)
    names = list(plan.systems)
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as work:
        prep = prepare(names, plan.budget, plan.overrides, plan.task, Path(work), plan.stand_ins, data_dir,
                       say=say, device=placed, loaders=loaders)
        sp = load_split(plan.task, plan.split, data_dir=data_dir)
        result = sweep(prep.systems, list(sp.examples), plan.baseline, batch_sizes, threads, min_items=plan.n,
                       min_batches=min_batches, rounds=plan.rounds, seed=plan.seed,
                       length_forced=plan.length_forced, bucket=bucket,
                       device=placed, energy=energy, workdirs={n: Path(work) / n for n in names}, say=say,
                       quiet_gate=quiet_gate, aa=plan.aa, x2=plan.x2, max_rounds=plan.max_rounds,
                       max_duration_s=plan.max_duration_s)
    fp = environment_fingerprint()
    created = dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()
    spec = LatencySpec(task=plan.task, split=plan.split, budget=plan.budget, systems=tuple(names),
                       baseline=plan.baseline, n=plan.n, rounds=plan.rounds, length_forced=plan.length_forced,
                       weights=_weights(plan), overrides=prep.overrides, stand_ins=prep.stand_ins,
                       seed=plan.seed, runs=plan.runs)
    stamp = created.replace("-", "").replace(":", "").split("+")[0]
    sweep_id = f"{plan.task}--{plan.split}--{plan.budget}--sweep--{stamp}--{spec.digest()}"
    record = {"schema": SWEEP_RECORD_SCHEMA, "kind": "sweep", "sweep_id": sweep_id, "created": created,
              "spec": spec.to_json(),
              "harness": dict(harness or {}), "device": device_label(fp, placed.split(":")[0]), "fingerprint": fp,
              "systems": {n: system_summary(prep.infos[n]) for n in names}, "sweep": result,
              "verdict": result["verdict"], "valid": result["valid"], "invalid_reasons": result["invalid_reasons"],
              "ms_label": result["ms_label"], "ms_reasons": result["ms_reasons"]}
    path = None if record_to is None else write_sweep_record(record_to, record)  # checked and sealed
    return record, path
