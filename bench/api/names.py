"""Names are identifiers, never paths: the one rule for every name a file name is built from (#57).

A record supplies names (system, task, split, budget, run id, sweep id, latency id, a calibration's point
ids, an ordering's paper and group), and the harness builds file names from them: ``results/<run_id>.json``,
``reports/leaderboard-<task>.html``, ``reports/calibration-<system>--<task>--<budget>.png``. A name that holds a
``/``, a ``\\``, a NUL or starts with ``.`` (``..``, ``.hidden``) would make that file name a path out of its
folder. Every such name is checked against :data:`IDENTIFIER` before any path is built from it: by the store
when a record is read (naming the file and the field) and again by each function that builds a path.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.api.errors import UserError

#: letters, digits and ``_ . + -``, starting with a letter or digit: one path component, never ``.`` or ``..``
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
#: a run id (``<system>--<task>--<split>--<budget>--s<seed>--<8 hex>``) and a report name built of several
#: identifiers stay below the file system's 255-byte limit for a name
IDENTIFIER_MAX = 200
RULE = "letters, digits and _ . + -, starting with a letter or digit"


class UnsafeNameError(UserError, ValueError):
    """A name that is not an identifier was about to become part of a file name; nothing was read or written."""


def identifier_problem(value: object) -> str | None:
    """What makes ``value`` unfit to be (part of) a file name; None when it is an identifier."""
    if not isinstance(value, str):
        return f"must be a string ({RULE}), got {type(value).__name__}"
    if not IDENTIFIER.fullmatch(value):
        return f"is {value[:80]!r}, not an identifier ({RULE}): it names a file, never a path"
    if len(value) > IDENTIFIER_MAX:
        return f"has {len(value)} characters; at most {IDENTIFIER_MAX} (it names a file)"
    return None


def is_identifier(value: object) -> bool:
    return identifier_problem(value) is None


def identifier(value: object, what: str = "name") -> str:
    """``value`` if it is an identifier, else :class:`UnsafeNameError` naming ``what``."""
    problem = identifier_problem(value)
    if problem is not None:
        raise UnsafeNameError(f"{what} {problem}; nothing was read or written.")
    return str(value)


def child(folder: Path | str, name: str, what: str = "file name") -> Path:
    """``folder / name`` for a file name built of identifiers (``leaderboard-<task>.html``): ``name`` must be
    one path component, and the path (links resolved) must stay inside ``folder``."""
    import os

    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UnsafeNameError(f"{what} {name[:80]!r} is not a file name inside {folder}; nothing was written.")
    path = Path(folder) / name
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    if real.parent != root and not real.is_relative_to(root):
        raise UnsafeNameError(f"{what} {path} leads out of {folder} (a link to {real}); nothing was written.")
    return path


__all__ = ["IDENTIFIER", "IDENTIFIER_MAX", "UnsafeNameError", "child", "identifier", "identifier_problem",
           "is_identifier"]
