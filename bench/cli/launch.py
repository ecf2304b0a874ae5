"""Many runs at once: `bench reproduce PAPER:TABLE`, `bench queue FILE` (both launched by
:func:`bench.launch.dispatch.launch`) and `bench status PAPER:TABLE`."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import DataDir, DeviceOpt, ResultsDir

if TYPE_CHECKING:
    from bench.launch.dispatch import Launched


class Launcher(str, Enum):
    inline = "inline"
    local = "local"
    slurm = "slurm"


LogsOpt = Annotated[Path | None, typer.Option(
    "--logs", help="One log per job, <run id>.log (default: .cache/launch beside the --results-dir folder).")]
JobsOpt = Annotated[int | None, typer.Option(
    help="local: runs at once (default: cores / --threads-per-job); slurm: runs at once of those that wait for "
    "nothing (a job array).")]
ThreadsOpt = Annotated[int | None, typer.Option(
    help="`bench run --threads` of each job (local default: cores / --jobs; slurm: --cpus-per-task).")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Print the plan (runs, dependencies, what is done, estimates) and run nothing.")]
PartitionOpt = Annotated[str | None, typer.Option(help="slurm: partition (default: the cluster's).")]
TimeOpt = Annotated[int, typer.Option(help="slurm: time limit of each job in minutes (a job that reaches it is "
                                      "requeued and resumes from its checkpoint).")]
GpusOpt = Annotated[int, typer.Option(help="slurm: GPUs per job.")]
CpusOpt = Annotated[int | None, typer.Option(help="slurm: CPUs per job (default: --threads-per-job, else 1).")]


@ui.app.command("reproduce")
def reproduce(
    target: Annotated[str, typer.Argument(help="paper:table, e.g. mist:1")],
    budget: Annotated[str, typer.Option(help="smoke | cpu | paper")] = "cpu",
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
    launcher: Annotated[Launcher, typer.Option(
        help="inline: one run after another in this process; local: --jobs child `bench run`s at a time on "
        "this machine; slurm: one SLURM job per run, through submitit.")] = Launcher.inline,
    jobs: JobsOpt = None, threads_per_job: ThreadsOpt = None, dry_run: DryRunOpt = False, logs: LogsOpt = None,
    partition: PartitionOpt = None, time_min: TimeOpt = 24 * 60, gpus: GpusOpt = 0, cpus_per_task: CpusOpt = None,
    device: DeviceOpt = "auto",
) -> None:
    """Run every runnable row of a paper table (skipping completed runs), then render it.

    With --launcher local or slurm the runs go in parallel; a run that decodes another run's trained
    model (decode-only settings, e.g. MIST Table 6) starts after it. Relaunching skips complete runs
    and resumes the others from their checkpoints; `bench status PAPER:TABLE` shows where each stands.
    """
    from bench.api.errors import UserError
    from bench.launch.dispatch import LaunchRequest, launch
    from bench.launch.plan import plan_table
    from bench.papers import parse_table_ref
    from bench.runs.folders import folders, load_all

    where = folders(results_dir)  # runs go to the workspace; a row the committed results hold is done
    request = LaunchRequest(launcher.value, jobs, threads_per_job, device, partition, time_min, gpus, cpus_per_task,
                            dry_run, logs)
    try:
        paper, table = parse_table_ref(target)
        done = launch(f"{paper}:{table}", lambda: plan_table(paper, table, budget, where.write, where.read[1:]),
                      request, results_dir=where.write, data_dir=data_dir, say=ui.say(ui.console), console=ui.console)
    except (UserError, ValueError) as exc:
        ui.fail(str(exc))
    if not done.plan:
        ui.console.print(ui.plain(f"No row of {paper} table {table} can run at budget {budget}."))
    _render_launch(done, f"{paper}:{table} at budget {budget}")
    if launcher is not Launcher.slurm and not dry_run:
        from bench import report

        if launcher is Launcher.local:
            ui.console.line()
        typer.echo(report.render_table(paper, table, load_all(where), budget))
    if (failure := done.failure()) is not None:
        ui.fail(failure, code=1)
    if launcher is Launcher.slurm and not dry_run:
        ui.console.print(ui.plain(f"`bench status {paper}:{table} --budget {budget}` shows where each job stands."))


@ui.app.command("queue")
def queue_cmd(
    file: Annotated[Path, typer.Argument(help="One `bench run` option line per run (# comments, blank lines ok).")],
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
    launcher: Annotated[Launcher, typer.Option(
        help="local: --jobs child `bench run`s at a time on this machine; slurm: one SLURM job per run, through "
        "submitit.")] = Launcher.local,
    jobs: JobsOpt = None, threads_per_job: ThreadsOpt = None, dry_run: DryRunOpt = False, logs: LogsOpt = None,
    partition: PartitionOpt = None, time_min: TimeOpt = 24 * 60, gpus: GpusOpt = 0, cpus_per_task: CpusOpt = None,
    device: DeviceOpt = "auto",
) -> None:
    """Run a queue file of `bench run` lines in parallel: decode-only runs wait for the run that trains
    their model, complete runs are skipped, a relaunch resumes the rest (how this project queues its runs)."""
    from bench.api.errors import UserError
    from bench.launch.dispatch import LaunchRequest, launch
    from bench.launch.plan import plan_specs
    from bench.launch.queue import read_queue
    from bench.runs.folders import folders

    where = folders(results_dir)
    request = LaunchRequest(launcher.value, jobs, threads_per_job, device, partition, time_min, gpus, cpus_per_task,
                            dry_run, logs)
    try:
        done = launch(str(file), lambda: plan_specs(read_queue(file), where.write, where.read[1:]), request,
                      results_dir=where.write, data_dir=data_dir, inline_ok=False, say=ui.say(ui.console),
                      console=ui.console)
    except (UserError, ValueError) as exc:
        ui.fail(str(exc))
    _render_launch(done, str(file))
    if (failure := done.failure()) is not None:
        ui.fail(failure, code=1)


def _render_launch(done: Launched, title: str) -> None:
    """A dry run's plan and how the runs would spread; what SLURM was given (the local pool shows itself live)."""
    from bench.env.term_layout import print_fitted
    from bench.launch.view import plan_rows, state_rows

    if done.request.dry_run:
        print_fitted(plan_rows(done.plan, title=f"{title} ({done.request.launcher} launcher)"), ui.console)
        ui.console.print(done.pool.line, markup=False)
    elif done.request.launcher == "slurm":
        print_fitted(state_rows(done.plan, done.states, title=f"submitted to SLURM; logs in {done.logs}"), ui.console)


