"""A task's leaderboard as ranked groups: like with like, best first, in significance clusters.

Why groups: a run over the first 2,000 test examples and one over the whole split score different
examples, so their numbers cannot be compared; each set of examples is a group of its own, ranked
within itself and named ("whole test split", "first 2,000 of test").

Why clusters: a strict order claims differences the data may not support. As in WMT's human
rankings, neighbouring runs whose paired bootstrap (``bench compare``'s test, here on the headline
metric) is not significant share a cluster, shown as the span of their positions ("1–3").

Why degenerate runs sit apart: a near-constant output can score above a model that learned (BLEU
rewards frequent n-grams), so such a run is flagged and never ranked above a healthy one; it is
listed after the ranked runs, unranked.

Pure logic over records and a pair test: :mod:`bench.report.significance` supplies the test from
the stored outputs; the unit tests supply their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.scoring.output_stats import degeneracy

#: significance level of the pair test between neighbours
ALPHA = 0.05
#: metrics tried, in order, for a task's headline when its first default recipe has no BLEU-4
HEADLINE_METRICS = ("bleu4", "rouge2", "rougeL")

PairTest = Callable[[dict, dict], float]


@dataclass(frozen=True)
class Headline:
    """The number a task's leaderboard ranks by: one metric under one recipe."""

    recipe: str
    metric: str

    @property
    def label(self) -> str:
        return f"{metric_label(self.metric)} ({self.recipe})"

    def value(self, rec: dict) -> float | None:
        value = ((rec["scores"].get(self.recipe) or {}).get("metrics") or {}).get(self.metric)
        return None if value is None else float(value)

    def ci(self, rec: dict) -> tuple[float, float] | None:
        ci = ((rec["scores"].get(self.recipe) or {}).get("ci") or {}).get(self.metric)
        return (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None


_METRIC_LABELS = {
    "bleu1": "BLEU-1", "bleu2": "BLEU-2", "bleu3": "BLEU-3", "bleu4": "BLEU-4", "meteor": "METEOR",
    "rougeL": "ROUGE-L", "rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "exact_match": "Exact match",
}


def metric_label(metric: str) -> str:
    return _METRIC_LABELS.get(metric, metric)


def headline(task: str, records: Sequence[dict]) -> Headline | None:
    """The first default recipe of the task (the first recipe any record has, for a task not
    registered here) and its BLEU-4, else the first of :data:`HEADLINE_METRICS` it reports."""
    from bench.data import TASKS

    recipes = list(TASKS.get(task).default_recipes) if task in TASKS else []
    recipes += sorted({name for r in records for name in r["scores"]} - set(recipes))
    for recipe in recipes:
        have = {m for r in records for m in ((r["scores"].get(recipe) or {}).get("metrics") or {})}
        if not have:
            continue
        metric = next((m for m in HEADLINE_METRICS if m in have), sorted(have)[0])
        return Headline(recipe, metric)
    return None


@dataclass(frozen=True, order=True)
class ExampleSet:
    """The test examples a run scored: a whole split, or its first ``n`` (``bench run --limit``)."""

    split: str
    partial: bool
    n: int
    split_sha256: str = ""

    @classmethod
    def of(cls, rec: dict) -> ExampleSet:
        data = rec.get("data") or {}
        return cls(rec["spec"]["split"], bool(data.get("partial")), int(data.get("n_examples") or 0),
                   str(data.get("split_sha256") or ""))

    @property
    def name(self) -> str:
        """The group's name on the page: "whole test split" or "first 2,000 of test"."""
        return f"first {self.n:,} of {self.split}" if self.partial else f"whole {self.split} split"

    @property
    def slug(self) -> str:
        return f"{self.split}-first{self.n}" if self.partial else f"{self.split}-whole"

    def sort_key(self) -> tuple:
        """Whole splits first, then the larger subsets."""
        return (self.split, self.partial, -self.n, self.split_sha256)


@dataclass
class Ranked:
    """One run on the board: its position, cluster label, and why it is unranked (if it is)."""

    record: dict
    value: float | None
    position: int | None = None  # 1-based among ranked runs
    rank: str = "–"  # "1", "1–3"; "–" for an unranked run
    p_next: float | None = None  # paired bootstrap p against the next ranked run
    flags: list[str] = field(default_factory=list)  # degeneracy reasons
    unranked: str = ""  # why the run has no rank

    @property
    def degenerate(self) -> bool:
        return bool(self.flags)


@dataclass
class RankedGroup:
    """The runs over one :class:`ExampleSet`, ranked best first, then the unranked ones."""

    examples: ExampleSet
    rows: list[Ranked]
    tested: bool  # False: significance not computed, positions are a plain order by score
    untested_reason: str = ""

    @property
    def name(self) -> str:
        return self.examples.name

    @property
    def n_clusters(self) -> int:
        return len({r.rank for r in self.rows if r.position is not None})


def group_records(records: Sequence[dict]) -> dict[ExampleSet, list[dict]]:
    """Records by the examples they scored, whole splits first."""
    out: dict[ExampleSet, list[dict]] = {}
    for rec in records:
        out.setdefault(ExampleSet.of(rec), []).append(rec)
    return {k: out[k] for k in sorted(out, key=ExampleSet.sort_key)}


def rank_group(
    examples: ExampleSet,
    records: Sequence[dict],
    head: Headline,
    test: PairTest | None,
    untested_reason: str = "",
    alpha: float = ALPHA,
) -> RankedGroup:
    """Rank one group: healthy runs by the headline metric (best first; ties by run id), each next
    run joining the current cluster unless ``test`` (a p-value) says it differs; then degenerate
    runs and runs without the headline score, unranked. ``test=None``: no clusters (one per run)."""
    rows = [Ranked(rec, head.value(rec), flags=degeneracy(rec.get("output_stats"))) for rec in records]
    for r in rows:
        if r.value is None:
            r.unranked = f"not scored with recipe {head.recipe}"
        elif r.degenerate:
            r.unranked = "degenerate outputs: not evidence of learning"
    ranked = sorted((r for r in rows if not r.unranked), key=lambda r: (-(r.value or 0.0), r.record["run_id"]))
    rest = sorted((r for r in rows if r.unranked), key=lambda r: (r.value is None, -(r.value or 0.0),
                                                                  r.record["run_id"]))
    clusters: list[list[Ranked]] = []
    for i, r in enumerate(ranked):
        r.position = i + 1
        if i == 0:
            clusters.append([r])
            continue
        prev = ranked[i - 1]
        if test is not None:
            prev.p_next = test(prev.record, r.record)
        if test is not None and prev.p_next is not None and prev.p_next >= alpha:
            clusters[-1].append(r)
        else:
            clusters.append([r])
    for members in clusters:
        lo, hi = members[0].position, members[-1].position
        for r in members:
            r.rank = str(lo) if lo == hi else f"{lo}–{hi}"
    return RankedGroup(examples, ranked + rest, tested=test is not None, untested_reason=untested_reason)
