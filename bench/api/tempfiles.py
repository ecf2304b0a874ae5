"""The temporary files of atomic writes (:mod:`bench.api.atomic`): how they are named, and how the next write
into a folder tidies the ones a killed command left (#46).

A temporary file is ``.<target>.<pid>.<host>.<8 hex>.tmp<suffix>``: the writer's process id and a short hash of
its host name say whose it is. A write into a folder first removes the temporary files there whose writer
is gone (same host, no such process). Those it cannot judge (another host's, or named before the pid was
part of the name) are removed once a day old, and named on stderr before that, so nothing a live writer is
filling is ever removed and nothing is left silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import socket
import sys
import time
from pathlib import Path

#: this process's temporary files: ``.<target>.<pid>.<host>.<token>.tmp<suffix>``
_OURS = re.compile(r"^\..+\.(?P<pid>\d+)\.(?P<host>[0-9a-f]{4})\.[0-9a-f]{8}\.tmp(\.[^./]*)?$")
#: the names of older versions of the harness: ``.<target>.<token>.tmp<suffix>``
_LEGACY = re.compile(r"^\..+\.[0-9a-f]{8}\.tmp(\.[^./]*)?$")
#: a temporary file whose writer cannot be asked is taken as abandoned at this age (no write takes a day)
STALE_AFTER_S = 24 * 3600

_swept: set[str] = set()
_named: set[str] = set()


def host_tag() -> str:
    """Four hex digits of the host name: tells this machine's temporary files from a cluster neighbour's."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:4]


def temp_name(path: Path) -> Path:
    """A fresh temporary file name beside ``path`` (keeping its suffix, which pandas and matplotlib read)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{host_tag()}.{secrets.token_hex(4)}.tmp{path.suffix}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's live process
        return True
    return True


def abandoned(path: Path, now: float | None = None) -> bool | None:
    """True when ``path`` is a temporary file whose writer is gone, False when it may still be written, None
    when it is no temporary file of ours or cannot be judged yet (another host's, or an older name)."""
    name = path.name
    ours = _OURS.match(name)
    if ours and ours["host"] == host_tag():
        return not _alive(int(ours["pid"]))
    if not (ours or _LEGACY.match(name)):
        return None
    try:
        age = (now or time.time()) - path.lstat().st_mtime
    except OSError:
        return None
    return True if age > STALE_AFTER_S else None


def sweep(folder: Path) -> list[Path]:
    """Remove the abandoned temporary files in ``folder`` (once per folder and process); name on stderr those
    that look abandoned but cannot be judged. Returns what was removed."""
    key = os.path.abspath(folder)
    if key in _swept:
        return []
    _swept.add(key)
    removed: list[Path] = []
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(".") and ".tmp" in e.name]
    except OSError:
        return removed
    for entry in entries:
        path = Path(entry.path)
        if not entry.is_file(follow_symlinks=False):
            continue
        verdict = abandoned(path)
        if verdict:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(path)
        elif verdict is None and (_OURS.match(path.name) or _LEGACY.match(path.name)) and entry.path not in _named:
            _named.add(entry.path)
            print(f"note: {path} is the temporary file of a write that may have been interrupted (another machine's "
                  "or an older bench); remove it if no command is writing there.", file=sys.stderr)
    return removed
