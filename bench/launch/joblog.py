"""One log file per run id, with marker lines a launcher writes around each attempt.

Why markers in the log and not a database: the log is the one thing every launcher already has on
a filesystem the user can read (SLURM nodes write it to the shared folder), so ``bench status``
needs nothing but the file to say whether a job is queued, running, stopped or failed, and why.
A relaunch appends a new attempt; only the last one is read.

Markers (each on its own line)::

    === submitted <time> slurm job <id>: <command>      (SLURM: written by the submitting process)
    === launch <time> host=<host> launcher=<name>: <command>
    === pid <pid>
    === exit <code> <time>
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shlex
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MARK = "=== "
_ERROR = re.compile(r"error|exception|traceback|killed|out of memory", re.IGNORECASE)
_TAIL_BYTES = 1 << 20  # a log is read from its last MiB: enough for the last attempt's markers and lines


def default_log_dir(results_dir: Path) -> Path:
    """``<results_dir>/../.cache/launch``: beside the run caches, outside the committed results; for the
    workspace (``.cache/results``), ``<cache root>/launch``."""
    from bench.api.paths import cache_root, workspace_dir

    if Path(results_dir).resolve() == workspace_dir().resolve():
        return cache_root() / "launch"
    return Path(results_dir).resolve().parent / ".cache" / "launch"


def log_path(logs: Path, run_id: str) -> Path:
    return Path(logs) / f"{run_id}.log"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def _append(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line.rstrip("\n") + "\n")


def mark_submitted(path: Path, job_id: str, argv: Sequence[str]) -> None:
    _append(path, f"{MARK}submitted {_now()} slurm job {job_id}: {shlex.join(argv)}")


def mark_launch(path: Path, argv: Sequence[str], launcher: str) -> None:
    _append(path, f"{MARK}launch {_now()} host={socket.gethostname()} launcher={launcher}: {shlex.join(argv)}")


def mark_pid(path: Path, pid: int) -> None:
    _append(path, f"{MARK}pid {pid}")


def mark_exit(path: Path, code: int) -> None:
    _append(path, f"{MARK}exit {code} {_now()}")


@dataclass(frozen=True)
class Attempt:
    """The last attempt recorded in a log: where it ran, whether it ended, and its last words."""

    submitted: str | None = None  # SLURM job id, when a submission marker opens the attempt
    launched: bool = False
    host: str | None = None
    pid: int | None = None
    exit: int | None = None
    last_line: str = ""
    error_line: str = ""

    @property
    def alive_here(self) -> bool | None:
        """Whether the attempt's process still runs: None when it ran on another host (unknowable here)."""
        if self.pid is None or self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def read_attempt(path: Path) -> Attempt | None:
    """The last attempt of ``path`` (None: no log, the job never started)."""
    try:
        with Path(path).open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            text = fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    lines = text.splitlines()  # splits a progress bar's "\r" frames too: the last frame is the last line
    start = max((i for i, line in enumerate(lines) if line.startswith((f"{MARK}submitted ", f"{MARK}launch "))),
                default=0)
    submitted = host = None
    if lines[start:start + 1] and "launcher=slurm" in lines[start]:  # a requeued SLURM job: same job id
        submitted = next((_job_id(line) for line in reversed(lines[:start]) if line.startswith(f"{MARK}submitted ")),
                         None)
    launched = False
    pid = code = None
    body: list[str] = []
    for line in lines[start:]:
        if line.startswith(f"{MARK}submitted "):
            submitted = _job_id(line)
        elif line.startswith(f"{MARK}launch "):
            launched = True
            m = re.search(r"host=(\S+)", line)
            host = m.group(1) if m else None
            pid = code = None
        elif line.startswith(f"{MARK}pid "):
            pid = int(line.split()[2])
        elif line.startswith(f"{MARK}exit "):
            code = int(line.split()[2])
        elif line.strip():
            body.append(line.strip())
    errors = [line for line in body if _ERROR.search(line)]
    last = body[-1] if body else ""
    if code is not None and code < 0:
        errors.append(f"killed by signal {-code}")
    return Attempt(submitted=submitted, launched=launched, host=host, pid=pid, exit=code, last_line=last,
                   error_line=errors[-1] if errors else last)


def _job_id(line: str) -> str:
    m = re.search(r"slurm job (\S+?):", line)
    return m.group(1) if m else "?"
