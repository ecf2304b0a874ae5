"""Atomic file writes: a reader (or a crash) never sees a half-written record.

The content goes to a uniquely named temporary file in the target's directory, is flushed and
fsynced, then ``os.replace``d over the target. Two processes writing the same path at once each
replace it whole; the last one wins and neither corrupts it.

Why the temporary file is opened here and not by ``tempfile.mkstemp``: mkstemp creates it 0600
whatever the umask, so records and outputs came out unreadable to colleagues sharing a results
folder on a cluster while reports (plain ``open``) were 0644. ``os.open(..., 0o666)`` lets the
process umask decide, as for any other file the user makes. Whatever fails (a full disk, a
directory where the file should go, a writer's exception, Ctrl-C), the temporary file is removed; one a
``kill -9`` left is removed by the next write into its folder (:mod:`bench.api.tempfiles`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.api.errors import EnvironmentProblem, UserError
from bench.api.tempfiles import sweep, temp_name

#: errors that mean "this folder cannot be written here": permissions, a read-only file system, or a file
#: standing where a folder must be made (``--out afile/x.csv``, ``BENCH_CACHE=afile/cache``)
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST)


class TargetIsDirectory(UserError, IsADirectoryError):
    """The path given for a file names a directory (``bench export --out results/``)."""


class NotWritable(EnvironmentProblem, PermissionError):
    """A folder the command must write is read-only or not ours: the message names it and the fix."""


def cache_hint(path: Path, blocked: bool = False) -> str:
    """The fix for a path that cannot be written: caches move with ``$BENCH_CACHE``, anything else must be
    made writable (``blocked``: a file moved out of the way) or written elsewhere."""
    from bench.api.paths import cache_root

    if _inside(path, cache_root()):
        return "set $BENCH_CACHE to a folder you can write (or make this one writable)"
    if blocked:
        return "move it away, or give another path"
    return "make it writable, or give a path in a folder you can write"


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return False
    return True


def not_writable(path: Path | str, exc: OSError) -> NotWritable:
    """One line for ``path`` that cannot be written because of ``exc``: what was refused, where, and
    :func:`cache_hint`'s fix."""
    where = Path(exc.filename) if exc.filename else Path(path)
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.ELOOP):  # a file (or a broken link) where a folder must be
        link = next((p for p in (where, *where.parents) if p.is_symlink() and not p.exists()), None)
        if link is not None:
            return NotWritable(f"cannot write {path}: {link} is a symbolic link that leads nowhere (or back to "
                               f"itself); {cache_hint(where, blocked=True)}.")
        file = next((p for p in (where, *where.parents) if p.exists() and not p.is_dir()), where)
        head = f"{file} is a file" if file == Path(path) else f"cannot write {path}: {file} is a file"
        return NotWritable(f"{head}, not a folder; {cache_hint(where, blocked=True)}.")
    return NotWritable(f"cannot write {where} ({exc.strerror or exc}): {cache_hint(where)}.")


class NoSpace(EnvironmentProblem, OSError):
    """The disk (or quota) of a folder the command writes is full: the message names the file and the fix."""


class NameTooLong(UserError, OSError):
    """A name (a system, a ``--set`` value, a ``--meta``) made a file name longer than the file system takes."""


#: the disk is full, or the user's quota on it is
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def os_problem(exc: OSError) -> EnvironmentProblem | UserError | None:
    """The one line for an ``OSError`` that reached ``bench``'s top level, by errno: a folder that cannot be
    written, a full disk, a name too long, or any other file the system refused (named, with its reason);
    None for an error naming no file, which is a bug and keeps its traceback."""
    if isinstance(exc, EnvironmentProblem | UserError):
        return exc
    where = Path(exc.filename) if exc.filename else None
    if is_unwritable(exc) or (exc.errno == errno.ELOOP and where is not None):  # a loop: name the link that loops
        return not_writable(where or ".", exc)
    if exc.errno in _NO_SPACE:
        return NoSpace(f"cannot write {where or 'a file'}: {exc.strerror or 'no space left on device'}. "
                       f"{_space_hint(where)}; files written before it are unchanged.")
    if exc.errno == errno.ENAMETOOLONG:
        name = f"{str(where)[:120]}..." if where is not None and len(str(where)) > 120 else where
        return NameTooLong(f"file name too long for the file system: {name or 'a file'}. Use a shorter name "
                           "(system, task, --name, --set or --meta value) or a shorter folder.")
    if where is not None:
        return EnvironmentProblem(f"cannot use {where}: {exc.strerror or exc}.")
    return None


def _space_hint(where: Path | None) -> str:
    from bench.api.paths import cache_root

    if where is not None and _inside(where, cache_root()):
        return "Free space there, or set $BENCH_CACHE to a folder on a disk with room"
    return "Free space on that disk, or give a folder on another disk (--results-dir, --out)"


def is_unwritable(exc: OSError) -> bool:
    """Whether ``exc`` says a folder cannot be made or written (permissions, a read-only file system, a file
    in a folder's place): the machine's state, told as one line by ``bench``, not a bug's traceback."""
    return exc.errno in _UNWRITABLE


def _open_temp(path: Path) -> tuple[int, Path]:
    """A new, empty temporary file beside ``path`` (its fd and name), made with the process umask."""
    if path.is_dir():
        raise TargetIsDirectory(f"{path} is a directory: give a file name to write (e.g. a path inside it).")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep(path.parent)  # a killed command's temporary files go with the next write here
        while True:
            tmp = temp_name(path)
            try:
                return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
            except FileExistsError:
                continue
    except OSError as exc:
        if is_unwritable(exc):
            raise not_writable(path, exc) from exc
        _name(exc, path)
        raise


def _discard(tmp: Path) -> None:
    """Remove a temporary file; a failure to remove it must not hide the error that got us here."""
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _commit(tmp: Path, path: Path) -> None:
    if path.is_dir():  # a directory appeared meanwhile: os.replace would fail with a bare IsADirectoryError
        raise TargetIsDirectory(f"{path} is a directory: give a file name to write (e.g. a path inside it).")
    os.replace(tmp, path)


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """A temporary file name beside ``path`` for writers that want a path (pandas, matplotlib: it keeps
    ``path``'s suffix, which they read the format from); it replaces ``path`` when the block ends, and
    is removed if the block (or the replace) fails."""
    path = Path(path)
    fd, tmp = _open_temp(path)
    os.close(fd)
    try:
        yield tmp
        _fsync(tmp)
        _commit(tmp, path)
    except BaseException as exc:
        _discard(tmp)
        _name(exc, path)
        raise


def _name(exc: BaseException, path: Path) -> None:
    """A write's ``OSError`` (a full disk) names no file: name the target, so the one line says where."""
    if isinstance(exc, OSError) and not exc.filename:
        exc.filename = str(path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    path = Path(path)
    fd, tmp = _open_temp(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        _commit(tmp, path)
    except BaseException as exc:
        _discard(tmp)
        _name(exc, path)
        raise


def write_text_atomic(path: Path | str, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: Path | str, obj: Any) -> None:
    """Pretty, key-sorted JSON so committed records diff cleanly."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
