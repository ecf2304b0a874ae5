"""The recipe registry: every named scoring protocol, registered lazily (a recipe's module loads on first use).

Its own module so that the scoring package's parts (``bench.scoring.api``) read it without importing the
package that re-exports them.
"""

from __future__ import annotations

from typing import Any

from bench.api.registry import Registry


def _check_recipe(name: str, recipe: Any) -> None:
    from bench.api.registry import check_named
    from bench.scoring.recipe import Recipe

    check_named("recipe", name, recipe, Recipe, "an instance of a bench.scoring.recipe.Recipe subclass", "recipe")


#: installed plugins add recipes through the ``bench.recipes`` entry-point group (bench.env.plugins)
RECIPES: Registry[Any] = Registry("recipe", entry_point_group="bench.recipes", check=_check_recipe)
for _name, _ref, _fam in (
    ("nqg", "bench.scoring.recipes_qg:NQG", "qg"),
    ("unilm", "bench.scoring.recipes_qg:UNILM", "qg"),
    ("unilm-tok", "bench.scoring.recipes_qg:UNILM_TOK", "qg"),
    ("glge", "bench.scoring.recipes_qg:GLGE", "qg"),
    ("mist", "bench.scoring.recipes_qg:MIST", "qg"),
    ("mist-quora", "bench.scoring.recipes_qg:MIST_QUORA", "paraphrase"),
    ("rouge155", "bench.scoring.recipes_sum:ROUGE155", "summarization"),
    ("rouge-pltrdy", "bench.scoring.recipes_sum:ROUGE_PLTRDY", "summarization"),
    ("rouge-score", "bench.scoring.recipes_sum:ROUGE_SCORE", "summarization"),
    ("sacrebleu", "bench.scoring.recipes_sum:SACREBLEU", "any"),
):
    RECIPES.register(_name, _ref, family=_fam)
