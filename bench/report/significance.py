"""The pair test behind a leaderboard's rank clusters, computed at ``bench table`` time.

It is ``bench compare``'s paired bootstrap (:func:`bench.scoring.resample.paired_bootstrap`, same
resamples and seed), on the headline metric only, over the examples both runs scored: each run's
stored outputs are read back (checked by sha256) and re-scored into per-item statistics. Only a
recipe's light metrics qualify (no METEOR jar, no Perl ROUGE per run); for any other headline, or
when a run's outputs or the data are not here, the group is left untested and says why.

Re-scoring every run of every task takes tens of seconds on two cores and needs the data and every
run's outputs (a submission's live in the shared data folder), so the p-values are kept beside the
records, in ``results/significance/pvalues.json`` (:class:`bench.store.pvalues.PValues`), and committed
with them: a table is then checked, and rendered the same, on a machine without the data. Each key names both
outputs' sha256, the split's sha256, the recipe signature, the metric and the resampling, so an
entry can never stand for other outputs; ``bench table`` keeps exactly the entries its pages use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.ranking import Headline, metric_label
from bench.store.pvalues import PValues

#: the resamples and seed of `bench compare` (bench.scoring.api.compare)
SAMPLES = 1000
SEED = 12345


class Untestable(Exception):
    """Why a group's runs cannot be tested against each other here (one line)."""


class PairedBootstrap:
    """p-values of pairs of runs on the headline metric; per-item statistics computed once per run."""

    def __init__(self, head: Headline, data_dir: Path | None = None, samples: int = SAMPLES, seed: int = SEED,
                 store: PValues | None = None):
        self.head, self.data_dir, self.samples, self.seed = head, data_dir, samples, seed
        self._stats: dict[tuple[str, str], Any] = {}
        self.store = store if store is not None else PValues()

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
            from bench.api.errors import UserError
            from bench.runs.lookup import outputs_of, split_of
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

    def p(self, a: dict, b: dict) -> float:
        """``bench compare``'s p_bootstrap for runs ``a`` and ``b`` (raises :class:`Untestable`)."""
        from bench.scoring.resample import paired_bootstrap

        key = self._key(a, b)
        value = self.store.get(key)
        if value is None:
            value = paired_bootstrap(self.stats(a), self.stats(b), self.samples, self.seed)
            self.store.put(key, value)
        return value
