"""What a run evaluates: which examples of the split (all, a stated first-N, or the smoke budget's 200) and
whether every recipe the task records is registered, checked before anything is trained."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from bench.runs.spec import RunSpec
from bench.store.examples import SMOKE_EVAL_LIMIT as SMOKE_EVAL_LIMIT  # re-exported: its old home


def check_recipes(task: Any) -> None:
    """Every recipe the task records must be registered, checked before ``fit`` (not after hours of training)."""
    from bench.scoring import RECIPES

    for name in task.default_recipes:
        RECIPES.get(name)  # unknown: a RegistryError naming the close match and the known recipes


def eval_limit(spec: RunSpec) -> int | None:
    """How many test examples a run decodes: the spec's limit, else 200 for smoke, else the whole
    split (None)."""
    if spec.limit is not None:
        return spec.limit
    if spec.budget == "smoke":
        return SMOKE_EVAL_LIMIT
    return None


def first_examples(split: Any, limit: int | None) -> Any:
    """The first ``limit`` examples as a partial split with its own hash and a note saying so."""
    if limit is None or limit >= len(split):
        return split
    examples = split.examples[:limit]
    digest = hashlib.sha256(json.dumps([ex.id for ex in examples]).encode() + split.sha256.encode()).hexdigest()
    note = f"first {limit:,} of {len(split):,} examples of {split.task}/{split.name}"
    return replace(split, examples=examples, sha256=digest, partial=True,
                   note=f"{note}; {split.note}" if split.note else note)
