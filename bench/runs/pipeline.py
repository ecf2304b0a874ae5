"""One run, stage by stage: build -> prepare -> train -> decode -> score -> (time) -> record.

Each stage is a function that takes the typed values the stages before it produced and returns its
own, so a stage can be read, tested and reused alone (the launchers plan with the same pieces), and
the record is assembled in one place from values whose fields say what they are. The system is built
once (:func:`build`) and that one object is checked against an existing record, placed, fitted, decoded,
timed and described in the record. Identity and workdirs live in :mod:`bench.runs.identity`, staleness in
:mod:`bench.runs.staleness`; the record's schema in :mod:`bench.store.records`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.api.atomic import write_text_atomic
from bench.api.checkpoints import CorruptCheckpoint
from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR
from bench.runs.evaluation import check_recipes, eval_limit, first_examples
from bench.runs.identity import build_system, model_spec, model_workdir
from bench.runs.journal import decode_in_chunks
from bench.runs.outputs import outputs_to_text, sha256_text
from bench.runs.paths import display_path, outputs_path, record_path, said_path
from bench.runs.provenance import code_state, harness_info
from bench.runs.reporter import Reporter
from bench.runs.seeding import seed_everything
from bench.runs.spec import RunSpec
from bench.runs.staleness import complete_record_maybe_stale, stale_reason
from bench.store.records import RunRecord


@dataclass(frozen=True)
class PreparedRun:
    """A checked spec with its system built and placed and its evaluation examples loaded; nothing trained yet."""

    spec: RunSpec
    task: Any  # bench.data.Task
    system: Any  # bench.api.system.System
    examples: Any  # bench.api.types.Split: the (possibly first-N) evaluated split
    harness: dict[str, Any]  # the code at the start (whatever is edited meanwhile)
    environment: dict[str, Any]  # fingerprint at the start
    started: float  # perf_counter at the start
    device: str = "cpu"  # where the system trains, decodes and is timed (bench.env.device: the harness's choice)


@dataclass(frozen=True)
class Trained:
    """Where the model lives and which run's settings trained it."""

    workdir: Path
    key: str  # bench.runs.identity.training_key: equal exactly when two runs train the same model
    run_id: str  # the training spec's run id
    seconds: float


@dataclass(frozen=True)
class Outputs:
    """The decoded outputs as written to ``results/outputs/``."""

    lines: list[str]
    path: Path
    sha256: str
    seconds: float  # every session's chunks, when a killed decode was resumed
    resumed: int  # examples read back from the journal
    journal: Path


@dataclass(frozen=True)
class Scored:
    scores: dict[str, Any]  # recipe -> Scores.to_json()
    seconds: float


def execute(
    spec: RunSpec,
    *,
    results_dir: Path = RESULTS_DIR,
    data_dir: Path | None = None,
    force: bool = False,
    latency_items: int = 0,
    say: Reporter = print,
    progress: Any = None,
    device: str = "auto",
    score_outputs: bool = True,
    wait: bool = True,
    fresh: bool = False,
    done_in: Sequence[Path] = (),
) -> dict[str, Any]:
    """Train (or resume), decode, score and optionally time one spec; write and return its record.

    ``done_in``: other results folders whose complete, up-to-date record of the spec counts as done (a run into
    the workspace that the committed evidence already holds is not run again; ``force`` runs it anyway).

    Decoding is journaled in chunks (:mod:`bench.runs.journal`): a killed run, started again,
    decodes only what it had not. ``progress``: a rich Console for the decode bar (None: none).
    ``device``: ``--device`` (:func:`bench.env.device.resolve_device`); the record says which one ran.
    ``score_outputs=False`` (``--no-score``, for a GPU machine without Java or Perl) writes the outputs and
    an ``unscored`` record that tables skip; a later ``bench run`` of the spec, or ``bench rescore``,
    scores those outputs where the metric tools are, without decoding again.

    The run holds the lock of its run id throughout and the training workdir's while it fits
    (:mod:`bench.runs.lock`): the same run started twice waits for the first (``wait=False``, ``--no-wait``:
    :class:`bench.runs.lock.LockBusy` naming the holder), then finds its record complete.
    ``fresh`` (``--fresh``, for a corrupt checkpoint): re-run (as ``force``) from a discarded training workdir.
    """
    from bench.api.system import require_modules
    from bench.env.device import resolve_device
    from bench.runs.lock import held, run_lock_path

    # what bad input can break is checked before the lock: a mistyped system, setting or device writes nothing
    system = build(spec)
    require_modules(spec.system, system)  # fairseq not installed: one line naming `make fairseq`
    resolve_device(device)
    with held(run_lock_path(results_dir, spec.run_id), f"bench run {spec.run_id}", wait=wait, say=say):
        if not (force or fresh):
            for folder in done_in:
                done = _done_elsewhere(spec, system, Path(folder), results_dir, say)
                if done is not None:
                    return done
        return _execute(spec, system, results_dir, data_dir, force or fresh, latency_items, say, progress, device,
                        score_outputs, wait, fresh)


