"""``bench latency --runs``: time the models recorded runs trained, so quality and speed sit on one board row.

Why: a speed column times each paper row's architecture untrained (``--weights random``, length-forced): that says
how fast the architecture is, not how fast *this* model is, whose output lengths it learned. A board row's speed-up
is its own only when its run's model was timed. A recorded run names its system, task, budget, seed and settings
(its spec) and the workdir its model was trained in; this module finds each run (``bench.runs.lookup``: a run id,
a short id, in the workspace and in ``results/``), checks that the code still resolves the spec to the same model
and that the model is on this machine, and loads it the way ``bench run`` does (:func:`bench.runs.pipeline.train`
finds a finished model and trains nothing). The latency record names the run of every timed system
(``spec.runs``), and the board shows that speed-up on that run's row without the "paper row's architecture" mark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api.errors import UserError


class TrainedRunError(UserError, ValueError):
    """A run that cannot be timed as its own model: not found, not finished, its model not here, or two runs that
    do not belong in one timing."""


@dataclass(frozen=True)
class TrainedRun:
    """One recorded run whose model is timed: its system, id, spec (``bench.runs.spec.RunSpec``) and the record's
    model workdir."""

    system: str
    run_id: str
    spec: Any
    workdir: Path
    record: Mapping[str, Any] | None = None  # the run record, whose outputs the timed ones must equal


@dataclass(frozen=True)
class RunsInputs:
    """What :func:`~bench.latency.plan.run_latency` needs beyond the plan to time recorded runs: each run's model
    loader, and its recorded outputs (split order), which the timed model's outputs must equal (else the model timed
    is not the run's, and its speed-up is INVALID)."""

    loaders: dict[str, Callable[[str], Any]]
    references: dict[str, list[str]]

    def kwargs(self) -> dict[str, Any]:
        return {"loaders": self.loaders, "reference_outputs": self.references or None}


def resolve_runs(ids: Sequence[str], results_dir: Path | str | None = None) -> list[TrainedRun]:
    """The recorded runs ``ids`` name (ids or short ids), checked to belong in one timing: one task, split and
    budget, each system once, each a finished run of a model (not a submission). Builds nothing, loads no model."""
    from bench.runs.lookup import find_finished
    from bench.runs.spec import RunSpec

    out: list[TrainedRun] = []
    for given in ids:
        path, rec = find_finished(given, results_dir)
        run_id = str(rec.get("run_id", given))
        if rec.get("kind") == "external":
            raise TrainedRunError(f"--runs {given}: {run_id} is a submission (outputs from elsewhere, no model here) "
                                  "and cannot be timed; give runs made by `bench run`.")
        if any(r.run_id == run_id for r in out):
            raise TrainedRunError(f"--runs names {run_id} twice; give each run once.")
        model, system = rec.get("model"), rec.get("system")
        if isinstance(system, Mapping) and system.get("family") == "reference":
            raise TrainedRunError(f"--runs {given}: {run_id} is a run of the reference baseline "
                                  f"{rec['spec']['system']}, which has no trained model to time; time it by name with "
                                  "--systems.")
        if not isinstance(model, Mapping) or not isinstance(model.get("workdir"), str):
            raise TrainedRunError(f"--runs {given}: {path} names no model workdir (a run of a reference baseline "
                                  "or an older record); time such a system by name with --systems.")
        spec = RunSpec.from_json(rec["spec"])
        out.append(TrainedRun(spec.system, run_id, spec, Path(model["workdir"]), rec))
    if not out:
        raise TrainedRunError("--runs: give at least one run id (bench show lists them).")
    for field in ("task", "split", "budget"):
        values = sorted({str(getattr(r.spec, field)) for r in out})
        if len(values) > 1:
            raise TrainedRunError(f"--runs: the runs differ in {field} ({', '.join(values)}); one timing compares "
                                  f"runs of one {field}: time each {field} in its own `bench latency` call.")
    seen: dict[str, str] = {}
    for r in out:
        if r.system in seen:
            raise TrainedRunError(f"--runs: {seen[r.system]} and {r.run_id} are both runs of {r.system}; a system is "
                                  "timed once per measurement: time them in two calls.")
        seen[r.system] = r.run_id
    return out


def load_trained(run: TrainedRun, device: str, data_dir: Path | None, say: Callable[[str], None]) -> Any:
    """``run``'s system with its own trained model, placed on ``device``: built from the run's spec and fitted in
    the workdir its training settings resolve to, which must be the one its record names and must hold the model
    (so nothing is trained here: a missing model is a one-line error naming the command that trains it again)."""
    from bench.runs.identity import training_workdir
    from bench.runs.pipeline import build, prepare, train
    from bench.runs.staleness import stale_reason

    system = build(run.spec)
    resolved = training_workdir(run.spec, system)
    again = _command(run.spec)
    # the folder's name holds the owner, task, budget, seed and training key: the model's identity wherever the
    # cache lives (a record names the folder as it was, relative or under another cache root)
    if resolved.name != run.workdir.name:
        raise TrainedRunError(f"{run.run_id}: the code now resolves this run's training settings to another model "
                              f"({resolved.name}, the record names {run.workdir.name}), so its model cannot be found "
                              f"again; run `{again}` for a record of today's model, and time that.")
    stale = stale_reason(run.record, run.spec, system) if run.record is not None else None
    if stale is not None:  # its decode settings are not today's (int8's decode_batch_size): the timed model would
        # decode otherwise than the run did, and its outputs could not equal the run's (INVALID after the timing)
        raise TrainedRunError(f"{run.run_id}: {stale}, so the model timed would not decode as the run did; run "
                              f"`{again} --force` for a record of today's settings, and time that.")
    if not resolved.is_dir() or not any(resolved.iterdir()):
        raise TrainedRunError(f"{run.run_id}: its model folder {resolved} is not on this machine (a record travels, "
                              f"its model does not); `{again}` trains it again (the same settings give the same "
                              "model), then time it.")
    say(f"[load] {run.system}: the model of run {run.run_id} ({resolved.name})")
    prep = prepare(run.spec, system, data_dir, device)
    train(prep, data_dir, say=lambda _m: None)  # the model is finished: fit finds it and returns
    return system


