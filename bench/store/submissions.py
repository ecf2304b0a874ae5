"""Submissions: outputs made elsewhere, stored by ``bench submit`` as run records of kind ``external``.

They live beside the runs (``results/<run_id>.json``, their outputs under ``results/outputs/`` unless
``--no-copy``) and are read by :mod:`bench.store.records` like every record; its schema check covers the
``submission`` block (name, paper table and row, the submitter's meta). This module names them: where
one is written, how it is told from a run, and the typed loaders for submissions only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.store.ids import SUBMISSION_BUDGET
from bench.store.paths import outputs_text_file, run_record_file
from bench.store.records import RUNS, RecordError, RunRecord, load_records, read_record, validate_record

KIND = "external"
BUDGET = SUBMISSION_BUDGET  # "external": never one of the run budgets: no table matches it to a reproduction


def is_submission(rec: Mapping[str, Any]) -> bool:
    return rec.get("kind") == KIND


def validate_submission(rec: Any, path: Path | str = "<submission>") -> dict[str, Any]:
    """A run record's checks (:func:`bench.store.records.validate_record`), and its kind is ``external``."""
    validate_record(rec, path)
    if not is_submission(rec):
        raise RecordError(f"{path}: a run record (kind {rec.get('kind', 'run')!r}), not a submission (kind "
                          f"'{KIND}'); give the record `bench submit` wrote.")
    return rec


#: submissions (``results/<run_id>.json`` of kind ``external``), the store's kind ``submission``: the run
#: records' sealed path, with the submission's own check
STORE = replace(RUNS, name="Submission", command="bench submit", validate=validate_submission, kind="submission")


def submission_file(results_dir: Path | str, run_id: str) -> Path:
    """Where the external record of ``run_id`` is written."""
    return run_record_file(results_dir, run_id)


def submitted_outputs_file(results_dir: Path | str, run_id: str) -> Path:
    """Where a submission's outputs are kept as scored (``bench submit`` without ``--no-copy``)."""
    return outputs_text_file(results_dir, run_id)


def read_submission(path: Path | str) -> dict[str, Any]:
    """One external record, checked; a run record there is an error naming the file."""
    rec = read_record(path)
    validate_submission(rec, path)
    return rec


def load_submissions(results_dir: Path | str) -> list[dict[str, Any]]:
    """The complete external records under ``results_dir``, checked (as :func:`load_records`), by run id."""
    return [rec for rec in load_records(results_dir) if is_submission(rec)]


def write_submission(results_dir: Path | str, record: RunRecord) -> Path:
    """Check (as a reader would), then write the external record atomically; returns its path."""
    if record.kind != KIND:
        raise ValueError(f"{record.run_id}: kind {record.kind!r}; only '{KIND}' records are submissions")
    RunRecord.from_json(record.to_json(), f"<new submission {record.run_id}>")
    return record.save(submission_file(results_dir, record.run_id))
