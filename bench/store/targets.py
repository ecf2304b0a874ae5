"""Where a command may write a file a user names: never over evidence (#46).

A results folder is evidence: records, their outputs, calibrations, latency, orderings, p-values. An
``--out`` file or a ``--reports-dir`` a user types (or mistypes) must never land in one, and an existing file
is replaced only when the user says so (``--force``). A results folder is recognised by what it holds, not by
its name: the layout's subfolders (``outputs/``, ``calibration/``, ``latency/``, ``ordering/``,
``significance/pvalues.json``) or a top-level JSON that is a record (it has a ``run_id``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR
from bench.store.paths import CALIBRATION_DIR, LATENCY_DIR, ORDERING_DIR, OUTPUTS_DIR, SWEEP_DIR, pvalues_file

#: how many top-level JSON files of a folder are opened to tell whether it holds records (bounded: a home folder)
_PEEK_FILES = 64
_PEEK_BYTES = 16 << 20  # a record is far smaller; a larger JSON is not opened


#: the ``kind`` of every JSON the store writes under results/
STORE_KINDS = ("run", "external", "latency", "sweep", "calibration", "ordering")


class UnsafeTargetError(UserError, ValueError):
    """An ``--out`` or ``--reports-dir`` that would overwrite a file without ``--force`` or write into a results
    folder; nothing was written."""


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def is_results_folder(folder: Path | str) -> bool:
    """Whether ``folder`` holds what ``bench`` keeps under results/ (records, outputs, the layout's folders)."""
    root = Path(folder)
    if not root.is_dir():
        return False
    if any((root / sub).is_dir() for sub in (OUTPUTS_DIR, CALIBRATION_DIR, LATENCY_DIR, SWEEP_DIR, ORDERING_DIR)):
        return True
    if pvalues_file(root).is_file():
        return True
    try:
        entries = sorted(p for p in root.iterdir() if p.suffix == ".json")[:_PEEK_FILES]
    except OSError:
        return False
    return any(is_store_json(p) for p in entries)


def read_small_json(path: Path) -> Any:
    """The parsed JSON at ``path``, or None when it cannot be read, is not JSON or is larger than any record."""
    try:
        if path.stat().st_size > _PEEK_BYTES:
            return None
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def is_store_json(path: Path) -> bool:
    """A JSON file of one of the store's kinds: a run record or submission (``schema`` and ``run_id``), or a
    latency, calibration or ordering record (their ``kind``). Report sidecars are neither."""
    data = read_small_json(path)
    if not isinstance(data, dict):
        return False
    return ("run_id" in data and "schema" in data) or data.get("kind") in STORE_KINDS


def results_folder_holding(path: Path | str, results_dirs: Iterable[Path | str] = ()) -> Path | None:
    """The results folder ``path`` is in (or is): one of ``results_dirs`` (the default results/ always counts),
    or any folder above it that holds records; None when there is none. Links are resolved."""
    target = _real(path)
    for folder in (*results_dirs, RESULTS_DIR):
        if target.is_relative_to(_real(folder)):
            return Path(folder)
    for folder in (target, *target.parents):
        if is_results_folder(folder):
            return folder
    return None


def check_out_file(out: Path | str, *, force: bool, results_dirs: Iterable[Path | str] = (),
                   option: str = "--out") -> Path:
    """``out`` if a command may write it: not inside a results folder (not even with ``force``: a record is
    never replaced by an export), and not an existing file unless ``force``."""
    out = Path(out)
    dirs = list(results_dirs)
    for candidate in (out, _real(out)):  # the name given, and where a link points
        folder = results_folder_holding(candidate, dirs)
        if folder is not None:
            raise UnsafeTargetError(f"{option} {out}: inside the results folder {folder}, which holds the records; "
                                    "write the file elsewhere (nothing was written).")
    if (out.is_file() or out.is_symlink()) and not force:
        raise UnsafeTargetError(f"{option} {out}: the file exists; pass --force to replace it, or give another "
                                "path (nothing was written).")
    return out


def check_reports_dir(reports_dir: Path | str, results_dirs: Iterable[Path | str] = (),
                      option: str = "--reports-dir") -> Path:
    """``reports_dir`` if reports may be written there: not a results folder, not inside one, and holding none
    (a folder below it with records, e.g. ``--reports-dir .`` over the checkout's results/)."""
    reports = Path(reports_dir)
    real = _real(reports)
    dirs = [*results_dirs, RESULTS_DIR]
    inside = results_folder_holding(reports, results_dirs)
    if inside is not None:
        raise UnsafeTargetError(f"{option} {reports}: inside the results folder {inside}, which holds the records; "
                                "give a folder of its own for reports (nothing was written).")
    held = next((Path(d) for d in dirs if _real(d).is_relative_to(real)), None) or _holds_below(real)
    if held is not None:
        raise UnsafeTargetError(f"{option} {reports}: it holds the results folder {held}; give a folder of its own "
                                "for reports (nothing was written).")
    return reports


def _holds_below(folder: Path, depth: int = 2) -> Path | None:
    """A results folder among the subfolders of ``folder``, ``depth`` levels down (bounded: cheap on any tree)."""
    if depth == 0 or not folder.is_dir():
        return None
    try:
        subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))
    except OSError:
        return None
    for sub in subs:
        if is_results_folder(sub):
            return sub
        found = _holds_below(sub, depth - 1)
        if found is not None:
            return found
    return None
