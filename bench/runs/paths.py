"""Where a run's files are: its record and outputs under a results folder (the layout is
:mod:`bench.store.paths`'), and how a record names a path (repo-relative inside the checkout)."""

from __future__ import annotations

from pathlib import Path

from bench.api.paths import REPO_ROOT, RESULTS_DIR
from bench.runs.spec import RunSpec
from bench.store.paths import outputs_text_file, run_record_file


def record_path(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> Path:
    return run_record_file(results_dir, spec.run_id)


def outputs_path(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> Path:
    return outputs_text_file(results_dir, spec.run_id)


def display_path(path: Path) -> str:
    """Repo-relative when inside the checkout (records stay portable), else absolute."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def said_path(path: Path | str) -> str:
    """A path as a message says it: relative to the working directory when it lies below it (so it can be
    copied into the next command), else absolute."""
    full = Path(path).resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(full)
