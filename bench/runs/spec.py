"""What a run is: :class:`RunSpec` (system, task, split, budget, overrides, seed, limit, training split), its run
id, and the range checks every command that makes one applies before any file, workdir or record exists."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.api.errors import UserError
from bench.api.system import MAX_SEED  # the largest seed a run (and every family's ``seed`` field) takes


class SpecRangeError(UserError, ValueError):
    """A run's ``--limit`` or ``--seed`` out of range: refused when the spec is made, before any file,
    workdir or record exists (``--limit -1`` once decoded 29,999 examples and recorded "first -1")."""


def check_limit(limit: int | None) -> None:
    """``--limit N`` decodes the first N examples, so N is a count ≥ 1 (None: the whole split)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SpecRangeError(f"--limit {limit}: limit must be ≥ 1 (got {limit}); leave --limit out for the "
                             "whole split")


def check_seed(seed: int) -> None:
    """A seed numpy, torch and every family's config accept."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise SpecRangeError(f"--seed {seed}: seed must be in [0, {MAX_SEED}] (got {seed})")


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a run's outcome; its hash is the run's identity. Its numbers are checked when
    it is made, so every command that builds one (run, reproduce, queue, calibrate) refuses them up front."""

    system: str
    task: str
    split: str = "test"
    budget: str = "smoke"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 42
    limit: int | None = None  # decode/score only the first N examples of the split (a stated subset)
    #: the split that trains the model, None: the task's own ``train`` (bench.data.training.training_split: XSum's
    #: smoke runs train on ``validation-available`` where the full corpus is absent)
    train_split: str | None = None

    def __post_init__(self) -> None:
        check_limit(self.limit)
        check_seed(self.seed)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["overrides"] = dict(sorted(self.overrides.items()))
        if self.limit is None:
            del out["limit"]  # keeps run ids of full-split runs independent of this field
        if self.train_split is None:
            del out["train_split"]  # likewise: runs that train on the task's own train split keep their ids
        return out

    @property
    def run_id(self) -> str:
        from bench.store.ids import run_id_of  # the one formula: every reader holds a run record to it

        return run_id_of(self.to_json())

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RunSpec:
        return cls(
            system=obj["system"],
            task=obj["task"],
            split=obj.get("split", "test"),
            budget=obj.get("budget", "smoke"),
            overrides=dict(obj.get("overrides", {})),
            seed=int(obj.get("seed", 42)),
            limit=obj.get("limit"),
            train_split=obj.get("train_split"),
        )
