"""Canonical JSONL serialization of splits and the per-task cache manifest.

Why canonical: a split's sha256 is the hash of its cache file, and the file is written one
canonical JSON object per line (sorted keys, no spaces, non-ASCII as ``\\uXXXX`` escapes, so the
bytes are plain ASCII and no line separator can hide inside a string), so the same examples always give
the same hash on every machine, and checking a cached split is one pass of sha256 over its bytes.
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.api.atomic import write_bytes_atomic
from bench.api.errors import DataError
from bench.api.paths import cache_root as root_of_caches
from bench.api.types import Example

FORMAT = 1  # bump when the on-disk layout changes (independent of task versions)
FAST_VERSION = 4  # marshal format of the fast-load sidecar


def cache_root(explicit: Path | str | None = None) -> Path:
    """Directory of cached splits: ``explicit`` > ``$BENCH_CACHE/splits`` > ``<repo>/.cache/splits``."""
    if explicit is not None:
        return Path(explicit).expanduser()
    return root_of_caches() / "splits"


def task_cache_dir(root: Path, task: str, version: int) -> Path:
    return root / task / f"v{version}"


def decode(data: bytes, where: Path) -> list[Example]:
    """Parse canonical JSONL; repeated field strings (a paragraph shared by its questions) are shared.

    Canonical lines hold no raw newline (JSON escapes it), so the file is parsed as one JSON array
    in a single C call, several times faster than a ``json.loads`` per line.
    """
    try:
        records = json.loads(b"".join((b"[", data[:-1].replace(b"\n", b","), b"]"))) if data else []
    except (json.JSONDecodeError, UnicodeDecodeError):
        lines = data.decode("utf-8", errors="replace")[:-1].split("\n")
        records = [_parse_line(line, lineno, where) for lineno, line in enumerate(lines, 1)]
    memo: dict[str, str] = {}
    try:
        return [
            Example(
                rec["id"],
                rec["source"],
                rec["target"],
                {k: memo.setdefault(v, v) for k, v in rec["fields"].items()},
            )
            for rec in records
        ]
    except (KeyError, TypeError, AttributeError) as e:
        raise DataError(
            f"{where}: corrupt cached split ({e!r}). Fix: delete {where.parent} and load again to rebuild."
        ) from e


def _parse_line(line: str, lineno: int, where: Path) -> dict[str, Any]:
    """Slow path, only to name the bad line of a corrupt file."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(
            f"{where}:{lineno}: corrupt cached split ({e}). Fix: delete {where.parent} and "
            "load again to rebuild."
        ) from e


def encode_fast(examples: Iterable[Example]) -> bytes:
    """A ``marshal`` sidecar of the split: ~5x faster to load than parsing the JSONL.

    Only a speed-up: it is written at build time beside the canonical JSONL, its own hash is in the
    manifest and checked before it is read, and the JSONL stays the artifact the split hash names.
    ``marshal`` keeps shared strings (a paragraph shared by its questions) once.
    """
    return marshal.dumps([(ex.id, ex.source, ex.target, dict(ex.fields)) for ex in examples], FAST_VERSION)


def decode_fast(data: bytes) -> list[Example]:
    return [Example(*row) for row in marshal.loads(data)]


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file and rename, so a crash or a parallel reader never sees half a file.

    :mod:`bench.api.atomic` does it for every writer: the file gets the umask's mode (caches are shared
    between users of a checkout) and a read-only ``$BENCH_CACHE`` is one line naming the folder."""
    write_bytes_atomic(path, data)


def read_manifest(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep
        return None  # treated as stale: the next load rebuilds it
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    atomic_write(path, (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode())
