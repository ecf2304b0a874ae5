"""Where a record's outputs are: the harness derives the place, the record does not choose it (#46).

A record's outputs live where its run id puts them, in its own results folder:
``<folder of the record>/outputs/<run_id>.txt`` (:func:`bench.store.paths.outputs_text_file`). The
``outputs.path`` a record stores is a label for people; it is checked against that place and never
followed, so a record that names ``/etc/passwd``, ``../../x`` or a symlink out of its folder cannot make a
command print, hash, copy or delete another file. A copy of a results folder reads its own outputs, not the
checkout's it was copied from.

The one exception is a submission kept with ``--no-copy`` (third-party outputs shipped with the data, never
copied into results/): its stored path is followed only to a file inside the data folder
(``$BENCH_DATA`` or ``<repo>/../shared/data``), which is read and never deleted.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from bench.api.names import IDENTIFIER
from bench.api.paths import REPO_ROOT, RESULTS_DIR
from bench.store.files import StoreError
from bench.store.paths import OUTPUTS_DIR, outputs_text_file, run_record_file

#: a run id is a file name: the one identifier rule (:mod:`bench.api.names`; no ``/``, no ``..``)
SAFE_ID = IDENTIFIER


class OutputsPathError(StoreError):
    """A record whose ``outputs.path`` is not its own outputs file: it names another place, climbs out of its
    folder, or its outputs file is a link leaving the folder. The message names the record and the field."""


class StoredRecord(dict[str, Any]):
    """A record as read from ``source``: a plain dict of its JSON that also knows its file, so the outputs can be
    found beside it (:func:`outputs_location`) wherever the folder was copied."""

    source: Path

    def __init__(self, data: dict[str, Any], source: Path | str) -> None:
        super().__init__(data)
        self.source = Path(source)


def record_source(rec: dict[str, Any], record: Path | str | None = None) -> Path:
    """The file ``rec`` was read from: ``record`` if given, else the one it was loaded from
    (:class:`StoredRecord`), else its place in the default results folder."""
    if record is not None and not str(record).startswith("<"):
        return Path(record)
    source = getattr(rec, "source", None)
    return Path(source) if source is not None else run_record_file(RESULTS_DIR, str(rec.get("run_id", "")))


def _refuse(record: Path | str, stored: Any, why: str) -> OutputsPathError:
    return OutputsPathError(
        f"{record}: 'outputs.path' {stored!r} {why}; the harness reads and deletes a record's outputs only at "
        f"<its results folder>/{OUTPUTS_DIR}/<run_id>.txt. Fix the field to that path, or delete this record."
    )


def outputs_location(rec: dict[str, Any], record: Path | str | None = None) -> Path | None:
    """The outputs file of ``rec`` (read from ``record``), or None when it names none; raises
    :class:`OutputsPathError` when its stored path is not that file or the file escapes its folder."""
    outputs = rec.get("outputs") or {}
    stored = outputs.get("path") if isinstance(outputs, dict) else None
    if stored is None or stored == "":
        return None
    where = record_source(rec, record)
    shown = record if record is not None else where
    run_id = rec.get("run_id")
    if not isinstance(run_id, str) or not SAFE_ID.fullmatch(run_id):
        raise OutputsPathError(f"{shown}: 'run_id' {run_id!r} is not a file name (letters, digits, _ . + -); fix or "
                          "delete this record.")
    if not isinstance(stored, str) or "\\" in stored or "\0" in stored:
        raise _refuse(shown, stored, "is not a path")
    if rec.get("kind") == "external" and outputs.get("copied") is False:
        return _data_file(stored, shown)
    parts = PurePosixPath(stored).parts
    if ".." in parts:
        raise _refuse(shown, stored, "climbs out of its folder ('..')")
    if parts[-2:] != (OUTPUTS_DIR, f"{run_id}.txt"):
        raise _refuse(shown, stored, f"is not this record's outputs file ({OUTPUTS_DIR}/{run_id}.txt)")
    return inside(outputs_text_file(where.parent, run_id), where.parent, shown, stored)


def inside(path: Path, folder: Path, record: Path | str, stored: Any) -> Path:
    """``path`` if it (links resolved) stays inside ``folder``, else :class:`OutputsPathError`."""
    if (path.exists() or path.is_symlink()) and not _within(path, folder):
        raise _refuse(record, stored, f"leads out of {folder} (a link: {path} -> {os.path.realpath(path)})")
    return path


def _within(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def data_roots() -> list[Path]:
    """The folders a ``--no-copy`` submission may name: ``$BENCH_DATA`` and the default data folder."""
    from bench.data.sources import ENV_VAR, default_data_dir

    roots = [default_data_dir()]
    if os.environ.get(ENV_VAR):
        roots.insert(0, Path(os.environ[ENV_VAR]).expanduser())
    return roots


def in_data_folder(path: Path) -> bool:
    """Whether ``path`` (links resolved) is inside a data folder (:func:`data_roots`)."""
    return any(_within(path, root) for root in data_roots())


def _data_file(stored: str, record: Path | str) -> Path:
    path = Path(stored) if Path(stored).is_absolute() else REPO_ROOT / stored
    if not in_data_folder(path):
        roots = " or ".join(str(r) for r in data_roots())
        raise OutputsPathError(
            f"{record}: 'outputs.path' {stored!r} is outside the data folder ({roots}); a submission kept with "
            "--no-copy may name only outputs shipped with the data. Submit the outputs again without --no-copy, "
            "or delete this record."
        )
    return path


def owned_outputs(rec: dict[str, Any], record: Path | str | None = None) -> Path | None:
    """The outputs file the harness wrote for ``rec`` and may move or delete with it: its place in the
    record's own folder (None for a ``--no-copy`` submission, whose file is the data's)."""
    path = outputs_location(rec, record)
    if path is None or (rec.get("kind") == "external" and (rec.get("outputs") or {}).get("copied") is False):
        return None
    return path
