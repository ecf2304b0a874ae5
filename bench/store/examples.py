"""The examples a run record scored follow from its spec, never from what its ``data`` block says.

Why: a run's id hashes its spec (system, task, split, ``--limit``, ...), and ``bench run`` decodes the first
``limit`` examples of the split (all of them without one). A record whose ``data`` says it scored fewer (the
first 100 of a whole-split run: a cherry-picked prefix, with its split hash, outputs and scores made to fit) was
shown and passed ``--deep``, which took the examples from ``data`` too. The task registry states every split's
size, so the count a spec gives is known without loading the split (a task whose plugin is not loaded is not
checked here; ``--deep`` takes the examples from the spec as well: :func:`bench.runs.rederive.rederive_scores`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.store.integrity import Problem

#: smoke runs decode the first 200 test examples without a ``--limit``: a pipeline check, not a score
#: (``bench.runs.evaluation.eval_limit``, which reads it from here)
SMOKE_EVAL_LIMIT = 200


def spec_limit(spec: Mapping[str, Any]) -> int | None:
    """How many of the split's first examples the spec decodes: its ``--limit``, else 200 at the smoke budget
    (:data:`SMOKE_EVAL_LIMIT`), else None (the whole split); a limit of another form is returned as None here and
    named by :func:`examples_problem`."""
    limit = spec.get("limit")
    if limit is None and spec.get("budget") == "smoke":
        return SMOKE_EVAL_LIMIT
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def examples_problem(rec: Mapping[str, Any]) -> Problem | None:
    """What in a complete run record's ``data`` contradicts the examples its spec scores (``data.n_examples`` and
    ``data.partial`` against the split's registered size and ``spec.limit``); None when nothing does."""
    from bench.api.errors import DataError
    from bench.api.registry import RegistryError

    spec, data = rec.get("spec"), rec.get("data")
    if not isinstance(spec, Mapping) or not isinstance(data, Mapping):
        return None
    if spec.get("limit") is not None and spec_limit(spec) is None:
        return Problem("spec.limit", f"must be a positive integer or absent (the whole split), got {spec['limit']!r}")
    try:
        from bench.data import TASKS

        split = TASKS.get(str(spec.get("task"))).split(str(spec.get("split")))
    except (RegistryError, DataError):  # a plugin's task without its plugin: its size is not known here
        return None
    limit = spec_limit(spec)
    n = split.count if limit is None else min(limit, split.count)
    partial = split.partial or n < split.count
    said = ("the whole split" if limit is None else f"--limit {limit}" if spec.get("limit") is not None
            else f"a smoke run: the first {limit}")
    if "n_examples" in data and data["n_examples"] != n:  # absent: a hand-made record (--deep holds it to the spec)
        return Problem("data.n_examples", f"is {data.get('n_examples')!r}, but its spec ({said} of "
                                          f"{spec['task']}/{spec['split']}, {split.count:,} examples) scores {n:,}")
    if "partial" in data and data["partial"] is not partial:
        return Problem("data.partial", f"is {data['partial']!r}, but its spec ({said} of {spec['task']}/"
                                       f"{spec['split']}) scores {'a part' if partial else 'all'} of the split")
    return None