def _done_elsewhere(spec: RunSpec, system: Any, folder: Path, results_dir: Path,
                    say: Reporter) -> dict[str, Any] | None:
    """The spec's complete, up-to-date record in ``folder`` (not the one this run writes to), said; else None."""
    if not folder.is_dir() or folder.resolve() == Path(results_dir).resolve():
        return None
    if (record_path(spec, results_dir)).is_file():
        return None  # the run's own folder has it (complete, stale or unscored): that one is the run's to judge
    rec = complete_record_maybe_stale(spec, folder)
    if rec is None or stale_reason(rec, spec, system) is not None:
        return None
    say(f"[skip] {spec.run_id} is complete in {said_path(folder)}: {said_path(record_path(spec, folder))}; "
        f"--force runs it again into {said_path(results_dir)}.")
    return rec


def _execute(spec: RunSpec, system: Any, results_dir: Path, data_dir: Path | None, force: bool, latency_items: int,
             say: Reporter, progress: Any, device: str, score_outputs: bool, wait: bool,
             fresh: bool = False) -> dict[str, Any]:
    existing = reusable_record(spec, results_dir, force, say, score_outputs, system=system)
    if existing is not None:
        return existing
    prep = prepare(spec, system, data_dir, device)
    trained = train(prep, data_dir, say, wait, fresh)
    outputs = decode(prep, trained, results_dir, progress, say)
    if score_outputs:
        scored = score(prep, outputs, say)
    else:
        say("[score] skipped (--no-score): the record is 'unscored' until `bench rescore` (or `bench run` of this "
            "spec) scores its outputs where Java and Perl are")
        scored = Scored({}, 0.0)
    latency, latency_s = time_latency(prep, outputs, latency_items)
    record = assemble(prep, trained, outputs, scored, latency, latency_s)
    if not score_outputs:
        record = replace(record, status="unscored")
    record.write(results_dir)
    _drop_journal(outputs.journal)  # the outputs and the record are written: the journal has done its job
    say(f"[done] {said_path(record_path(spec, results_dir))}")
    _warn_if_degenerate(record.output_stats, say)
    return record.to_json()


def reusable_record(spec: RunSpec, results_dir: Path, force: bool, say: Reporter,
                    score_outputs: bool = True, system: Any = None) -> dict[str, Any] | None:
    """The spec's complete, up-to-date record (nothing to do), else None; a stale one is said and re-run.
    An ``unscored`` one (``--no-score``) is scored from its stored outputs when scoring is asked for.
    ``system``: the run's system (:func:`build`), checked against the record (None: built for the check)."""
    if not force and score_outputs and _unscored(spec, results_dir):
        from bench.runs.rescore import rescore

        say(f"[score] {spec.run_id} was recorded with --no-score: scoring its stored outputs (bench rescore)")
        rescore(record_path(spec, results_dir), say=say)
    # --force is the fix for edited outputs
    existing = None if force else complete_record_maybe_stale(spec, results_dir)
    if existing is None:
        return None
    stale = stale_reason(existing, spec, system)
    if stale is None:
        say(f"[skip] {spec.run_id} is complete ({said_path(record_path(spec, results_dir))}); use --force "
            "(bench.run: force=True) to re-run.")
        return existing
    say(f"[stale] {record_path(spec, results_dir)} was {stale}; running again (the new record replaces it).")
    return None


def _unscored(spec: RunSpec, results_dir: Path) -> bool:
    from bench.store.records import read_record

    path = record_path(spec, results_dir)
    return path.is_file() and read_record(path).get("status") == "unscored"


def build(spec: RunSpec) -> Any:
    """The run's system, built once, seeded: the stale check, ``fit``, ``decode``, the meter and the record
    all use this object. An unknown budget or system name fails here with its own message, before any work;
    building loads no weights."""
    from bench.api.system import check_budget

    check_budget(spec.budget)
    seed_everything(spec.seed)
    return build_system(spec)