def _command(spec: Any) -> str:
    sets = " ".join(f"--set {k}={v}" for k, v in sorted(dict(spec.overrides).items()))
    return " ".join(p for p in (f"bench run --system {spec.system} --task {spec.task} --split {spec.split}",
                                f"--budget {spec.budget} --seed {spec.seed}", sets) if p)


def run_map(runs: Sequence[TrainedRun]) -> dict[str, str]:
    """system -> run id, as a latency record stores it (``spec.runs``)."""
    return {r.system: r.run_id for r in runs}


def plan_runs(ids: Sequence[str], *, baseline: str | None = None, results_dir: Path | str | None = None,
              data_dir: Path | None = None, say: Callable[[str], None] = print, **options: Any,
              ) -> tuple[Any, RunsInputs]:
    """The measurement of the runs ``ids`` (a :class:`~bench.latency.plan.LatencyPlan` over their systems, task,
    split and budget, with ``options`` as :func:`~bench.latency.plan.plan_latency` takes them), each run's model
    loader and its recorded outputs for :func:`~bench.latency.plan.run_latency`. ``baseline``: a system among the
    runs' or a run id among ``ids``."""
    from bench.latency.plan import LatencyPlanError, plan_latency

    runs = resolve_runs(ids, results_dir)
    by_id = {r.run_id: r.system for r in runs}
    if baseline is not None and baseline not in by_id.values():
        if baseline not in by_id:
            raise LatencyPlanError(f"--baseline {baseline}: with --runs the baseline is one of the runs, by system "
                                   f"({', '.join(by_id.values())}) or run id.")
        baseline = by_id[baseline]
    first = runs[0].spec
    plan = plan_latency(first.task, [r.system for r in runs], split=first.split, baseline=baseline,
                        budget=first.budget, runs=run_map(runs), **options)
    loaders = {r.system: _loader(r, data_dir, say) for r in runs}
    references = {} if plan.length_forced else run_references(runs, data_dir, say)
    return plan, RunsInputs(loaders, references)


def run_references(runs: Sequence[TrainedRun], data_dir: Path | None,
                   say: Callable[[str], None]) -> dict[str, list[str]]:
    """system -> its run's recorded outputs, in split order, for each run that decoded the whole split (the meter
    compares every timed item with them); a run of the split's first N examples only is named, not compared."""
    from bench.data import load_split
    from bench.runs.lookup import outputs_of

    out: dict[str, list[str]] = {}
    if not runs:
        return out
    n = len(load_split(runs[0].spec.task, runs[0].spec.split, data_dir=data_dir).examples)
    for r in runs:
        if r.record is None:
            continue
        lines = outputs_of(r.record)  # type: ignore[arg-type]  # the StoredRecord itself: it knows its file
        if len(lines) == n:
            out[r.system] = lines
        else:
            say(f"note: {r.run_id} decoded {len(lines)} of the split's {n} examples, so its timed outputs are not "
                "compared with its recorded ones")
    return out


def plan_command(task: str, systems: str, runs: str | None, *, split: str, baseline: str | None, budget: str,
                 results_dir: Path | str | None, data_dir: Path | None, say: Callable[[str], None], **options: Any,
                 ) -> tuple[Any, RunsInputs | None]:
    """What ``bench latency`` times: ``--runs`` (recorded runs, which give the systems and the task) or ``--task`` and
    ``--systems``; the plan and, for runs, their models' loaders and recorded outputs."""
    from bench.latency.plan import plan_latency

    if runs is not None:
        if systems.strip() or task:
            raise TrainedRunError("--runs gives the systems and the task (each run's own): leave --systems and --task "
                                  "out.")
        return plan_runs([r.strip() for r in runs.split(",") if r.strip()], baseline=baseline,
                         results_dir=results_dir, data_dir=data_dir, say=say, **options)
    if not task or not systems.strip():
        raise TrainedRunError("give --task and --systems (the systems to time), or --runs (recorded runs to time).")
    return plan_latency(task, systems, split=split, baseline=baseline, budget=budget, **options), None


def _loader(run: TrainedRun, data_dir: Path | None, say: Callable[[str], None]) -> Callable[[str], Any]:
    return lambda device: load_trained(run, device, data_dir, say)


__all__ = ["RunsInputs", "TrainedRun", "TrainedRunError", "load_trained", "plan_command", "plan_runs", "resolve_runs",
           "run_map", "run_references"]