@ui.app.command("status")
def status_cmd(
    target: Annotated[str | None, typer.Argument(help="paper:table, e.g. mist:6 (none: list the targets)")] = None,
    budget: Annotated[str, typer.Option(help="Budget of the runs.")] = "cpu",
    results_dir: ResultsDir = None,
    logs: LogsOpt = None,
) -> None:
    """Where each run of a table stands: done (its record), running (the last line of its log),
    failed (the log and its last error line), stopped (killed; a relaunch resumes it), queued on SLURM,
    skipped (a run it needs failed), or not started."""
    from bench.api.registry import RegistryError
    from bench.env.term_layout import print_fitted
    from bench.launch.joblog import default_log_dir
    from bench.launch.plan import plan_table
    from bench.launch.status import plan_status
    from bench.launch.view import state_rows, target_rows
    from bench.papers import parse_table_ref
    from bench.runs.folders import folders

    where = folders(results_dir)
    logs = logs or default_log_dir(where.write)
    try:
        if target is None:
            print_fitted(target_rows(budget), ui.console)
            return
        paper, table = parse_table_ref(target)
        if not logs.is_dir():  # a typo is not "nothing started"; runs that failed before any record left logs
            where.existing()
        plan = plan_table(paper, table, budget, where.write, where.read[1:])
    except (RegistryError, ValueError) as exc:
        ui.fail(str(exc))
    statuses = plan_status(plan, where.write, logs, where.read[1:])
    print_fitted(state_rows(plan, {rid: (s.state, s.detail) for rid, s in statuses.items()},
                            title=f"{paper}:{table} at budget {budget}"), ui.console)
    counts: dict[str, int] = {}
    for s in statuses.values():
        counts[s.state] = counts.get(s.state, 0) + 1
    ui.console.print(ui.plain(", ".join(f"{n} {state}" for state, n in counts.items()) or "no runnable row"))