def prepare(spec: RunSpec, system: Any, data_dir: Path | None, device: str = "auto") -> PreparedRun:
    """Every check that can fail before work (task, split, recipes, device), then ``system`` (the run's one
    :func:`build`), placed on the run's device, and the evaluated examples."""
    from bench.data import TASKS, load_split
    from bench.env.device import activate, resolve_device
    from bench.env.fingerprint import environment_fingerprint

    task = TASKS.get(spec.task)
    task.split(spec.split)  # unknown split names fail here, before any work
    check_recipes(task)
    placed = resolve_device(device)  # a GPU that is not there fails here, before any work
    activate(placed)
    started = time.perf_counter()
    environment = environment_fingerprint()
    harness = harness_info()
    seed_everything(spec.seed)  # again, where it was before fit: the device check may have imported torch since
    system.place(placed)
    examples = first_examples(load_split(spec.task, spec.split, data_dir=data_dir), eval_limit(spec))
    return PreparedRun(spec, task, system, examples, harness, environment, started, placed)


def train(prep: PreparedRun, data_dir: Path | None, say: Reporter, wait: bool = True, fresh: bool = False) -> Trained:
    """Fit (or resume, or find finished) the model in the workdir its resolved training config names,
    holding the workdir's lock: another run id may train the same model (``wait``: as :func:`execute`).
    ``fresh`` (``--fresh``): discard the workdir first (a corrupt checkpoint), and train from scratch."""
    from bench.data import task_info
    from bench.env.device import fit_on
    from bench.runs.lock import held, workdir_lock_path

    spec, task, system = prep.spec, prep.task, prep.system
    t0 = time.perf_counter()
    # its task: the one whose training split trains this run's model; its system: the one that trains it
    trained, key = model_spec(spec, system)  # key before fit: describe() may add what training ran with
    if system.needs_training:
        train_examples, dev_examples = training_examples(trained, task, data_dir)
        info = task_info(trained.task, train_examples, dev_examples)
    else:
        info = task_info(trained.task)
    workdir = model_workdir(trained, key)
    shared = [f"the {trained.task} model: same training split"] if trained.task != spec.task else []
    if trained.train_split:
        shared.append(f"trained on {trained.train_split}")
    if trained.system != spec.system:
        shared.append(f"{trained.system}'s model: the same training settings")
    asked = time.perf_counter()
    with held(workdir_lock_path(workdir), f"training for bench run {spec.run_id}", wait=wait, say=say):
        t0 += time.perf_counter() - asked  # fit_s is this run's training, not its wait for another's
        if fresh:
            discard_workdir(workdir, say)
        new = not workdir.exists()
        workdir.mkdir(parents=True, exist_ok=True)
        say(f"[fit] {spec.system} on {spec.task} ({'; '.join([*shared, f'{spec.budget} budget'])}) on "
            f"{prep.device} -> {said_path(workdir)}")
        try:
            fit_on(system, info, workdir, prep.device)
        except CorruptCheckpoint as exc:
            if exc.path.resolve().is_relative_to(workdir.resolve()):  # the run's own: --fresh, naming the folder
                raise CorruptCheckpoint(exc.path, exc.why, f"Fix: run again with --fresh, which discards {workdir} "
                                        "and trains from scratch") from None
            raise
        except BaseException:
            if new:  # a fit that failed before writing anything (weights offline) leaves no empty workdir behind
                with contextlib.suppress(OSError):
                    workdir.rmdir()
            raise
    return Trained(workdir, key, trained.run_id, time.perf_counter() - t0)


