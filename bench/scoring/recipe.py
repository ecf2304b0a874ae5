"""The recipe interface: text preparation + key grouping + metric cores -> ``Scores`` with a signature."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from bench.api.types import Split
from bench.scoring.inputs import Lines
from bench.scoring.resample import ItemStats, bootstrap_values, ci95
from bench.scoring.session import ScoringSession
from bench.scoring.types import SCORING_VERSION, Items, Scores


class Recipe(ABC):
    """One published scoring protocol. Subclasses say which Example fields they read."""

    name: str
    family: str  # signature prefix: qg, quora, xsum, bleu
    metrics: tuple[str, ...]
    uses: tuple[str, ...]  # Example attributes/fields the recipe reads from a split
    uses_meteor: bool = False
    #: metrics whose per-item statistics need no external tool (no METEOR jar, no Perl ROUGE), so
    #: ``bench table`` can afford them for every run it ranks (:meth:`light_stats`)
    light_metrics: tuple[str, ...] = ()

    @abstractmethod
    def prepare_split(self, hyps: Sequence[str], split: Split) -> Items:
        """Items from in-memory hypotheses (one per example, split order) and the split's fields."""

    @abstractmethod
    def prepare_files(self, hyp: Lines, ref: Lines, key: Lines | None) -> Items:
        """Items from external files (the ``--ref/--key`` route)."""

    @abstractmethod
    def signature_body(self, source: str) -> str:
        """Recipe-specific signature fields; ``source`` is 'split' or 'files'."""

    @abstractmethod
    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        """Corpus values (fractions, from the official tool) and per-item statistics per metric."""

    def submit(self, items: Items, session: ScoringSession) -> None:  # noqa: B027 (optional hook)
        """Queue slow external work early (METEOR) so it overlaps other recipes; optional."""

    def light_stats(self, items: Items, metric: str) -> ItemStats:
        """Per-item statistics of one of :attr:`light_metrics`, the very ones :meth:`compute` gives.

        Why: a leaderboard ranks every run of a task with the paired test of ``bench compare``; that
        needs per-item statistics of the headline metric only, and must not start Java or Perl for each
        run. Recipes whose light metrics are cheaper alone override this; the default computes all.
        """
        if metric not in self.light_metrics:
            from bench.scoring.errors import ScoringInputError

            raise ScoringInputError(
                f"Recipe '{self.name}': per-item {metric} needs its external tool; light metrics: "
                f"{', '.join(self.light_metrics) or 'none'}."
            )
        return self.compute(items, None)[1][metric]

    def signature(self, source: str, bootstrap: int, seed: int) -> str:
        return f"{self.family}:{self.name}|{self.signature_body(source)}|boot:{bootstrap},seed:{seed}" \
               f"|v:{SCORING_VERSION}"

    def score(self, items: Items, session: ScoringSession | None, source: str, bootstrap: int,
              seed: int) -> Scores:
        values, stats, notes = self.compute(items, session)
        boot = bootstrap_values(stats, bootstrap, seed)
        ci = {k: [100 * x for x in ci95(v)] for k, v in boot.items()} if bootstrap > 0 else {}
        return Scores(recipe=self.name, signature=self.signature(source, bootstrap, seed),
                      metrics={k: 100 * values[k] for k in self.metrics}, ci=ci, n_items=len(items),
                      notes=items.notes + notes, item_stats=stats, item_keys=list(items.keys))


def group_last(keys: Sequence[str], hyps: Sequence[str], refs: Sequence[str]) -> Items:
    """One item per distinct key (first-seen order): all its references, its *last* hypothesis."""
    order: dict[str, int] = {}
    out = Items([], [], [])
    for k, h, r in zip(keys, hyps, refs, strict=True):
        i = order.get(k)
        if i is None:
            order[k] = len(out.keys)
            out.keys.append(k)
            out.hyps.append(h)
            out.refs.append([r])
        else:
            out.hyps[i] = h
            out.refs[i].append(r)
    return out
