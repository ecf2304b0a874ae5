"""What every loader of the store shares: its error base, reading one JSON file with the JSON error named,
listing a folder's JSON files, and writing one atomically (a reader never sees half a file)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.api import reading
from bench.api.atomic import write_text_atomic
from bench.api.errors import UserError
from bench.api.textfile import RECORD


class StoreError(UserError, ValueError):
    """A JSON file under results/ that does not follow its kind's schema; the message names the file, what is
    wrong and how to fix it (each kind has its own subclass)."""


def read_json(path: Path | str, fail: Callable[[Path | str, str], StoreError]) -> Any:
    """The parsed contents of ``path``; bytes that are not UTF-8, invalid JSON or JSON nested too deeply raise
    ``fail(path, what)`` (:func:`bench.api.reading.read_json`: the one reader of every file the harness reads), and
    so does a file over the caps of a record (:data:`bench.api.textfile.RECORD`: its size, its count of values)."""
    try:
        return reading.read_json(path, limits=RECORD)
    except reading.UnreadableFile as exc:
        raise fail(path, exc.what) from None


def json_files(folder: Path | str) -> list[Path]:
    """The ``*.json`` files directly in ``folder``, sorted by name ([] when there is no such folder)."""
    root = Path(folder)
    return sorted(root.glob("*.json")) if root.is_dir() else []


def write_json(path: Path | str, obj: Any) -> Path:
    """``obj`` as pretty, key-sorted JSON at ``path``, atomically (its folder is made when missing); a record over
    the caps every reader applies (:data:`bench.api.textfile.RECORD`) is refused before anything is written, so the
    harness never writes a record its own readers refuse."""
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"  # as write_json_atomic writes it
    data = text.encode("utf-8")
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if len(data) > RECORD.max_bytes or (RECORD.max_values is not None and values > RECORD.max_values):
        raise StoreError(f"{path}: not written: {len(data):,} bytes and about {values:,} JSON values, over the caps "
                         f"of a record ({RECORD.max_bytes >> 20} MiB, {RECORD.max_values:,} values) that every "
                         "reader applies. Fix: keep less in one record (fewer items or rounds per record).")
    write_text_atomic(Path(path), text)
    return Path(path)


def is_number(x: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