def training_examples(trained: RunSpec, task: Any, data_dir: Path | None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The examples that train ``trained``'s model and draw its dev curve: the task's train and dev splits, or,
    where the spec names a ``train_split`` (a smoke run without the task's training data), that split for both,
    without its examples that have no target (nothing to learn from)."""
    from bench.data import load_split

    if trained.train_split:
        split = load_split(trained.task, trained.train_split, data_dir=data_dir)
        usable = tuple(ex for ex in split.examples if ex.target.strip())
        return usable, usable
    dev_name = "dev" if "dev" in task.splits else "validation"
    train = load_split(trained.task, "train", data_dir=data_dir)
    return train.examples, load_split(trained.task, dev_name, data_dir=data_dir).examples


def discard_workdir(workdir: Path, say: Reporter) -> None:
    """Remove a training workdir (``--fresh``): only one under the cache's ``runs/``, never a path elsewhere."""
    import shutil

    from bench.api.paths import cache_root

    runs = (cache_root() / "runs").resolve()
    if not workdir.exists():
        return
    if workdir.is_symlink() or workdir.resolve().parent != runs:
        raise UserError(f"--fresh: {workdir} is not a workdir under {runs}; remove it yourself if it is one.")
    say(f"[fit] --fresh: discarding {workdir}")
    shutil.rmtree(workdir)


def decode(prep: PreparedRun, trained: Trained, results_dir: Path, progress: Any, say: Reporter) -> Outputs:
    """Decode the evaluated examples through a resumable journal; write the outputs file atomically."""
    spec, examples = prep.spec, prep.examples
    say(f"[decode] {len(examples)} examples of {spec.task}/{spec.split}")
    journal = trained.workdir / "decode" / f"{spec.run_id}.jsonl"
    key = {"run_id": spec.run_id, "split_sha256": examples.sha256, "harness": code_state(prep.harness)}
    decoded = decode_in_chunks(prep.system.decode, list(examples.examples), journal, key,
                               who=f"{spec.system}.decode", progress=progress, say=say)
    if decoded.resumed and decoded.resumed == len(examples):  # killed after decoding, before its record
        say(f"[decode] resuming: all {decoded.resumed:,} outputs read back from {journal}")
    text = outputs_to_text(decoded.outputs)
    path = outputs_path(spec, results_dir)
    write_text_atomic(path, text)
    return Outputs(decoded.outputs, path, sha256_text(text), decoded.seconds, decoded.resumed, journal)


def score(prep: PreparedRun, outputs: Outputs, say: Reporter) -> Scored:
    """Every default recipe of the task, in one scoring session (one Java/Perl start-up)."""
    from bench.scoring import ScoringSession, score_split

    t0 = time.perf_counter()
    scores: dict[str, Any] = {}
    with ScoringSession() as session:
        for recipe in prep.task.default_recipes:
            say(f"[score] {recipe}")
            scores[recipe] = score_split(recipe, outputs.lines, prep.examples, session=session).to_json()
    return Scored(scores, time.perf_counter() - t0)


def time_latency(prep: PreparedRun, outputs: Outputs, items: int) -> tuple[dict[str, Any] | None, float | None]:
    """A single-stream latency measurement on the first ``items`` examples (``--latency-n``), else None."""
    if items <= 0:
        return None, None
    from bench.latency import measure

    t0 = time.perf_counter()
    name = prep.spec.system
    report = measure({name: prep.system}, list(prep.examples.examples), baseline=None, n=items,
                     rounds=3, min_items=min(100, items), reference_outputs={name: outputs.lines},
                     device=prep.device, aa=None)  # one system, no speed-up: no A/A arm to pay for
    return report.record(name), time.perf_counter() - t0


def assemble(prep: PreparedRun, trained: Trained, outputs: Outputs, scored: Scored,
             latency: dict[str, Any] | None, latency_s: float | None) -> RunRecord:
    """The run record, from the stages' values (its fields are documented in docs/run-record.md)."""
    from bench.data import TASKS
    from bench.env.fingerprint import loadavg
    from bench.runs.curves import training_curve
    from bench.scoring.output_stats import output_stats
    from systems import SYSTEMS

    spec, examples = prep.spec, prep.examples
    timings = {"fit_s": trained.seconds, "decode_s": outputs.seconds, "score_s": scored.seconds}
    if latency_s is not None:
        timings["latency_s"] = latency_s
    timings["total_s"] = time.perf_counter() - prep.started
    return RunRecord(
        run_id=spec.run_id,
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        spec=spec.to_json(),
        harness=prep.harness,
        environment={**prep.environment, "device": prep.device, "loadavg_end": loadavg()},
        system={**prep.system.describe().to_json(), "origin": SYSTEMS.meta(spec.system)["origin"]},
        data={
            "split_sha256": examples.sha256,
            "n_examples": len(examples),
            "partial": examples.partial,
            "note": examples.note,
            "task_origin": TASKS.meta(spec.task)["origin"],
        },
        outputs={
            "path": display_path(outputs.path),
            "sha256": outputs.sha256,
            "n": len(outputs.lines),
            **({"resumed": outputs.resumed} if outputs.resumed else {}),
        },
        model={"training_run_id": trained.run_id, "training_key": trained.key,
               "workdir": display_path(trained.workdir)},
        output_stats=output_stats(outputs.lines, [ex.target for ex in examples.examples]),
        training_curve=training_curve(trained.workdir),
        scores=scored.scores,
        latency=latency,
        timings={k: round(v, 3) for k, v in timings.items()},
    )


def _drop_journal(journal: Path) -> None:
    journal.unlink(missing_ok=True)
    if journal.parent.is_dir() and not any(journal.parent.iterdir()):
        journal.parent.rmdir()


def _warn_if_degenerate(stats: dict[str, Any], say: Reporter) -> None:
    from bench.scoring.output_stats import degeneracy

    for reason in degeneracy(stats):
        say(f"[warning] degenerate outputs: {reason}. The scores are recorded but are not evidence of learning.")
