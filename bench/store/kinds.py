"""The registry of kinds of record: every JSON file under results/ is kept by one kind, read through its one
sealed path (:class:`bench.store.sealed.SealedStore`), or it is no record at all (#57).

A kind is registered here with its validator, its name fields and its folder; a new kind of record is a new
:class:`~bench.store.sealed.SealedStore` value added to :data:`KINDS` and to :func:`kind_of`. A JSON file
under results/ that no kind keeps is not read by any command, and ``bench table --check`` names it
(:func:`unkept`): nothing under results/ is shown without having passed a kind's checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.store import calibration, latency, orderings, pvalues, submissions, sweeps
from bench.store.files import StoreError
from bench.store.outputs import StoredRecord
from bench.store.paths import CALIBRATION_DIR, LATENCY_DIR, ORDERING_DIR, PVALUES_FILE, SIGNIFICANCE_DIR, SWEEP_DIR
from bench.store.records import RUNS
from bench.store.sealed import SealedStore

#: kind -> its store, in the order ``bench table --check --deep`` counts them
KINDS: dict[str, SealedStore] = {
    store.kind: store
    for store in (RUNS, submissions.STORE, calibration.SUMMARIES, calibration.POINTS, latency.STORE, sweeps.STORE,
                  orderings.STORE, pvalues.STORE)
}
#: the folder under results/ of each kind kept alone in its own folder
_FOLDERS = {LATENCY_DIR: latency.STORE, SWEEP_DIR: sweeps.STORE, ORDERING_DIR: orderings.STORE}


class UnkeptFileError(StoreError):
    """A JSON file under results/ that no kind of record keeps: no command reads it."""


def kind_of(results_dir: Path | str, path: Path | str) -> SealedStore | None:
    """The kind that keeps ``path`` (a JSON file under ``results_dir``), or None: where the file lies decides,
    and in a folder two kinds share (results/ itself, results/calibration/) its ``kind`` field."""
    place = _place(results_dir, path)
    if place == "":
        return submissions.STORE if _kind_field(Path(path)) == submissions.KIND else RUNS
    if place == CALIBRATION_DIR:
        return calibration.SUMMARIES if _kind_field(Path(path)) == calibration.KIND else calibration.POINTS
    return place if isinstance(place, SealedStore) else None


def _place(results_dir: Path | str, path: Path | str) -> SealedStore | str | None:
    """The kind ``path`` is kept by, by where it lies: a store, a shared folder's name ("" for results/ itself,
    ``calibration``) whose files tell their kind, or None where no kind lives."""
    root, file = Path(results_dir), Path(path)
    try:
        parts = file.relative_to(root).parts
    except ValueError:
        return None
    if file.suffix != ".json" or not 1 <= len(parts) <= 2:
        return None
    if len(parts) == 1:
        return ""
    folder, name = parts
    if folder == CALIBRATION_DIR:
        return CALIBRATION_DIR
    if folder == SIGNIFICANCE_DIR:
        return pvalues.STORE if name == PVALUES_FILE else None
    return _FOLDERS.get(folder)


def _kind_field(path: Path) -> Any:
    data = RUNS.raw(path)  # the one JSON reader (a bad file is its kind's reader's to name)
    return data.get("kind") if isinstance(data, dict) else None


def read(results_dir: Path | str, path: Path | str) -> StoredRecord:
    """Any record file under ``results_dir``, read through its kind's sealed path."""
    store = kind_of(results_dir, path)
    if store is None:
        raise UnkeptFileError(f"{path}: no kind of record is kept here (see bench/store/paths.py for where each "
                              "lives), so no command reads it; move it where its kind lives, or delete it.")
    return store.read_in(results_dir, path)


def json_files_under(results_dir: Path | str) -> list[Path]:
    """Every ``*.json`` file under ``results_dir`` (any depth), sorted."""
    root = Path(results_dir)
    return sorted(p for p in root.rglob("*.json") if p.is_file() or p.is_symlink()) if root.is_dir() else []


def unkept(results_dir: Path | str) -> list[Path]:
    """The JSON files under ``results_dir`` no kind keeps (``bench table --check`` names each)."""
    return [p for p in json_files_under(results_dir) if _place(results_dir, p) is None]


__all__ = ["KINDS", "UnkeptFileError", "json_files_under", "kind_of", "read", "unkept"]
