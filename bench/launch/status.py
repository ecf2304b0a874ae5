"""Where each job of a plan stands, from its record and its launcher log alone.

Why no launcher state: the launcher may be gone (a closed terminal, a SLURM submission that
returned at once); the record and the log are what is left, so they must be enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.launch.joblog import log_path, read_attempt
from bench.launch.plan import Job
from bench.runs import completed_record, record_path


@dataclass(frozen=True)
class JobStatus:
    """``state``: done | done on a subset (a ``--limit N`` run of the same spec is complete, the whole split is
    not) | running | queued | stopped | failed | skipped (a job it needs failed) | not started; ``detail``: the
    one line that says why."""

    state: str
    detail: str
    log: Path


SUBSET = "done on a subset"


def subset_runs(job: Job, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Complete records of ``job``'s spec over a ``--limit N`` subset (the tables and boards show these when the
    whole split has no run), the most examples first."""
    if job.spec.limit is not None:
        return []
    want = {k: v for k, v in job.spec.to_json().items()}
    found = [r for r in records if r.get("status") == "complete" and r["spec"].get("limit") is not None
             and {k: v for k, v in r["spec"].items() if k != "limit"} == want]
    return sorted(found, key=lambda r: (-int(r["spec"]["limit"]), str(r.get("created", ""))))


def job_status(job: Job, results_dir: Path, logs: Path, records: Sequence[dict[str, Any]] = (),
               done_in: Sequence[Path] = ()) -> JobStatus:
    """Where ``job`` stands; ``records`` (the folder's records) let a job without a whole-split run say that a
    ``--limit N`` run of it is done; ``done_in``: other folders whose record of it counts (the committed results)."""
    log = log_path(logs, job.run_id)
    for folder in (results_dir, *done_in):
        if Path(folder).is_dir() and completed_record(job.spec, Path(folder)) is not None:
            return JobStatus("done", record_path(job.spec, Path(folder)).stem, log)  # the record id
    attempt = read_attempt(log)
    subsets = subset_runs(job, records)
    if attempt is None and subsets:
        best = subsets[0]
        more = f" (and {len(subsets) - 1} smaller)" if len(subsets) > 1 else ""
        return JobStatus(SUBSET, f"first {int(best['spec']['limit']):,} examples: {best['run_id']}{more}; "
                         "the whole split has no run", log)
    if attempt is None:
        return JobStatus("not started", "", log)
    if attempt.exit is not None:
        why = attempt.error_line or f"exit {attempt.exit}"
        if attempt.exit == 0:
            why = f"exited 0 without a complete record; {why}"
        return JobStatus("failed", f"{log}: {why}", log)
    if not attempt.launched:
        return JobStatus("queued", f"slurm job {attempt.submitted}", log)
    alive = attempt.alive_here
    if alive is False:
        return JobStatus("stopped", f"process {attempt.pid} is gone (killed?); relaunch resumes it. {log}: "
                         f"{attempt.last_line}", log)
    where = f"slurm job {attempt.submitted} on {attempt.host}" if attempt.submitted else f"pid {attempt.pid}"
    return JobStatus("running", f"{where}: {attempt.last_line}", log)


def plan_status(jobs: Sequence[Job], results_dir: Path, logs: Path,
                done_in: Sequence[Path] = ()) -> dict[str, JobStatus]:
    """:func:`job_status` of every job, except that a job still waiting for a failed job says it will not run
    (a SLURM dependent cancelled by ``--kill-on-invalid-dep`` leaves no trace in its log)."""
    from bench.store.records import load_records

    records = [r for d in (results_dir, *done_in) if Path(d).is_dir() for r in load_records(d)]
    statuses = {job.run_id: job_status(job, results_dir, logs, records, done_in) for job in jobs}
    for job in jobs:  # plan order: a job's dependencies are settled before it
        status = statuses[job.run_id]
        failed = [d for d in job.depends_on if d in statuses and statuses[d].state in ("failed", "skipped")]
        if failed and status.state in ("queued", "not started"):
            statuses[job.run_id] = replace(status, state="skipped", detail=f"not run: {failed[0]} failed")
    return statuses
