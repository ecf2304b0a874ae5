"""Which results folders a command writes and reads: the workspace and the committed evidence.

Why two: a user's first runs are smoke models, degenerate by design; written into the committed ``results/`` they
put a smoke row on the committed boards and fail ``bench table --check``. So (docs/commands.md, "Where runs go"):

- a command that makes or changes records writes to the **workspace** (``$BENCH_RESULTS``, default
  ``.cache/results``, git-ignored) unless ``--results-dir`` names another folder (``--results-dir results`` for
  evidence; ``bench promote RUN_ID`` copies a workspace run there);
- a command that shows runs reads the workspace and ``results/`` together (a run id in both: the workspace's);
- a command that builds committed files from the evidence (``bench table``, ``bench order``) reads ``results/``;
- ``--results-dir DIR`` makes any command read and write DIR alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR, workspace_dir
from bench.store.paths import run_record_file


class RunNotFound(UserError, ValueError):
    """A run id (or short id) that names no record, or more than one."""


@dataclass(frozen=True)
class Folders:
    """``write``: where new or changed records go; ``read``: the folders records are looked up in, first wins;
    ``explicit``: a ``--results-dir`` was given (then ``read`` is that folder alone and must exist)."""

    write: Path
    read: tuple[Path, ...]
    explicit: bool = False

    def existing(self) -> list[Path]:
        """The read folders that exist (a fresh clone has no workspace yet); an explicit one must exist."""
        from bench.store.records import require_dir

        if self.explicit:
            return [Path(require_dir(self.read[0]))]
        for d in self.read:  # absent is fine (a fresh clone); a file, a FIFO or a broken link there is a mistake
            if (d.exists() or d.is_symlink()) and not d.is_dir():
                require_dir(d, "$BENCH_RESULTS" if _same(d, workspace_dir()) else "the results folder",
                            "the runs (unset it to use .cache/results)")
        return [d for d in self.read if d.is_dir()]

    def describe(self) -> str:
        """The folders read, as a person reads them: ``.cache/results (workspace) + results/ (committed)``."""
        return " + ".join(label(d) for d in self.read)


def folders(results_dir: Path | str | None = None) -> Folders:
    """The folders of a command given ``results_dir`` (None: no ``--results-dir``: the workspace, then results/)."""
    if results_dir is not None:
        return Folders(Path(results_dir), (Path(results_dir),), explicit=True)
    ws = workspace_dir()
    read = (ws,) if _same(ws, RESULTS_DIR) else (ws, RESULTS_DIR)
    return Folders(ws, read)


def folder_to_change(run_ids: Sequence[str], results_dir: Path | str | None) -> Path:
    """The folder whose records a command that changes records (rescore, refile) may change: ``--results-dir``,
    else the workspace; a run found only in the committed results is refused there, naming the option that
    changes evidence on purpose."""
    if results_dir is not None:
        from bench.store.records import require_dir

        return Path(require_dir(results_dir))
    ws = workspace_dir()
    for run_id in run_ids:
        if not run_record_file(ws, run_id).is_file() and run_record_file(RESULTS_DIR, run_id).is_file():
            raise RunNotFound(f"{run_id} is committed evidence (results/), not a run of your workspace ({label(ws)}); "
                              "add --results-dir results to change the committed record on purpose.")
    return ws


def write_dir(results_dir: Path | str | None = None) -> Path:
    """Where a command that makes records writes: ``--results-dir``, else the workspace."""
    return folders(results_dir).write


def evidence_dir(results_dir: Path | str | None = None) -> Path:
    """Where a command that builds committed files reads: ``--results-dir``, else results/ (the evidence)."""
    return Path(results_dir) if results_dir is not None else RESULTS_DIR


def label(folder: Path) -> str:
    """``results/ (committed)``, ``.cache/results (workspace)`` or the folder itself."""
    from bench.runs.paths import display_path

    shown = display_path(folder)
    if _same(folder, RESULTS_DIR):
        return f"{shown}/ (committed)"
    if _same(folder, workspace_dir()):
        return f"{shown} (workspace)"
    return shown


def is_evidence(folder: Path | str) -> bool:
    return _same(Path(folder), RESULTS_DIR)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def record_file(record: dict[str, Any], written_to: Path) -> Path:
    """The file ``record`` is in: the one it was read from (a record found complete in another folder), else its
    place in ``written_to``."""
    source = getattr(record, "source", None)
    return Path(source) if source is not None else run_record_file(written_to, str(record["run_id"]))


def where_note(record: Path) -> str | None:
    """What a person should know about where ``record`` is: nothing for the committed evidence; for a run in the
    workspace (or another folder), that it is not evidence and the ``bench promote`` command that makes it so."""
    from bench.runs.paths import said_path

    folder = record.parent
    if is_evidence(folder):
        return None
    mine = _same(folder, workspace_dir())
    source = "" if mine else f" --from {said_path(folder)}"
    # the command on a line of its own, so it is copied whole (at 80 columns it wrapped between promote and the id)
    return (f"Not committed: this run is in {said_path(folder)}{' (your workspace)' if mine else ''}. To copy it "
            f"into results/, the committed evidence:\n  bench promote {record.stem}{source}")


#: the record kinds a timing command writes, each in its own subfolder of a results folder
TIMING_KINDS = ("latency", "sweep")


def written_note(record: Path | str) -> str:
    """``wrote <record>``, and for a timing record (``<folder>/latency/<id>.json``, ``.../sweep/...``) outside
    results/ that it is not evidence and how it becomes evidence: a copy, since its id is its content (a copied
    record is the same record; ``bench promote`` is for run records)."""
    from bench.runs.paths import said_path

    path = Path(record)
    kind, folder = path.parent.name, path.parent.parent
    line = f"wrote {said_path(path)}"
    if kind not in TIMING_KINDS or is_evidence(folder):
        return line
    mine = " (your workspace)" if _same(folder, workspace_dir()) else ""
    return (f"{line}\nNot committed: this {kind} record is in {said_path(folder)}{mine}; the boards read results/. "
            f"To make it evidence, copy it (its id is its content):\n  cp {said_path(path)} "
            f"{said_path(RESULTS_DIR / kind)}/")


def load_all(where: Folders) -> list[dict[str, Any]]:
    """The complete records of every read folder (each knows its file), sorted by run id; a run id in two folders
    is read from the first (the workspace's re-run shadows the committed one)."""
    from bench.store.records import load_records

    seen: dict[str, dict[str, Any]] = {}
    for folder in where.existing():
        for rec in load_records(folder):
            seen.setdefault(rec["run_id"], rec)
    return [seen[k] for k in sorted(seen)]


def sections(where: Folders) -> list[tuple[Path, list[dict[str, Any]]]]:
    """The complete records of each read folder, the committed results first (what a listing shows above), a run
    id once (the workspace's where both hold it)."""
    from bench.store.records import load_records

    per = [(folder, load_records(folder)) for folder in where.existing()]
    seen: set[str] = set()
    out = []
    for folder, records in per:
        mine = [r for r in records if r["run_id"] not in seen]
        seen |= {r["run_id"] for r in mine}
        out.append((folder, mine))
    return out[::-1]


def find(run_id: str, where: Folders) -> tuple[Path, dict[str, Any]]:
    """A record by its run id, its file's path (``results/<id>.json``), or a short id the pages show (the hash at
    the end of the id, or any unique start of it), looked up in the read folders in order."""
    from bench.store.records import read_record

    if run_id.endswith(".json"):
        path = Path(run_id)
        if not path.is_file():
            stem = path.stem.split("--")[0]
            near = sorted(p.stem for p in path.parent.glob(f"{stem}*.json"))[:5] if stem else []
            hint = f" Similar: {', '.join(near)}." if near else " `bench ls runs` lists the recorded runs."
            raise RunNotFound(f"no record {path}.{hint}")
        return path, read_record(path)
    from bench.api.names import identifier_problem

    problem = identifier_problem(run_id)  # an id is an identifier, never a path: `../x` reads nothing outside
    if problem is not None:
        raise RunNotFound(f"run id {problem}; give a recorded run id (`bench ls runs`) or a record's path ending "
                          "in .json.")
    from bench.store.records import RUNS

    dirs = where.existing()
    for folder in dirs:
        path = run_record_file(folder, run_id)
        if path.is_file():  # a record is read only inside its folder: a link out of it is refused, as ls does
            return path, read_record(RUNS.inside(folder, path))
    matches = short_matches(run_id, dirs)
    if len(matches) == 1:
        path = matches[0]
        return path, read_record(RUNS.inside(path.parent, path))
    if matches:
        shorts = ", ".join(p.stem.rsplit("--", 1)[-1] for p in matches[:8]) + (
            f" and {len(matches) - 8} more" if len(matches) > 8 else "")
        raise RunNotFound(f"'{run_id}' names {len(matches)} runs (short ids {shorts}); give more of it (`bench ls "
                          "runs` lists them).")
    raise RunNotFound(_not_found(run_id, dirs, where))


def names_runs(run_ids: Sequence[str], where: Folders) -> bool:
    """Whether every one of ``run_ids`` names exactly one recorded run (an id, a unique short id, a record path)."""
    try:
        for run_id in run_ids:
            find(run_id, where)
    except (RunNotFound, OSError, ValueError):
        return False
    return True


def short_matches(fragment: str, dirs: Sequence[Path]) -> list[Path]:
    """Records whose id ends with ``--FRAGMENT`` (the 8-hex hash the pages show) or starts with ``FRAGMENT``, one per
    run id (first folder wins)."""
    if not fragment or "/" in fragment:
        return []
    found: dict[str, Path] = {}
    for folder in dirs:
        for path in sorted(folder.glob("*.json")):
            rid = path.stem
            if rid.endswith(f"--{fragment}") or rid.startswith(fragment):
                found.setdefault(rid, path)
    return [found[k] for k in sorted(found)]


def _not_found(run_id: str, dirs: Sequence[Path], where: Folders) -> str:
    stem = run_id.split("--")[0]
    near = sorted({p.stem for d in dirs for p in d.glob(f"{stem}*.json")})[:5] if stem and "/" not in stem and \
        not stem.startswith(".") else []
    places = " and ".join(label(d) for d in where.read)
    hint = f" Similar: {', '.join(near)}." if near else " `bench ls runs` lists the recorded runs."
    return f"no record '{run_id}' in {places}.{hint}"
