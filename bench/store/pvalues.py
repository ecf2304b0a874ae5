"""The leaderboards' stored p-values (``results/significance/pvalues.json``): key -> p, committed with the records.

Re-scoring every run of every task for the rank clusters takes tens of seconds and needs the data and
every run's outputs, so :mod:`bench.report.significance` keeps its p-values beside the records, keyed by
both outputs' sha256, the split's sha256, the recipe signature, the metric and the resampling (an entry
can never stand for other outputs). :class:`PValues` is the file: read once, shared by every task's board,
written once with only the entries a build used, so it never collects stale pairs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.store.files import StoreError, is_number
from bench.store.integrity import DIGEST_FIELD
from bench.store.paths import PVALUES_FILE, SIGNIFICANCE_DIR, significance_dir
from bench.store.paths import pvalues_file as _pvalues_file
from bench.store.sealed import SealedStore

__all__ = ["PValues", "PValuesError", "load_pvalues", "pvalues_file", "validate_pvalues"]


class PValuesError(StoreError):
    """The p-values file is not an object of key -> p in [0, 1]; the message names the file."""


def _fail(path: Path | str, msg: str) -> PValuesError:
    return PValuesError(
        f"{path}: {msg}. The leaderboards' p-values are written by `bench table`; delete this file and run "
        "`bench table` where the data and the runs' outputs are (it computes them again), then commit it."
    )


def validate_pvalues(data: Any, path: Path | str = "<p-values>") -> dict[str, float]:
    """``data`` as key -> p (floats; its seal, the ``digest`` entry, left out), or :class:`PValuesError`."""
    if not isinstance(data, dict):
        raise _fail(path, "top level must be a JSON object of key -> p-value")
    for key, value in data.items():
        if key == DIGEST_FIELD:
            continue
        if not is_number(value) or not 0.0 <= value <= 1.0:
            raise _fail(path, f"the entry {key[:60]!r}... must be a p-value in [0, 1], got {value!r}")
    return {k: float(v) for k, v in data.items() if k != DIGEST_FIELD}


class PValuesStore(SealedStore):
    """The p-values file through the one sealed path, with its own wording."""

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return _fail(path, msg)


def _file(results_dir: Path | str, name: str) -> Path:
    return _pvalues_file(results_dir)


#: the leaderboards' p-values (``results/significance/pvalues.json``), the store's kind ``significance``
STORE = PValuesStore(PValuesError, "Significance", "bench table", "delete it and run `bench table` where the data "
                     "and the runs' outputs are (it computes them again)", SIGNIFICANCE_DIR, significance_dir, _file,
                     validate_pvalues, kind="significance")


def pvalues_file(results_dir: Path | str) -> Path:
    """``results/significance/pvalues.json`` of ``results_dir``, refused when its folder or the file is a link out of
    the results folder (the board would read, and `bench table` write or delete, a file elsewhere)."""
    return STORE.path_of(results_dir, PVALUES_FILE)


def load_pvalues(path: Path | str) -> dict[str, float]:
    """The p-values stored at ``path``, checked and their seal fitting ({} when there is no file)."""
    return dict(STORE.read(path)) if Path(path).is_file() else {}


class PValues:
    """The stored p-values of one results folder: read once, shared by every task's board, written once
    with only the entries this build used (so the file never collects stale pairs)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.known: dict[str, float] = load_pvalues(path) if path is not None else {}
        self.used: dict[str, float] = {}

    def get(self, key: str) -> float | None:
        value = self.known.get(key)
        if value is not None:
            self.used[key] = value
        return value

    def put(self, key: str, value: float) -> None:
        self.known[key] = self.used[key] = value

    def stale(self) -> bool:
        """True when the file does not hold exactly the entries this build used (no file: none used)."""
        if self.path is None:
            return False
        if not self.path.is_file():
            return bool(self.used)
        return load_pvalues(self.path) != dict(sorted(self.used.items()))

    def save(self) -> None:
        """Write the entries this build used, when they differ from the file (a folder that cannot be
        written is skipped: the pages are the same, only the next build is slower)."""
        if self.path is None or not self.stale():
            return
        wanted = dict(sorted(self.used.items()))
        if not wanted:  # nothing tested: no file (a results folder without rankable pairs stays untouched)
            self.path.unlink(missing_ok=True)
            return
        try:
            STORE.save(self.path, wanted)
        except OSError:
            return
