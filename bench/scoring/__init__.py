"""The common scorer: published scoring protocols as named recipes, each number with a signature.

Public API: ``RECIPES`` (lazy registry), ``score_split``, ``score_files``, ``score_all``, ``compare``,
``applicable_recipes``, ``ScoringSession``, ``Scores``, and the error types. Metric cores are
pycocoevalcap 1.2 (BLEU, METEOR 1.5 jar, ROUGE-L), Perl ROUGE-1.5.5, pltrdy ``rouge``,
``rouge-score`` and sacreBLEU; the recipes add the text preparation around them (docs/protocols.md).
Importing this package is cheap: recipes and tools load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bench.scoring.catalog import RECIPES

_LAZY = {
    "score_split": "bench.scoring.api", "score_files": "bench.scoring.api", "score_all": "bench.scoring.api",
    "compare": "bench.scoring.api", "applicable_recipes": "bench.scoring.api",
    "ScoringSession": "bench.scoring.session", "Scores": "bench.scoring.types",
    "ScoringError": "bench.scoring.errors", "ScoringInputError": "bench.scoring.errors",
    "ToolMissingError": "bench.scoring.errors", "ToolFailedError": "bench.scoring.errors",
    "read_hypotheses": "bench.scoring.inputs",
}

if TYPE_CHECKING:
    from bench.scoring.api import applicable_recipes, compare, score_all, score_files, score_split
    from bench.scoring.errors import ScoringError, ScoringInputError, ToolFailedError, ToolMissingError
    from bench.scoring.inputs import read_hypotheses
    from bench.scoring.session import ScoringSession
    from bench.scoring.types import Scores


def __getattr__(name: str) -> Any:
    """A public name of a submodule (``score_split``), else a submodule itself (``bench.scoring.recipe``)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    from bench.api.lazy import submodules

    return submodules(__name__)(name)


__all__ = ["RECIPES", "ScoringError", "ScoringInputError", "ScoringSession", "Scores", "ToolFailedError",
           "ToolMissingError", "applicable_recipes", "compare", "read_hypotheses", "score_all", "score_files",
           "score_split"]
