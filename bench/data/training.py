"""Which split trains a run: the task's own ``train``, or, at the smoke budget where that split needs data
this machine lacks (XSum's 204k training documents), the task's largest available non-test split.

Why a rule and not a per-system choice: a smoke run is a plumbing check on real inputs, and every system on a
task must train on the same examples for its smoke runs to be comparable. The chosen split becomes part of the
run's spec (``RunSpec.train_split``), so the record and the run id say what trained the model.
"""

from __future__ import annotations

from pathlib import Path

from bench.api.errors import DataError
from bench.data.api import split_missing, training_data_missing
from bench.data.tasks import TASKS

TRAIN = "train"


def training_split(task: str, budget: str, data_dir: Path | str | None = None) -> str | None:
    """The split a run of ``task`` at ``budget`` trains on, None meaning the task's own ``train``.

    Only where ``train`` is an optional split whose data is absent does the answer differ: at ``smoke`` it is
    the largest split that is neither optional, references-only nor a test split (XSum: ``validation-available``);
    at any other budget a ``DataError`` says in one line what is missing and where it comes from."""
    t = TASKS.get(task)
    if TRAIN not in t.splits or not t.split(TRAIN).optional:
        return None
    missing = training_data_missing(task, data_dir)
    if missing is None:
        return None
    if budget != "smoke":
        raise DataError(missing)
    usable = [s for s in t.splits.values() if not s.references_only and not s.name.startswith("test")
              and split_missing(task, s.name, data_dir) is None]
    if not usable:
        raise DataError(missing)
    return max(usable, key=lambda s: s.count).name
