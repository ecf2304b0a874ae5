"""``--launcher local``: N child ``bench run`` processes at a time on this machine, in dependency order.

Why processes and a fixed thread count each: on a CPU box, N runs at T threads each beat one run
at N x T threads (benchmarks/bench_threads.py), as long as N x T does not exceed the cores; beyond
that the runs slow each other down and their timings mean nothing, so the launcher refuses.
A killed launcher (or child) loses nothing: a relaunch skips complete runs and re-runs the others,
which resume from their checkpoints and decode journals.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.api.errors import UserError
from bench.launch import joblog
from bench.launch.command import bench_argv, child_env, merged_env
from bench.launch.plan import Job
from bench.runs import completed_record


class LaunchError(UserError):
    """A launch that cannot start as asked (too many threads, no scheduler); the message says what to do."""


@dataclass
class Outcome:
    """What happened to one job: ``state`` is queued | running | done | complete (already, skipped) |
    failed | skipped (a job it depends on failed)."""

    job: Job
    log: Path
    state: str = "queued"
    rc: int | None = None
    started: float | None = None
    ended: float | None = None
    detail: str = ""


def check_threads(jobs: int, threads: int, cpus: int | None = None) -> None:
    """Refuse more busy threads than cores: the runs would slow each other and time nothing true."""
    cpus = cpus or os.cpu_count() or 1
    if jobs < 1 or threads < 1:
        raise LaunchError(f"--jobs {jobs} --threads-per-job {threads}: both must be at least 1.")
    if jobs * threads > cpus:
        raise LaunchError(
            f"--jobs {jobs} x --threads-per-job {threads} = {jobs * threads} threads, but this machine has {cpus} "
            f"CPU cores. Lower one of them so that jobs x threads <= {cpus} (e.g. --jobs {max(1, cpus // threads)} "
            f"--threads-per-job {threads})."
        )


def resolve_pool(jobs: int | None, threads: int | None, cpus: int | None = None) -> tuple[int, int]:
    """``--jobs`` and ``--threads-per-job`` with the missing one filled in to use every core."""
    cpus = cpus or os.cpu_count() or 1
    if jobs is None and threads is None:
        return cpus, 1
    if jobs is None:
        return max(1, cpus // max(1, threads or 1)), threads or 1
    if threads is None:
        return jobs, max(1, cpus // max(1, jobs))
    return jobs, threads


@dataclass
class _Running:
    proc: subprocess.Popen[bytes]
    out: IO[bytes]


def run_local(
    jobs: Sequence[Job],
    *,
    results_dir: Path,
    logs: Path,
    n_jobs: int,
    threads: int,
    data_dir: Path | None = None,
    console: Any = None,
    poll_s: float = 0.5,
    on_start: Callable[[Outcome, int], None] | None = None,
    device: str | None = None,
) -> list[Outcome]:
    """Run the pending ``jobs`` as child processes, ``n_jobs`` at a time, each after the jobs it depends on.

    A job whose dependency failed is not started (``skipped``); the others go on. ``console``: a rich
    Console for the live view (None: none). ``on_start(outcome, pid)``: called as each child starts.
    Returns one outcome per job, in plan order.
    """
    check_threads(n_jobs, threads)
    outcomes = {job.run_id: Outcome(job, joblog.log_path(logs, job.run_id)) for job in jobs}
    for out in outcomes.values():
        if out.job.state == "done" or completed_record(out.job.spec, results_dir) is not None:
            out.state, out.detail = "complete", "record exists: skipped"
    running: dict[str, _Running] = {}
    live = _live(console, jobs, outcomes)
    try:
        while True:
            _reap(running, outcomes, results_dir)
            _skip_orphans(outcomes)
            _start_ready(jobs, running, outcomes, n_jobs=n_jobs, threads=threads, results_dir=results_dir,
                         data_dir=data_dir, on_start=on_start, device=device)
            if live is not None:
                live.update(_view(jobs, outcomes))
            if not running and not any(o.state == "queued" for o in outcomes.values()):
                break
            time.sleep(poll_s)
    except BaseException:
        _stop_all(running, outcomes)
        raise
    finally:
        if live is not None:
            live.update(_view(jobs, outcomes))
            live.stop()
    return [outcomes[job.run_id] for job in jobs]


def _start_ready(jobs: Sequence[Job], running: dict[str, _Running], outcomes: dict[str, Outcome], *,
                 n_jobs: int, threads: int, results_dir: Path, data_dir: Path | None,
                 on_start: Callable[[Outcome, int], None] | None, device: str | None = None) -> None:
    for job in jobs:
        if len(running) >= n_jobs:
            return
        out = outcomes[job.run_id]
        if out.state != "queued" or not all(_succeeded(outcomes, dep) for dep in job.depends_on):
            continue
        argv = bench_argv(job.spec, results_dir=results_dir, threads=threads, data_dir=data_dir, device=device)
        joblog.mark_launch(out.log, argv, "local")
        fh = out.log.open("ab")
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=merged_env(child_env(threads)))
        joblog.mark_pid(out.log, proc.pid)
        running[job.run_id] = _Running(proc, fh)
        out.state, out.started, out.detail = "running", time.time(), ""
        if on_start is not None:
            on_start(out, proc.pid)


def _succeeded(outcomes: dict[str, Outcome], run_id: str) -> bool:
    """A dependency outside the plan is taken as met (its model is found or trained by the job itself)."""
    return run_id not in outcomes or outcomes[run_id].state in ("done", "complete")


def _reap(running: dict[str, _Running], outcomes: dict[str, Outcome], results_dir: Path) -> None:
    for run_id, child in list(running.items()):
        rc = child.proc.poll()
        if rc is None:
            outcomes[run_id].detail = _last_line(outcomes[run_id].log)
            continue
        child.out.close()
        del running[run_id]
        _finish(outcomes[run_id], rc, results_dir)


def _finish(out: Outcome, rc: int, results_dir: Path) -> None:
    joblog.mark_exit(out.log, rc)
    out.rc, out.ended = rc, time.time()
    if rc == 0 and completed_record(out.job.spec, results_dir) is not None:
        out.state, out.detail = "done", out.job.run_id
        return
    attempt = joblog.read_attempt(out.log)
    why = (attempt.error_line if attempt else "") or f"exit {rc}"
    out.state, out.detail = "failed", f"{out.log}: {why}"


def _skip_orphans(outcomes: dict[str, Outcome]) -> None:
    """A queued job whose dependency failed (or was skipped) will never run: say so, transitively."""
    changed = True
    while changed:
        changed = False
        for out in outcomes.values():
            if out.state != "queued":
                continue
            bad = [d for d in out.job.depends_on if d in outcomes and outcomes[d].state in ("failed", "skipped")]
            if bad:
                out.state, out.detail = "skipped", f"not run: {bad[0]} failed"
                changed = True


def _stop_all(running: dict[str, _Running], outcomes: dict[str, Outcome]) -> None:
    """The launcher is interrupted: stop its children (a relaunch resumes them) and mark their logs."""
    for child in running.values():
        child.proc.terminate()
    deadline = time.time() + 10
    for run_id, child in running.items():
        try:
            rc = child.proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            child.proc.kill()
            rc = child.proc.wait()
        child.out.close()
        joblog.mark_exit(outcomes[run_id].log, rc)
        outcomes[run_id].state, outcomes[run_id].rc = "failed", rc
    running.clear()


def _last_line(log: Path) -> str:
    attempt = joblog.read_attempt(log)
    return attempt.last_line if attempt else ""


def _view(jobs: Sequence[Job], outcomes: dict[str, Outcome]) -> Any:
    from bench.launch.view import duration, state_view

    states = {}
    now = time.time()
    for run_id, out in outcomes.items():
        detail = out.detail
        if out.state == "running" and out.started is not None:
            detail = f"{duration(now - out.started)}  {detail}"
        elif out.state == "done" and out.started is not None and out.ended is not None:
            detail = f"{duration(out.ended - out.started)}  {detail}"
        states[run_id] = (out.state, detail)
    return state_view(jobs, states)


def _live(console: Any, jobs: Sequence[Job], outcomes: dict[str, Outcome]) -> Any:
    if console is None:
        return None
    from rich.live import Live

    live = Live(_view(jobs, outcomes), console=console, refresh_per_second=2, transient=False)
    live.start()
    return live
