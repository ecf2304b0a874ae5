"""``--launcher slurm``: every job of a plan as a SLURM job, submitted through submitit.

Why submitit and SLURM dependencies: the scheduler, not a process on the login node, must hold a
decode-only job until the run that trains its model has finished (``--dependency=afterok:<id>``,
with ``--kill-on-invalid-dep=yes`` so a failed training cancels its dependents instead of leaving
them pending forever). The submitting command returns at once; ``bench status`` reads the jobs'
logs. Jobs are :class:`submitit.helpers.Checkpointable`: a job that reaches its time limit is
requeued by submitit, and the same ``bench run`` resumes from its last checkpoint.

submitit's ``local`` and ``debug`` executors (tests, a laptop) have no scheduler to hold jobs back,
so there the jobs are submitted in dependency order, each once the jobs it needs have finished.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import submitit

from bench.launch import joblog
from bench.launch.command import bench_argv, child_env, merged_env
from bench.launch.local import LaunchError
from bench.launch.plan import Job


@dataclass(frozen=True)
class SlurmOptions:
    """What each job asks the scheduler for. ``parallelism``: how many of the jobs that wait for
    nothing run at once (they are submitted as one job array); None: as many as SLURM allows."""

    partition: str | None = None
    time_min: int = 24 * 60
    gpus: int = 0
    cpus_per_task: int = 1
    parallelism: int | None = None


def executor_parameters(options: SlurmOptions, name: str = "bench") -> dict[str, Any]:
    """``AutoExecutor.update_parameters`` keywords (None values are left to the cluster's defaults)."""
    return {
        "name": name,
        "timeout_min": options.time_min,
        "cpus_per_task": options.cpus_per_task,
        "gpus_per_node": options.gpus or None,
        "slurm_partition": options.partition,
        "slurm_array_parallelism": options.parallelism,
    }


def dependency_parameters(job_ids: Sequence[str]) -> dict[str, Any]:
    """SLURM dependency flags for a job that must start after ``job_ids`` succeeded (none: no flags)."""
    if not job_ids:
        return {"slurm_additional_parameters": {}}
    return {"slurm_additional_parameters": {"dependency": "afterok:" + ":".join(job_ids),
                                            "kill-on-invalid-dep": "yes"}}


class BenchJob(submitit.helpers.Checkpointable):
    """One ``bench run`` on a node, its output appended to the job's log (the one `bench status` reads).

    A non-zero exit raises, so SLURM marks the job failed and ``afterok`` never releases its dependents.
    """

    def __init__(self, argv: list[str], log: str, env: dict[str, str], cwd: str, cluster: str = "slurm") -> None:
        self.argv, self.log, self.env, self.cwd, self.cluster = argv, log, env, cwd, cluster

    def __call__(self) -> str:
        log = Path(self.log)
        joblog.mark_launch(log, self.argv, "slurm" if self.cluster == "slurm" else f"submitit-{self.cluster}")
        with log.open("ab") as fh:
            proc = subprocess.Popen(self.argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=merged_env(self.env), cwd=self.cwd)
            joblog.mark_pid(log, proc.pid)
            try:
                rc = proc.wait()
            except BaseException:  # the job is cancelled or requeued: stop the run; its checkpoints stay
                proc.terminate()
                rc = proc.wait()
                joblog.mark_exit(log, rc)
                raise
        joblog.mark_exit(log, rc)
        if rc != 0:
            attempt = joblog.read_attempt(log)
            raise RuntimeError(f"bench run exited {rc}: {attempt.error_line if attempt else ''} (log: {log})")
        return self.log


@dataclass
class Submitted:
    """One job of the plan and its submitit job. ``state``: pending (not submitted yet) | submitted |
    active (left pending or running by an earlier submission) | complete (already: not submitted) |
    done | failed | skipped (local/debug executors, which run the jobs here)."""

    plan: Job
    log: Path
    job: Any = None
    state: str = "pending"
    detail: str = ""

    @property
    def job_id(self) -> str | None:
        return None if self.job is None else str(self.job.job_id)


def make_executor(folder: Path, cluster: str) -> Any:
    try:
        return submitit.AutoExecutor(folder=folder, cluster=cluster)
    except RuntimeError as exc:  # SlurmExecutor: 'Could not detect "srun"'
        raise LaunchError(f"--launcher slurm: no SLURM cluster here ({exc}). Run `bench reproduce` on a login "
                          "node of the cluster, or use --launcher local on this machine.") from exc


def submit_plan(
    jobs: Sequence[Job],
    *,
    results_dir: Path,
    logs: Path,
    options: SlurmOptions,
    threads: int | None = None,
    data_dir: Path | None = None,
    cluster: str = "slurm",
    say: Callable[[str], None] = print,
    poll_s: float = 1.0,
    device: str | None = None,
) -> list[Submitted]:
    """Submit every pending job of the plan; on ``cluster="slurm"`` return at once (the scheduler
    orders them), on submitit's ``local``/``debug`` executors run them in dependency order and
    return when all have ended. ``threads``: ``bench run --threads`` (default: the CPUs per task)."""
    import os

    threads = threads or options.cpus_per_task
    executor = make_executor(Path(logs) / "submitit", cluster)
    subs = {job.run_id: Submitted(job, joblog.log_path(logs, job.run_id)) for job in jobs}
    for sub in subs.values():
        if sub.plan.state == "done":
            sub.state, sub.detail = "complete", "record exists: skipped"
    env, cwd = child_env(threads), os.getcwd()

    def task(job: Job) -> BenchJob:
        argv = bench_argv(job.spec, results_dir=results_dir, threads=threads, data_dir=data_dir, device=device)
        return BenchJob(argv, str(subs[job.run_id].log), env, cwd, cluster)

    if cluster == "slurm":
        _keep_active(jobs, subs, Path(logs) / "submitit")
        pending = [job for job in jobs if subs[job.run_id].state == "pending"]
        _submit_with_dependencies(executor, pending, subs, options, task)
        for sub in subs.values():
            if sub.job is not None and sub.state == "submitted":
                joblog.mark_submitted(sub.log, sub.job_id or "?", task(sub.plan).argv)
                say(f"[slurm] {sub.job_id} {sub.plan.run_id}")
        return [subs[job.run_id] for job in jobs]
    pending = [job for job in jobs if subs[job.run_id].state == "pending"]
    _run_in_order(executor, pending, subs, options, task, say, poll_s)
    return [subs[job.run_id] for job in jobs]


#: sacct states of a job that will still run: a relaunch must not submit a second copy of it
ACTIVE = frozenset({"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING",
                    "SUSPENDED", "RESIZING"})


def _keep_active(jobs: Sequence[Job], subs: dict[str, Submitted], folder: Path) -> None:
    """Jobs an earlier submission left pending or running keep that SLURM job (its state asked of sacct
    through submitit): a second copy would train into the same workdir at the same time. Their
    dependents, if submitted now, wait for that job's id."""
    for job in jobs:
        sub = subs[job.run_id]
        attempt = joblog.read_attempt(sub.log)
        if sub.state != "pending" or attempt is None or attempt.submitted is None or attempt.exit is not None:
            continue
        handle: submitit.SlurmJob[Any] = submitit.SlurmJob(folder=folder, job_id=attempt.submitted)
        state = handle.watcher.get_state(attempt.submitted, mode="force")
        if state.split(" ")[0] in ACTIVE:
            sub.job, sub.state = handle, "active"
            sub.detail = f"slurm job {attempt.submitted} ({state.lower()}), submitted earlier"


def _waits_for(job: Job, subs: dict[str, Submitted]) -> list[str]:
    """The dependencies of ``job`` that are not complete yet (a dependency outside the plan counts as met)."""
    return [d for d in job.depends_on if d in subs and subs[d].state != "complete"]


def _submit_with_dependencies(executor: Any, pending: Sequence[Job], subs: dict[str, Submitted],
                              options: SlurmOptions, task: Callable[[Job], BenchJob]) -> None:
    """Jobs that wait for nothing go in one array (``--array ...%parallelism``); every other job is
    submitted after its dependencies, naming their job ids in ``afterok``."""
    roots = [job for job in pending if not _waits_for(job, subs)]
    executor.update_parameters(**executor_parameters(options), **dependency_parameters([]))
    if roots:
        with executor.batch():
            handles = [executor.submit(task(job)) for job in roots]
        for job, handle in zip(roots, handles, strict=True):
            subs[job.run_id].job, subs[job.run_id].state = handle, "submitted"
    for job in pending:  # plan order: a job's dependencies are submitted before it
        if subs[job.run_id].job is not None:
            continue
        ids = [subs[d].job_id for d in _waits_for(job, subs)]
        if any(i is None for i in ids):
            raise LaunchError(f"{job.run_id}: a job it depends on was not submitted before it (plan out of order)")
        executor.update_parameters(**executor_parameters(options, name=f"bench-{job.label}"),
                                   **dependency_parameters([i for i in ids if i is not None]))
        subs[job.run_id].job, subs[job.run_id].state = executor.submit(task(job)), "submitted"


def _run_in_order(executor: Any, pending: Sequence[Job], subs: dict[str, Submitted], options: SlurmOptions,
                  task: Callable[[Job], BenchJob], say: Callable[[str], None], poll_s: float) -> None:
    """No scheduler holds jobs back here: submit each job once its dependencies have succeeded."""
    executor.update_parameters(**executor_parameters(options))
    waiting = list(pending)
    active: dict[str, Any] = {}
    while waiting or active:
        for job in list(waiting):
            deps = [subs[d] for d in job.depends_on if d in subs]
            if any(d.state in ("failed", "skipped") for d in deps):
                subs[job.run_id].state, subs[job.run_id].detail = "skipped", "not run: a job it depends on failed"
                waiting.remove(job)
            elif all(d.state in ("complete", "done") for d in deps):
                handle = executor.submit(task(job))
                subs[job.run_id].job, subs[job.run_id].state, active[job.run_id] = handle, "submitted", handle
                say(f"[{executor.cluster}] {handle.job_id} {job.run_id}")
                waiting.remove(job)
        if not active:
            if waiting:  # nothing runs and nothing can start: only a broken plan gets here
                raise LaunchError(f"{waiting[0].run_id}: waits for a job that never runs (plan out of order)")
            continue
        finished = [rid for rid, handle in active.items() if handle.done()]
        for rid in finished:
            handle = active.pop(rid)
            try:
                handle.result()
                subs[rid].state, subs[rid].detail = "done", rid
            except Exception as exc:  # submitit's FailedJobError: the job's log says why, in its own words
                attempt = joblog.read_attempt(subs[rid].log)
                why = attempt.error_line if attempt and attempt.launched else f"{type(exc).__name__}: {exc}"
                subs[rid].state, subs[rid].detail = "failed", f"{subs[rid].log}: {why}"
        if not finished:
            time.sleep(poll_s)
