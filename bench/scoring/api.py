"""Public scoring functions: score a split or files under a recipe, all recipes, or compare two outputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.api.types import Split
from bench.scoring.catalog import RECIPES
from bench.scoring.errors import ScoringInputError
from bench.scoring.inputs import read_lines
from bench.scoring.recipe import Recipe
from bench.scoring.resample import ItemStats, approximate_randomization_many, paired_tests
from bench.scoring.session import ScoringSession
from bench.scoring.types import Items, Scores


def _recipe(name: str) -> Recipe:
    return RECIPES.get(name)


def applicable_recipes(task_family_or_task_name: str) -> list[str]:
    """Recipe names that apply to a task (``squad_qg``, ``xsum`` ...) or family (``qg`` ...).

    Read from the task registry (``Task.recipes``), the single source of truth: a new task declares
    its recipes where it is defined, and nothing here needs editing.
    """
    from bench.data import TASKS

    if task_family_or_task_name in TASKS:
        return list(TASKS.get(task_family_or_task_name).recipes)
    for name in TASKS.names():
        task = TASKS.get(name)
        if task.family == task_family_or_task_name:
            return list(task.recipes)
    known = ", ".join(sorted(set(TASKS.names()) | {TASKS.get(n).family for n in TASKS.names()}))
    raise ScoringInputError(f"No scoring recipes for '{task_family_or_task_name}'. Known: {known}.")


def _run(recipe: Recipe, items: Items, session: ScoringSession | None, source: str, bootstrap: int,
         seed: int) -> Scores:
    if recipe.uses_meteor and session is None:
        with ScoringSession() as own:
            return recipe.score(items, own, source, bootstrap, seed)
    return recipe.score(items, session, source, bootstrap, seed)


def score_split(recipe: str, hyps: Sequence[str], split: Split, session: ScoringSession | None = None,
                bootstrap: int = 1000, seed: int = 12345) -> Scores:
    """Score one hypothesis per example of ``split`` (split order) under ``recipe``."""
    r = _recipe(recipe)
    return _run(r, r.prepare_split(list(hyps), split), session, "split", bootstrap, seed)


def score_files(recipe: str, hyp_path: str | Path, ref_path: str | Path, key_path: str | Path | None = None,
                session: ScoringSession | None = None, bootstrap: int = 1000, seed: int = 12345) -> Scores:
    """Score external files: hypothesis/reference/key line i belong together."""
    r = _recipe(recipe)
    key = read_lines(key_path) if key_path is not None else None
    items = r.prepare_files(read_lines(hyp_path), read_lines(ref_path), key)
    return _run(r, items, session, "files", bootstrap, seed)


def score_all(hyps: Sequence[str], split: Split, session: ScoringSession | None = None,
              bootstrap: int = 1000, seed: int = 12345, recipes: Sequence[str] | None = None) -> list[Scores]:
    """The same outputs under every applicable recipe (protocol sensitivity), one METEOR process.

    All recipes are prepared first and their METEOR items queued at once, so Java aligns while
    Python computes BLEU/ROUGE, and items shared by several recipes are aligned once.
    """
    names = list(recipes) if recipes is not None else applicable_recipes(split.task)
    own = session is None
    sess = session or ScoringSession()
    try:
        prepared = [(r, r.prepare_split(list(hyps), split)) for r in map(_recipe, names)]
        for r, items in prepared:
            if r.uses_meteor:
                r.submit(items, sess)
        return [r.score(items, sess, "split", bootstrap, seed) for r, items in prepared]
    finally:
        if own:
            sess.close()


def item_stats(recipe: str, hyps: Sequence[str], split: Split, metric: str) -> ItemStats:
    """Per-item statistics of one metric of ``recipe`` (one of its ``light_metrics``): the input of
    :func:`~bench.scoring.resample.paired_bootstrap`, without the external tools, so that ``bench table``
    can test every adjacent pair of a leaderboard with the test :func:`compare` runs."""
    r = _recipe(recipe)
    return r.light_stats(r.prepare_split(list(hyps), split), metric)


def compare(recipe: str, hyps_a: Sequence[str], hyps_b: Sequence[str], split: Split,
            session: ScoringSession | None = None, bootstrap: int = 1000, ar_trials: int = 10000,
            seed: int = 12345, delta_ci: bool = False) -> dict[str, Any]:
    """Paired significance of B vs A on the same items, per metric of ``recipe``.

    Returns ``{"recipe", "signature", "n_items", "delta_is", "a", "b", "metrics": {m: {"a", "b", "delta",
    "p_bootstrap", "p_ar"}}}`` (scores x100; ``delta`` is a − b, as ``bench compare`` prints it, and
    ``delta_is`` says so). Paired bootstrap and approximate randomisation as sacreBLEU implements them for
    BLEU, here from each metric's per-item statistics. ``delta_ci`` adds ``"ci95_a_minus_b"``: the 95 %
    interval of a − b over the bootstrap's resamples.
    """
    own = session is None
    sess = session or ScoringSession()
    r = _recipe(recipe)
    try:
        items_a, items_b = (r.prepare_split(list(h), split) for h in (hyps_a, hyps_b))
        if r.uses_meteor:  # both queued first, so Java aligns B's items while Python scores A's (as score_all)
            r.submit(items_a, sess)
            r.submit(items_b, sess)
        sa = r.score(items_a, sess, "split", bootstrap, seed)
        sb = r.score(items_b, sess, "split", bootstrap, seed)
    finally:
        if own:
            sess.close()
    if sa.item_keys != sb.item_keys:
        raise ScoringInputError("compare: the two outputs were grouped into different items; they must "
                                "score the same split with the same recipe.")
    out: dict[str, Any] = {"recipe": recipe, "signature": sa.signature + f"|ar:{ar_trials}",
                           "n_items": sa.n_items, "delta_is": "a - b", "a": sa.to_json(), "b": sb.to_json(),
                           "metrics": {}}
    pairs = {m: (sa.item_stats[m], sb.item_stats[m]) for m in sa.metrics}
    boot = paired_tests(pairs, bootstrap, seed, delta_ci) if bootstrap > 0 else {}
    ar = approximate_randomization_many(pairs, ar_trials, seed) if ar_trials > 0 else {}
    for m in sa.metrics:
        out["metrics"][m] = {
            "a": sa.metrics[m], "b": sb.metrics[m], "delta": sa.metrics[m] - sb.metrics[m],
            "p_bootstrap": boot[m][0] if m in boot else None, "p_ar": ar.get(m),
        }
        ci = boot[m][1] if m in boot else None
        if ci is not None:
            out["metrics"][m]["ci95_a_minus_b"] = [100 * x for x in ci]
    return out
