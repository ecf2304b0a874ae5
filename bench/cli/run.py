"""One run at a time: `bench run` (train, decode, score, record), `bench submit` (outputs made elsewhere),
`bench rescore` (stored outputs under recipes a record lacks) and `bench refile` (a record to another spec)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import DataDir, DeviceOpt, ResultsDir


@ui.app.command("run")
def run(
    system: Annotated[str, typer.Option(help="Registered system name (bench ls systems).")],
    task: Annotated[str, typer.Option(help="Task name (bench ls tasks).")],
    split: Annotated[str | None, typer.Option(help="Split to decode and score (default: test, or the "
                                              "available partial test split where the full one is absent).")] = None,
    budget: Annotated[str, typer.Option(help="smoke | cpu | paper")] = "smoke",
    seed: Annotated[int, typer.Option(help="Random seed (part of the run identity).")] = 42,
    set_: Annotated[list[str], typer.Option("--set", help="Override key=value (repeatable).")] = [],  # noqa: B006
    force: Annotated[bool, typer.Option(help="Re-run even if a complete record exists.")] = False,
    fresh: Annotated[bool, typer.Option(help="Re-run from scratch: discard the model's training workdir "
                                        "(checkpoints, decode journal) first: the fix for a corrupt checkpoint.")
                 ] = False,
    limit: Annotated[int | None, typer.Option(help="Decode only the first N examples (smoke: 200).")] = None,
    latency_n: Annotated[int, typer.Option(help="Also time N items at batch size 1 (0 = skip).")] = 0,
    results_dir: ResultsDir = None,
    threads: Annotated[int | None, typer.Option(help="Torch threads for this run (recorded in the environment). "
                                                "On 2 cores, two runs at --threads 1 train 1.09x more updates "
                                                "per hour than one at 2 (benchmarks/bench_threads.py).")] = None,
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
    score: Annotated[bool, typer.Option(help="--no-score: write the outputs and an 'unscored' record without "
                                        "running the metric tools (a GPU machine without Java/Perl); `bench "
                                        "rescore` or a later `bench run` scores them.")] = True,
    wait: Annotated[bool, typer.Option(help="When the same run (or its model's training) is already running: "
                                       "wait for it (the default, saying once for whom), or --no-wait: refuse "
                                       "at once, naming that process (exit 1).")] = True,
    stand_in: Annotated[bool, typer.Option("--stand-in", help="At --budget cpu, when the system's backbone has no "
                                           "offline copy, run its cpu stand-in (bench ls systems) instead of "
                                           "naming it; the record is the stand-in's.")] = False,
    brief: Annotated[bool, typer.Option("--brief", help="Print the headline score in one line, not every "
                                        "recipe's table (`bench show` prints those).")] = False,
) -> None:
    """Train (or load) -> decode -> score -> (time) -> record one run."""
    from bench.api.registry import RegistryError
    from bench.data import DataError, default_eval_split
    from bench.env.threads import set_threads
    from bench.runs import RunSpec, check_limit, check_seed, parse_overrides
    from bench.runs.folders import folders, record_file
    from bench.runs.lock import LockBusy
    from bench.runs.paths import said_path
    from bench.runs.pipeline import execute
    from bench.store.records import outputs_file

    where = folders(results_dir)
    ui.check_counts(("--threads", threads, 1), ("--latency-n", latency_n, 0))
    try:
        if threads is not None:
            set_threads(threads)
        check_limit(limit)  # before the split is looked up or built: a bad number writes nothing
        check_seed(seed)
        if split is None:
            split = default_eval_split(task, data_dir)
            ui.console.print(f"split: [bold]{ui.lit(split)}[/]")
        spec = RunSpec(system=system, task=task, split=split, budget=budget,
                       overrides=parse_overrides(set_), seed=seed, limit=limit)
        from bench.runs.resolve import resolve_here

        spec, notes = resolve_here(spec, data_dir, use_stand_in=stand_in)
        for label, value, why in notes:
            ui.console.print(f"{label}: [bold]{ui.lit(value)}[/] {ui.lit(why)}")
        record = execute(spec, results_dir=where.write, data_dir=data_dir, force=force,
                         latency_items=latency_n, say=ui.say(ui.console), progress=ui.console, device=device,
                         score_outputs=score, wait=wait, fresh=fresh, done_in=where.read[1:])
    except LockBusy as exc:  # not bad input: the machine is busy with the same run
        ui.fail(str(exc), code=1)
    except (RegistryError, DataError, ValueError) as exc:
        ui.fail(str(exc))
    written = record_file(record, where.write)
    if brief:
        from bench.report.term_views import brief_line

        ui.console.print(ui.plain(brief_line(record, ui.shown(where.write) if results_dir is not None else None)))
        return
    outputs = outputs_file(record, written)  # the file beside the record, said from here: the stored label is
    ui.print_scores(record, said_path(outputs) if outputs is not None else None)  # checkout-relative
    ui.print_where(written)


@ui.app.command("submit")
def submit_cmd(
    name: Annotated[str, typer.Option(help="Name the outputs are shown under (letters, digits, _ . + -).")],
    task: Annotated[str, typer.Option(help="Task whose split holds the references (bench ls tasks).")],
    hyp: Annotated[Path, typer.Option(help="The outputs, one per example of the split, in split order.")],
    split: Annotated[str, typer.Option(help="Split the outputs are for (XSum's published outputs: "
                                       "test-refs).")] = "test",
    paper: Annotated[str | None, typer.Option(help="Paper table the outputs stand beside, e.g. mist:1.")] = None,
    row: Annotated[str | None, typer.Option(help="That table's row (label or id) whose published number the "
                                            "outputs are, e.g. 'BART(Lewis et al. 2020)'.")] = None,
    meta: Annotated[list[str], typer.Option("--meta", help="key=value the record keeps (who, what, where from); "
                                            "repeatable.")] = [],  # noqa: B006
    results_dir: ResultsDir = None,
    force: Annotated[bool, typer.Option(help="Score again even if these outputs were submitted before.")] = False,
    copy: Annotated[bool, typer.Option(help="Keep a copy under the results folder's outputs/ (--no-copy: record "
                                       "the file's path and sha256 only, for third-party releases).")] = True,
    data_dir: DataDir = None,
) -> None:
    """Score a file of outputs made elsewhere under every default recipe of the task and record it as a
    submission (kind `external`): shown in tables and the leaderboard as a submitted row, never as a reproduction."""
    from bench.api.registry import RegistryError
    from bench.data import DataError
    from bench.runs.folders import write_dir
    from bench.scoring import ScoringError
    from bench.workflows.submit import parse_meta, submit

    try:
        record = submit(name, task, split, hyp, paper=paper, row=row, meta=parse_meta(meta),
                        results_dir=write_dir(results_dir), data_dir=data_dir, force=force, copy=copy)
    except (RegistryError, DataError, ScoringError, ValueError) as exc:
        ui.fail(str(exc))
    ui.print_scores(record)
    ui.print_where(write_dir(results_dir) / f"{record['run_id']}.json")


@ui.app.command("rescore")
def rescore_cmd(
    run_ids: Annotated[list[str] | None, typer.Argument(help="Run ids (default: every record).")] = None,
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
) -> None:
    """Score stored outputs under the task's default recipes a record lacks, and add missing output
    statistics (outputs and test split checked by sha256; no re-run)."""
    from bench.runs.folders import folder_to_change
    from bench.runs.rescore import RescoreError, rescore

    try:  # a typo'd folder is an error, not "nothing to rescore"; committed records only with --results-dir
        folder = folder_to_change(run_ids or [], results_dir)
    except ValueError as exc:
        ui.fail(str(exc))
    paths = [folder / f"{r}.json" for r in run_ids] if run_ids else sorted(folder.glob("*.json"))
    for path in paths:
        if not path.is_file():
            ui.fail(f"{ui.shown(path)} not found; `bench ls runs` lists the recorded runs.")
        try:
            added = rescore(path, data_dir=data_dir, say=ui.say(ui.console))
        except RescoreError as exc:
            ui.fail(str(exc))
        done = f"added {', '.join(added)}" if added else "nothing missing"
        ui.console.print(ui.plain(f"{ui.shown(path)}: {done}"))


@ui.app.command("refile")
def refile_cmd(
    run_id: Annotated[str, typer.Argument(help="A recorded run id (`ls results`).")],
    set_: Annotated[list[str], typer.Option("--set", help="Pin a setting the record was made with, key=value "
                                            "(repeatable).")] = [],  # noqa: B006
    unset: Annotated[list[str], typer.Option("--unset", help="Drop an override the preset now resolves to the "
                                             "recorded value (repeatable).")] = [],  # noqa: B006
    results_dir: ResultsDir = None,
) -> None:
    """Move a record to another spec that resolves to exactly its settings and model, without re-running it:
    after a calibration moved a preset, pin the old preset's records (--set steps=2400) and give the
    calibration point's runs to the preset (--unset steps)."""
    from bench.runs import parse_overrides
    from bench.runs.folders import folder_to_change
    from bench.workflows.refile import RefileError, refile

    try:
        folder = folder_to_change([run_id], results_dir)
        dest = refile(run_id, parse_overrides(set_), list(unset), folder)
    except (RefileError, ValueError) as exc:  # RunLookupError (no such record) is a ValueError
        ui.fail(str(exc))
    ui.console.print(ui.plain(f"{ui.shown(folder / run_id)}.json -> {ui.shown(dest)} (outputs moved with it; "
                              "`bench order …` recomputes orderings that named it)"))
