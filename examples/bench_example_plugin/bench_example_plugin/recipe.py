"""``exact_match``: the share of outputs equal to their reference after lowercasing and collapsing spaces.

A recipe is text preparation + a metric core + a signature; subclassing ``LineRecipe`` reuses the
line-aligned preparation (one reference per example) and the scorer's bootstrap CI.
"""

from __future__ import annotations

from bench.scoring.recipes_sum import LineRecipe
from bench.scoring.resample import ItemStats, mean_stats
from bench.scoring.session import ScoringSession
from bench.scoring.types import Items


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class ExactMatch(LineRecipe):
    name, family, metrics = "exact_match", "em", ("exact_match",)

    def signature_body(self, source: str) -> str:
        return f"refs:{'target' if source == 'split' else 'file'}|norm:lower+ws"

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        hits = [float(_norm(h) == _norm(r[0])) for h, r in zip(items.hyps, items.refs, strict=True)]
        value = sum(hits) / len(hits) if hits else 0.0
        return {"exact_match": value}, {"exact_match": mean_stats(hits)}, []


EXACT_MATCH = ExactMatch()
