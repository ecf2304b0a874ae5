"""A record's id is its content's: the one formula of each kind's id, and the check that a record bears it (#57).

Why: every record is found, linked and shown by its id (``bench show ID``, the board's row of a run, the speed-up a
latency record's ``spec.runs`` attaches to a run). The ids the harness writes are derived from what the record says
it is: a run's from its spec's hash, a submission's from its name, task, split, outputs and paper row, a latency or
sweep record's from its spec and its ``created``. So a record whose spec was edited under its old id, resealed (the
digest is a checksum anyone can recompute), claimed to be a run it is not: ``spec.system`` of a
``fairseq_transformer--…`` run set to ``copy_source`` put the transformer's scores on copy_source's row, and a latency
record whose ``spec.task`` was set to another task kept its ``quora--…`` id.
:meth:`bench.store.sealed.SealedStore.check` holds every kind that has such an id to it
(:attr:`~bench.store.sealed.SealedStore.identity`).

The run id formula is the one :attr:`bench.runs.spec.RunSpec.run_id` and ``bench submit`` use (they call these
functions); the latency and sweep ids are written by :mod:`bench.latency` above the store, so the formula is
repeated here and a test keeps the two equal.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

#: the budget word of a submission's id and spec (``bench submit``)
SUBMISSION_BUDGET = "external"
#: the tail of each derived id: an id of that form claims to be its content's, and is held to it. An id of no such
#: form names nothing the harness made (a test's ``"a"``): a record under it is a claim of its own, which cannot take
#: over a record the harness wrote (what ``--deep`` re-derives, it re-derives for it too)
_RUN_TAIL = re.compile(r".+--s\d+--[0-9a-f]{8}")
_SUBMISSION_TAIL = re.compile(rf".+--{SUBMISSION_BUDGET}--[0-9a-f]{{8}}")
_TIMED_TAIL = re.compile(r".+--\d{8}T\d{6}--[0-9a-f]{8}")


def spec_digest(spec: Mapping[str, Any]) -> str:
    """The first 8 hex digits of the sha256 of ``spec`` as key-sorted JSON: the hash part of every derived id."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:8]


def run_id_of(spec: Mapping[str, Any]) -> str:
    """A run's id from its spec (``RunSpec.to_json()``, as its record stores it)."""
    return (f"{spec['system']}--{spec['task']}--{spec['split']}--{spec['budget']}--s{spec['seed']}--"
            f"{spec_digest(spec)}")


def submission_id(name: str, task: str, split: str, outputs_sha256: str, paper: str | None, row: str | None) -> str:
    """A submission's id: its name, task and split, and a hash of those, its outputs and the paper row it stands by."""
    digest = hashlib.sha256("\0".join([name, task, split, outputs_sha256, paper or "", row or ""]).encode())
    return f"{name}--{task}--{split}--{SUBMISSION_BUDGET}--{digest.hexdigest()[:8]}"


def stamp(created: str) -> str:
    """The time part of a latency or sweep id: ``created`` (UTC, ``+00:00``) without separators or offset."""
    return created.replace("-", "").replace(":", "").split("+")[0]


def run_record_id(rec: Mapping[str, Any]) -> str | None:
    """The id a complete run record's content gives it (a run's spec, a submission's fields); None for a record that
    is not complete (nothing of it is shown) or whose id is of no derived form."""
    if rec.get("status") != "complete" or not isinstance(rec.get("run_id"), str):
        return None
    spec, external = rec["spec"], rec.get("kind", "run") == "external"
    if not (_SUBMISSION_TAIL if external else _RUN_TAIL).fullmatch(rec["run_id"]):
        return None
    if external:
        sub, outputs = rec["submission"], rec.get("outputs") or {}
        return submission_id(sub["name"], spec["task"], spec["split"], str(outputs.get("sha256")), sub.get("paper"),
                             sub.get("row"))
    return run_id_of(spec)


def latency_record_id(rec: Mapping[str, Any]) -> str | None:
    """A latency record's id (``bench.latency.record.build_record``): task, split, budget, weights, mode, time, spec;
    None where its id is of no derived form."""
    if not _TIMED_TAIL.fullmatch(str(rec.get("latency_id"))):
        return None
    spec = rec["spec"]
    mode = "forced" if spec["length_forced"] else "free"
    return (f"{spec['task']}--{spec['split']}--{spec['budget']}--{spec['weights']}--{mode}--{stamp(rec['created'])}--"
            f"{spec_digest(spec)}")


def sweep_record_id(rec: Mapping[str, Any]) -> str | None:
    """A sweep record's id (``bench.latency.plan.run_sweep``): task, split, budget, time, spec; None where its id is
    of no derived form."""
    if not _TIMED_TAIL.fullmatch(str(rec.get("sweep_id"))):
        return None
    spec = rec["spec"]
    return f"{spec['task']}--{spec['split']}--{spec['budget']}--sweep--{stamp(rec['created'])}--{spec_digest(spec)}"


__all__ = ["SUBMISSION_BUDGET", "latency_record_id", "run_id_of", "run_record_id", "spec_digest", "stamp",
           "submission_id", "sweep_record_id"]
