"""One process at a time per run id and per training workdir: a file lock that names its holder.

Why: two identical ``bench run`` commands started together both trained in one workdir (#40): every
log line twice, each pruning the other's checkpoints, and a ``fit_s`` that timed both. A run holds
a lock on its run id (beside its record) for its whole life, and a lock on the training workdir
while it fits, because two run ids can share one model (decode-only settings; a calibration point
and the preset that adopted it). A second run waits, saying once for whom, or with ``--no-wait``
refuses in one line.

Why ``fcntl.flock`` and not a file created exclusively: the kernel drops the lock when its process
dies, however it dies, so a killed run never blocks the next one. The file only *names* the holder
(pid, host, since when, what), for the waiter's message. A file that still names a holder when the
lock is got was left by a process that died holding it (SIGKILL, a crash, a reboot): that stale
lock is taken over, and said so. The file is removed on release, with any folder made for it, so a
run leaves nothing behind in ``results/`` but its record, and a failed one nothing at all.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.api.errors import UserError

#: folder of run-id locks inside a results folder (hidden: readers glob ``*.json``; emptied on release)
RUN_LOCKS = ".locks"


class LockError(UserError):
    """A lock that cannot be made: its folder cannot be written."""


class LockBusy(LockError):
    """The lock is held and the caller asked not to wait; the message names the holder."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its file says."""

    pid: int
    host: str
    since: str  # local time, ISO seconds
    what: str  # e.g. "bench run <run id>"

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} since {self.since} ({self.what})"

    def alive(self) -> bool | None:
        """Whether the process still exists: None on another host (it cannot be asked from here)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # exists, owned by someone else
            return True
        return True


def run_lock_path(results_dir: Path, run_id: str) -> Path:
    """The lock of one run id: beside its record, in a hidden folder that is empty between runs."""
    return Path(results_dir) / RUN_LOCKS / f"{run_id}.lock"


def workdir_lock_path(workdir: Path) -> Path:
    """The lock of a training workdir: a sibling file, so a system that clears its workdir keeps it."""
    workdir = Path(workdir)
    return workdir.with_name(f"{workdir.name}.lock")


@contextlib.contextmanager
def held(path: Path, what: str, *, wait: bool = True, say: Callable[[str], None] = print,
         timeout: float | None = None, poll_s: float = 0.5) -> Iterator[Holder]:
    """Hold the lock ``path`` for the block; ``what`` says what for (the waiter's message shows it).

    Held by another process: with ``wait`` one ``[lock] waiting for ...`` line is said and the call
    blocks until the holder ends (``timeout`` seconds at most, then :class:`LockBusy`); without it,
    :class:`LockBusy` names the holder at once. Yields this process's :class:`Holder`.
    """
    made: list[Path] = []
    try:
        lock = _acquire(Path(path), what, made, wait=wait, say=say, timeout=timeout, poll_s=poll_s)
    except BaseException:  # refused, interrupted while waiting, or unwritable: leave no folder behind
        _Lock(Path(path), None, Holder(0, "", "", ""), made).release()
        raise
    try:
        yield lock.me
    finally:
        lock.release()


@dataclass
class _Lock:
    path: Path
    fd: int | None  # None: the filesystem has no locks (said once; the run goes on unlocked)
    me: Holder
    made: list[Path]  # folders made for the lock file, deepest last: removed on release if empty

    def release(self) -> None:
        if self.fd is not None:
            try:
                if _same_file(self.fd, self.path):  # unlink while still holding it: see _acquire
                    self.path.unlink()
            finally:
                os.close(self.fd)
                self.fd = None
        tidy = list(reversed(self.made))  # deepest first
        if self.path.parent.name == RUN_LOCKS and self.path.parent not in tidy:
            tidy.insert(0, self.path.parent)  # made by a run that released first, while this one held its lock
        for folder in tidy:
            with contextlib.suppress(OSError):  # another run's lock is in it, or it is gone already
                folder.rmdir()


def _acquire(path: Path, what: str, made: list[Path], *, wait: bool, say: Callable[[str], None],
             timeout: float | None, poll_s: float) -> _Lock:
    """Lock ``path``; ``made`` collects the folders made for it (the caller tidies them if this raises)."""
    me = Holder(os.getpid(), socket.gethostname(), _now(), what)
    deadline = None if timeout is None else time.monotonic() + timeout
    waiting_said = False
    while True:
        made.extend(_make_folders(path.parent))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:  # another run released the last lock in the folder and removed it
            continue
        except OSError as exc:
            raise LockError(f"cannot make the lock file {path}: {exc.strerror}; the folder must be writable.") from exc
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd)
            os.close(fd)
            if holder is None and not waiting_said and (deadline is None or time.monotonic() < deadline):
                time.sleep(min(poll_s, 0.05))  # its holder is writing its name: read it again
                holder = _read_path(path)
            who = holder.describe() if holder is not None else "another process"
            if not wait:
                raise LockBusy(f"{path} is held by {who}; wait for it (leave out --no-wait) or stop that "
                               "process.") from None
            if deadline is not None and time.monotonic() >= deadline:
                raise LockBusy(f"{path} is still held by {who} after {timeout:g} s.") from None
            if not waiting_said:
                say(f"[lock] waiting for {who} to finish: it holds {path} (Ctrl-C stops waiting) ...")
                waiting_said = True
            time.sleep(poll_s)
            continue
        except (ImportError, OSError) as exc:
            os.close(fd)
            if isinstance(exc, OSError) and exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise LockError(f"cannot lock {path}: {exc.strerror}.") from exc
            say(f"[lock] warning: {path.parent} does not support file locks ({exc}); running without one: do "
                "not start the same run twice.")
            return _Lock(path, None, me, made)
        if not _same_file(fd, path):  # its holder released and removed it after we opened it: lock the new one
            os.close(fd)
            continue
        left = _read(fd)
        if left is not None:
            gone = "has ended" if left.alive() is False else "no longer holds it"
            say(f"[lock] taking over the stale lock {path}: {left.describe()} {gone} without releasing it.")
        data = json.dumps(asdict(me)).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        return _Lock(path, fd, me, made)


def _make_folders(folder: Path) -> list[Path]:
    """Make ``folder`` and missing parents; return the ones made here, outermost first."""
    missing = []
    for p in [folder, *folder.parents]:
        if p.is_dir():
            break
        missing.append(p)
    made = []
    for p in reversed(missing):
        try:
            p.mkdir()
            made.append(p)
        except FileExistsError:
            if not p.is_dir():
                raise LockError(f"cannot make the lock folder {p}: a file of that name is in the way.") from None
        except OSError as exc:
            raise LockError(f"cannot make the lock folder {p}: {exc.strerror}; it must be writable.") from exc
    return made


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _read(fd: int) -> Holder | None:
    return _parse(os.pread(fd, 4096, 0))


def _read_path(path: Path) -> Holder | None:
    try:
        return _parse(path.read_bytes()[:4096])
    except OSError:
        return None


def _parse(data: bytes) -> Holder | None:
    try:
        raw = json.loads(data.decode())
        return Holder(int(raw["pid"]), str(raw["host"]), str(raw["since"]), str(raw["what"]))
    except (ValueError, KeyError, TypeError, RecursionError):  # not ours, torn, or crafted
        return None


def _now() -> str:
    return _dt.datetime.now().astimezone().replace(microsecond=0).isoformat(sep=" ")
