"""What a launch refuses before it starts anything, checked in one place for the launch and its dry run.

Why one place: ``bench reproduce --dry-run --launcher local --jobs 4 --threads-per-job 2`` on 2 cores
printed a plan and no word, although the real launch refuses those numbers (#40). A dry run is for
finding out what the launch will do, so both call :func:`preflight` and fail with the same line.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.env.counts import at_least
from bench.launch.local import LaunchError, check_threads, resolve_pool


@dataclass(frozen=True)
class Pool:
    """How the runs will be spread: ``jobs`` at a time of ``threads`` threads each (local), or what
    each SLURM job asks for; ``line`` says it in words."""

    jobs: int | None
    threads: int | None
    line: str


def preflight(launcher: str, jobs: int | None, threads: int | None, device: str = "auto", *,
              time_min: int = 24 * 60, gpus: int = 0, cpus_per_task: int | None = None,
              cpus: int | None = None) -> Pool:
    """Every check the ``launcher`` (inline | local | slurm) makes before its first run; raises
    :class:`LaunchError` (or :class:`bench.env.device.DeviceError`) with the launch's own message."""
    from bench.env.device import resolve_device

    if launcher == "inline":
        if jobs is not None:
            raise LaunchError("--jobs needs --launcher local or --launcher slurm (inline runs one run at a time).")
        at_least("--threads-per-job", threads, 1, error=LaunchError)
        resolve_device(device)
        return Pool(1, threads, "inline: one run after another in this process")
    if launcher == "local":
        for option, value in (("--jobs", jobs), ("--threads-per-job", threads)):
            at_least(option, value, 1, error=LaunchError)
        n, t = resolve_pool(jobs, threads, cpus)
        check_threads(n, t, cpus)
        resolve_device(device)  # here, once, not in every child
        return Pool(n, t, f"local launcher: {n} job(s) at a time, {t} thread(s) each")
    if launcher != "slurm":
        raise LaunchError(f"--launcher {launcher}: choose inline, local or slurm.")
    for option, value, low in (("--jobs", jobs, 1), ("--threads-per-job", threads, 1), ("--time-min", time_min, 1),
                               ("--gpus", gpus, 0), ("--cpus-per-task", cpus_per_task, 1)):
        at_least(option, value, low, error=LaunchError)
    try:
        import submitit  # noqa: F401  (the SLURM device is resolved on each job's node, not here)
    except ImportError as exc:
        raise LaunchError(f"--launcher slurm needs submitit ({exc}): pip install 'submitit>=1.5' (or the [slurm] "
                          "extra).") from None
    cpus_each = cpus_per_task or threads or 1
    return Pool(jobs, threads, f"slurm: one job per run, {cpus_each} CPU(s) and {gpus} GPU(s) each, "
                f"{time_min} min at most" + (f", {jobs} at once" if jobs else ""))
