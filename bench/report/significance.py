"""The pair test behind a leaderboard's rank clusters, computed at ``bench table`` time.

It is ``bench compare``'s paired bootstrap (:func:`bench.scoring.resample.paired_bootstrap`, same
resamples and seed), on the headline metric only, over the examples both runs scored: each run's
stored outputs are read back (checked by sha256) and re-scored into per-item statistics. Only a
recipe's light metrics qualify (no METEOR jar, no Perl ROUGE per run); for any other headline, or
when a run's outputs or the data are not here, the group is left untested and says why.

Re-scoring every run of every task takes tens of seconds on two cores, so each p-value is kept in
``$BENCH_CACHE/leaderboard/pvalues.json`` (default ``.cache/``), keyed by both outputs' sha256, the
split's sha256, the recipe signature, the metric and the resampling: the same inputs give the same
p-value, so the cache changes how long ``bench table`` takes, never what it writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.report.ranking import Headline, metric_label

#: the resamples and seed of `bench compare` (bench.scoring.api.compare)
SAMPLES = 1000
SEED = 12345


class Untestable(Exception):
    """Why a group's runs cannot be tested against each other here (one line)."""


def cache_file() -> Path:
    from bench.runs import cache_root

    return cache_root() / "leaderboard" / "pvalues.json"


class PairedBootstrap:
    """p-values of pairs of runs on the headline metric; per-item statistics computed once per run."""

    def __init__(self, head: Headline, data_dir: Path | None = None, samples: int = SAMPLES, seed: int = SEED,
                 cache: Path | None = None):
        self.head, self.data_dir, self.samples, self.seed = head, data_dir, samples, seed
        self._stats: dict[tuple[str, str], Any] = {}
        self._cache_path = cache if cache is not None else cache_file()
        self._cache: dict[str, float] | None = None
        self._dirty = False

    def check_recipe(self) -> None:
        """Raise :class:`Untestable` when the headline metric needs an external tool per run."""
        from bench.scoring import RECIPES

        recipe = RECIPES.get(self.head.recipe)
        if self.head.metric not in recipe.light_metrics:
            raise Untestable(
                f"per-item {metric_label(self.head.metric)} under recipe {self.head.recipe} needs its external tool "
                "for every run, too slow for `bench table`; `bench compare RUN_A RUN_B` tests any pair"
            )

    def stats(self, rec: dict) -> Any:
        key = (rec["run_id"], str((rec.get("outputs") or {}).get("sha256", "")))
        if key not in self._stats:
            from bench.errors import UserError
            from bench.run_lookup import outputs_of, split_of
            from bench.scoring.api import item_stats

            try:
                self._stats[key] = item_stats(self.head.recipe, outputs_of(rec), split_of(rec, self.data_dir),
                                              self.head.metric)
            except (UserError, OSError, ValueError, KeyError) as exc:  # missing or edited outputs, no data here
                raise Untestable(f"{rec['run_id']}: {' '.join(str(exc).split())}") from exc
        return self._stats[key]

    def _key(self, a: dict, b: dict) -> str:
        def one(rec: dict) -> str:
            return f"{rec['outputs']['sha256']}@{rec['scores'][self.head.recipe]['signature']}"

        first, second = sorted((one(a), one(b)))  # the test is symmetric in its two runs
        split = a["data"].get("split_sha256", "")
        return f"{first}|{second}|{split}|{self.head.metric}|{self.samples}|{self.seed}"

    def _cached(self) -> dict[str, float]:
        if self._cache is None:
            try:
                self._cache = {k: float(v) for k, v in json.loads(self._cache_path.read_text()).items()}
            except (OSError, ValueError, AttributeError):
                self._cache = {}
        return self._cache

    def p(self, a: dict, b: dict) -> float:
        """``bench compare``'s p_bootstrap for runs ``a`` and ``b`` (raises :class:`Untestable`)."""
        from bench.scoring.resample import paired_bootstrap

        key = self._key(a, b)
        cached = self._cached()
        if key not in cached:
            cached[key] = paired_bootstrap(self.stats(a), self.stats(b), self.samples, self.seed)
            self._dirty = True
        return cached[key]

    def save(self) -> None:
        """Keep the p-values for the next ``bench table``; a cache that cannot be written is skipped."""
        if not self._dirty or self._cache is None:
            return
        from bench.atomic import write_json_atomic

        try:
            self._cache_path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self._cache_path, dict(sorted(self._cache.items())))
        except OSError:
            return
        self._dirty = False
