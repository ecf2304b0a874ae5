"""What every loader of the store shares: its error base, reading one JSON file with the JSON error named,
listing a folder's JSON files, and writing one atomically (a reader never sees half a file)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.api import reading
from bench.api.atomic import write_json_atomic
from bench.api.errors import UserError


class StoreError(UserError, ValueError):
    """A JSON file under results/ that does not follow its kind's schema; the message names the file, what is
    wrong and how to fix it (each kind has its own subclass)."""


def read_json(path: Path | str, fail: Callable[[Path | str, str], StoreError]) -> Any:
    """The parsed contents of ``path``; bytes that are not UTF-8, invalid JSON or JSON nested too deeply raise
    ``fail(path, what)`` (:func:`bench.api.reading.read_json`: the one reader of every file the harness reads)."""
    try:
        return reading.read_json(path)
    except reading.UnreadableFile as exc:
        raise fail(path, exc.what) from None


def json_files(folder: Path | str) -> list[Path]:
    """The ``*.json`` files directly in ``folder``, sorted by name ([] when there is no such folder)."""
    root = Path(folder)
    return sorted(root.glob("*.json")) if root.is_dir() else []


def write_json(path: Path | str, obj: Any) -> Path:
    """``obj`` as pretty, key-sorted JSON at ``path``, atomically (its folder is made when missing)."""
    write_json_atomic(Path(path), obj)
    return Path(path)


def is_number(x: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
