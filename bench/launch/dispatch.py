"""One way to launch a plan of runs, for `bench reproduce PAPER:TABLE` and `bench queue FILE` alike.

:func:`launch` checks the launch (:func:`~bench.launch.preflight.preflight`: the same refusals for a
dry run as for the launch), makes the plan, and hands it to the launcher asked for: ``inline`` (one run
after another in this process), ``local`` (a pool of child ``bench run`` processes) or ``slurm`` (one
SLURM job per run, through submitit). The :class:`Launched` it returns says what happened, including the
one summary of runs that failed or never started (:meth:`Launched.failure`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.launch.local import LaunchError, Outcome
from bench.launch.plan import Job
from bench.launch.preflight import Pool, preflight


@dataclass(frozen=True)
class LaunchRequest:
    """How to launch: the launcher, the pool (``jobs`` at a time, ``threads`` each), the device, SLURM's
    resources per job, whether to run at all (``dry_run``) and where each job logs (None: beside the results)."""

    launcher: str = "inline"
    jobs: int | None = None
    threads: int | None = None
    device: str = "auto"
    partition: str | None = None
    time_min: int = 24 * 60
    gpus: int = 0
    cpus_per_task: int | None = None
    dry_run: bool = False
    logs: Path | None = None


@dataclass
class Launched:
    """A launch's plan and pool and, once it ran, each run's (state, detail) by run id: ``outcomes`` of the
    local pool, what was submitted to SLURM, or the inline runs."""

    label: str
    request: LaunchRequest
    plan: list[Job]
    pool: Pool
    logs: Path
    states: dict[str, tuple[str, str]] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(s == state for s, _ in self.states.values())

    def failure(self) -> str | None:
        """The one line for runs that failed or did not start (None: none), with what to do next."""
        failed, skipped = self.count("failed"), self.count("skipped")
        if not (failed or skipped):
            return None
        return (f"{failed} run(s) of {self.label} failed and {skipped} did not start (they need a failed run's "
                f"model); the logs are in {self.logs}. Fix the cause and run the same command again: complete "
                "runs are skipped, the others resume.")


def launch(label: str, make_plan: Callable[[], list[Job]], request: LaunchRequest, *, results_dir: Path,
           data_dir: Path | None = None, inline_ok: bool = True, say: Callable[[str], None] = print,
           console: Any = None) -> Launched:
    """Check ``request``, make the plan and launch it (with ``request.dry_run``: check and plan only).

    ``label`` names the plan in messages (``mist:6``, a queue file); ``inline_ok=False`` refuses the inline
    launcher (a queue is run in parallel). ``say`` gets the launch's own lines, ``console`` (rich) the local
    pool's live view and the inline runs' progress. Raises :class:`~bench.api.errors.UserError` for a launch
    that cannot start as asked."""
    from bench.launch.joblog import default_log_dir

    if request.launcher == "inline" and not inline_ok:
        raise LaunchError(f"--launcher inline: {label} is run in parallel; use --launcher local or --launcher "
                          "slurm (or `bench run` per line).")
    pool = preflight(request.launcher, request.jobs, request.threads, request.device, time_min=request.time_min,
                     gpus=request.gpus, cpus_per_task=request.cpus_per_task)
    done = Launched(label, request, make_plan(), pool, request.logs or default_log_dir(results_dir))
    if request.dry_run:
        return done
    if request.launcher == "inline":
        _inline(done, results_dir, data_dir, say, console)
    elif request.launcher == "local":
        _local(done, results_dir, data_dir, say, console)
    else:
        _slurm(done, results_dir, data_dir)
    return done


def _inline(done: Launched, results_dir: Path, data_dir: Path | None, say: Callable[[str], None],
            console: Any) -> None:
    from bench.env.threads import set_threads
    from bench.runs.pipeline import execute

    if done.request.threads is not None:
        set_threads(done.request.threads, "--threads-per-job")
    for job in done.plan:
        execute(job.spec, results_dir=results_dir, data_dir=data_dir, say=say, progress=console,
                device=done.request.device)
        done.states[job.run_id] = ("done", "")


def _local(done: Launched, results_dir: Path, data_dir: Path | None, say: Callable[[str], None],
           console: Any) -> None:
    from bench.launch.local import run_local

    assert done.pool.jobs is not None and done.pool.threads is not None  # preflight resolved the local pool
    say(f"{done.pool.line}; logs in {done.logs}")
    done.outcomes = run_local(done.plan, results_dir=results_dir, logs=done.logs, n_jobs=done.pool.jobs,
                              threads=done.pool.threads, data_dir=data_dir, console=console,
                              device=done.request.device)
    done.states = {o.job.run_id: (o.state, o.detail) for o in done.outcomes}


def _slurm(done: Launched, results_dir: Path, data_dir: Path | None) -> None:
    from bench.launch.slurm import SlurmOptions, submit_plan  # preflight has refused a missing submitit

    req = done.request
    options = SlurmOptions(partition=req.partition, time_min=req.time_min, gpus=req.gpus,
                           cpus_per_task=req.cpus_per_task or req.threads or 1, parallelism=req.jobs)
    subs = submit_plan(done.plan, results_dir=results_dir, logs=done.logs, options=options, threads=req.threads,
                       data_dir=data_dir, say=lambda msg: None, device=req.device)
    done.states = {s.plan.run_id: (s.state, s.detail or f"slurm job {s.job_id}") for s in subs}
