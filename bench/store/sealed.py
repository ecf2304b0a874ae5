"""One sealed-record store: how latency and sweep records are written, read back and refused.

Why one: both are measurements the pages print as facts, written sealed (a digest over the record) by one
command, and read through one path that checks the schema, then the seal, and names the file, the field and
the command that makes the record again. Each kind brings its validator, its folder and its wording.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.store.files import StoreError, json_files, read_json, write_json
from bench.store.integrity import Problem, checked_unsealed, sealed


@dataclass(frozen=True)
class SealedStore:
    """A kind of sealed record in its own folder of the results (``results/<kind>/<id>.json``)."""

    error: type[StoreError]
    name: str  # "Latency", "Sweep"
    command: str  # the command that writes such a record, named in every error
    again: str  # what to do when a record was edited: "measure again", "sweep again"
    id_field: str
    folder: Callable[[Path | str], Path]
    file: Callable[[Path | str, str], Path]
    validate: Callable[[Any, Path | str], dict[str, Any]]

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return self.error(f"{path}: {msg}. {self.name} records are written by `{self.command}`; "
                          "fix or delete this file.")

    def edited(self, path: Path | str, problem: Problem) -> StoreError:
        return self.error(
            f"{path}: {problem}; the record is not as `{self.command}` wrote it (edited or damaged), so no number "
            f"of it is shown. Restore it (`git checkout -- {path}` if it is committed) or {self.again}."
        )

    def read(self, path: Path | str) -> dict[str, Any]:
        """One record file, schema-checked and its digest (if any) fitting; returned without its digest (the
        file's seal, made again by the writer)."""
        rec = self.validate(read_json(path, self.fail), path)
        return checked_unsealed(rec, lambda problem: self.edited(path, problem))

    def load(self, results_dir: Path | str) -> list[dict[str, Any]]:
        """Every record in the kind's folder of ``results_dir``, checked, oldest first (by created, then id)."""
        out = [self.read(path) for path in json_files(self.folder(results_dir))]
        return sorted(out, key=lambda r: (r["created"], r[self.id_field]))

    def write(self, results_dir: Path | str, record: Mapping[str, Any]) -> Path:
        """Check, then write sealed and atomically (a reader never sees half a file)."""
        self.validate(dict(record), "<new record>")
        return write_json(self.file(results_dir, str(record[self.id_field])), sealed(record))


__all__ = ["SealedStore"]
