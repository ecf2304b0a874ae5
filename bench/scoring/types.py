"""Values the scorer returns: ``Scores`` (one recipe on one output) and the prepared ``Items``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.scoring.resample import ItemStats

SCORING_VERSION = "0.1"


@dataclass
class Items:
    """Scoring items after a recipe's text preparation and key grouping (one per key)."""

    keys: list[str]
    hyps: list[str]
    refs: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class Scores:
    """Corpus scores of one recipe: metrics and CI bounds are x100, as papers print them.

    ``signature`` names the recipe, its text preparation, metric versions and the resampling
    seed; it must be printed and stored next to every number. ``notes`` carries warnings (empty
    hypotheses, missing final newline, ...). ``item_stats`` keeps the per-item sufficient
    statistics for paired tests (not serialised).
    """

    recipe: str
    signature: str
    metrics: dict[str, float]
    ci: dict[str, list[float]]
    n_items: int
    notes: list[str] = field(default_factory=list)
    item_stats: dict[str, ItemStats] = field(default_factory=dict, repr=False, compare=False)
    item_keys: list[str] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The ``scores[<recipe>]`` entry of a run record (docs/run-record.md)."""
        return {"signature": self.signature, "metrics": dict(self.metrics),
                "ci": {k: list(v) for k, v in self.ci.items()}, "n_items": self.n_items,
                "notes": list(self.notes)}

    def __str__(self) -> str:
        vals = " / ".join(f"{k} {v:.3f}" for k, v in self.metrics.items())
        return f"{self.signature} = {vals}"
