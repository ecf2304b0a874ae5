"""A task's leaderboard as ranked groups: like with like, best first, in significance clusters.

Why groups: a run over the first 2,000 test examples and one over the whole split score different
examples, so their numbers cannot be compared; each set of examples is a group of its own, ranked
within itself and named ("whole test split", "first 2,000 of test").

Why clusters: a strict order claims differences the data may not support. As in WMT's human
rankings, runs share a cluster, shown as the span of their positions ("1–3"), unless every run
above a boundary differs significantly from every run below it under ``bench compare``'s paired
bootstrap on the headline metric, Holm-corrected over the group's boundaries
(:mod:`bench.report.clusters` says why).

Why some runs are not ranked, by one rule per kind, in every group alike:

- a harness reference baseline (system family ``reference``: copy the source, lead-1; no training)
  is context, not a contender: never ranked, but drawn at its score's place among the ranked runs (a
  marked line), so a reader sees at once which runs beat it and which do not
  (:func:`reference_above_all` says when none does);
- a run whose outputs are byte-identical (same sha256) to a ranked run's is that run again (one model
  under two names, e.g. CopyBERT's SpanBERT row at the cpu budget): ranked once, and listed right
  under it as "= same outputs as …";
- a degenerate run (near-constant outputs can score above a model that learned: BLEU rewards frequent
  n-grams) is flagged and listed after them, unranked; so is a run without the headline score.

Pure logic over records and a pair test: :mod:`bench.report.significance` supplies the test from
the stored outputs; the unit tests supply their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.report.clusters import ALPHA, Boundary, Clustering, form_clusters
from bench.scoring.output_stats import degeneracy

__all__ = ["ALPHA", "REFERENCE_FAMILY", "REFERENCE_RANK", "ExampleSet", "Headline", "Ranked", "RankedGroup",
           "ReferenceLead", "group_records", "headline", "is_reference", "rank_group", "reference_above_all"]

#: the system family of the harness's reference baselines (systems/__init__.py)
REFERENCE_FAMILY = "reference"
#: the rank column of a reference baseline's line (drawn at its score's place, never ranked)
REFERENCE_RANK = "ref"
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


def is_reference(rec: dict) -> bool:
    """A harness reference baseline (no training): a property of the system, the same in every group."""
    return rec.get("kind") != "external" and (rec.get("system") or {}).get("family") == REFERENCE_FAMILY


def outputs_key(rec: dict) -> str:
    """What makes two runs the same run on a board: their outputs' sha256 (empty: unknown, never shared)."""
    return str((rec.get("outputs") or {}).get("sha256") or "")


@dataclass
class Ranked:
    """One run on the board: its position, cluster label, and why it is unranked (if it is)."""

    record: dict
    value: float | None
    position: int | None = None  # 1-based among ranked runs
    rank: str = "–"  # "1", "1–3"; "=" for a run ranked once as another; "ref" for a reference; "–" for an unranked run
    p_next: float | None = None  # paired bootstrap p against the next ranked run (uncorrected)
    flags: list[str] = field(default_factory=list)  # degeneracy reasons (never for a reference baseline)
    unranked: str = ""  # why the run has no rank of its own
    reference: bool = False  # a harness reference baseline
    same_as: str = ""  # run id of the ranked run whose outputs these are

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
    clustering: Clustering | None = None  # the boundaries behind the ranks, when tested

    @property
    def name(self) -> str:
        return self.examples.name

    @property
    def n_clusters(self) -> int:
        return len({r.rank for r in self.rows if r.position is not None})

    def boundary_below(self, r: Ranked) -> Boundary | None:
        """The boundary between ``r`` and the next ranked run (None: last, or untested)."""
        if self.clustering is None or r.position is None or r.position > len(self.clustering.boundaries):
            return None
        return self.clustering.boundaries[r.position - 1]


def group_records(records: Sequence[dict]) -> dict[ExampleSet, list[dict]]:
    """Records by the examples they scored, whole splits first."""
    out: dict[ExampleSet, list[dict]] = {}
    for rec in records:
        out.setdefault(ExampleSet.of(rec), []).append(rec)
    return {k: out[k] for k in sorted(out, key=ExampleSet.sort_key)}


def _by_score(r: Ranked) -> tuple:
    return (r.value is None, -(r.value or 0.0), r.record["run_id"])


def _trained_own_model(rec: dict) -> bool:
    """Whether the run's system trained the model it decoded (its workdir bears the system's name)."""
    workdir = Path(str((rec.get("model") or {}).get("workdir", ""))).name
    return workdir.startswith(f"{rec['spec']['system']}--")


def _set_aside(rows: list[Ranked], head: Headline) -> None:
    """Fill ``unranked`` (and ``same_as``) by the rules of the module docstring."""
    for r in rows:
        if r.value is None:
            r.unranked = f"not scored with recipe {head.recipe}"
        elif r.reference:
            r.unranked = "reference baseline (no training): drawn at its score's place for context, never ranked"
            r.rank = REFERENCE_RANK
        elif r.degenerate:
            r.unranked = "degenerate outputs: not evidence of learning"
    same: dict[str, list[Ranked]] = {}
    for r in rows:
        if not r.unranked and outputs_key(r.record):
            same.setdefault(outputs_key(r.record), []).append(r)
    for twins in same.values():
        if len(twins) < 2:
            continue
        owner = min(twins, key=lambda r: (not _trained_own_model(r.record), r.record["run_id"]))
        for r in twins:
            if r is not owner:
                r.same_as = owner.record["run_id"]
                r.rank = "="
                r.unranked = (f"the same outputs as {owner.record['spec']['system']} "
                              f"({owner.record['run_id']}): one model, ranked once")


def rank_group(
    examples: ExampleSet,
    records: Sequence[dict],
    head: Headline,
    test: PairTest | None,
    untested_reason: str = "",
    alpha: float = ALPHA,
) -> RankedGroup:
    """Rank one group: contenders by the headline metric (best first; ties by run id), clustered by
    :func:`bench.report.clusters.form_clusters` over ``test`` (a p-value per pair); each run with
    another's outputs right under it; each reference baseline at its score's place among them (above the first
    ranked run it beats; ties: below), unranked; then degenerate runs and runs without the headline score,
    unranked. ``test=None``: no clusters (one per run), a plain order by score."""
    rows = []
    for rec in records:
        ref = is_reference(rec)
        rows.append(Ranked(rec, head.value(rec), flags=[] if ref else degeneracy(rec.get("output_stats")),
                           reference=ref))
    _set_aside(rows, head)
    ranked = sorted((r for r in rows if not r.unranked), key=_by_score)
    for i, r in enumerate(ranked):
        r.position = i + 1
        r.rank = str(r.position)
    clustering = None
    if test is not None and ranked:
        cache: dict[tuple[int, int], float] = {}

        def p(a: int, b: int) -> float:
            if (a, b) not in cache:
                cache[a, b] = test(ranked[a].record, ranked[b].record)
            return cache[a, b]

        clustering = form_clusters(len(ranked), p, alpha)
        for i, r in enumerate(ranked[:-1]):
            r.p_next = cache[i, i + 1]
        for i, r in enumerate(ranked):
            lo, hi = clustering.span_of(i)
            r.rank = str(lo + 1) if lo == hi else f"{lo + 1}–{hi + 1}"
    twins = [r for r in rows if r.same_as]
    refs = sorted((r for r in rows if r.reference and r.value is not None), key=_by_score)
    ordered: list[Ranked] = []
    for r in ranked:
        while refs and r.value is not None and refs[0].value is not None and refs[0].value > r.value:
            ordered.append(refs.pop(0))  # a reference that beats this run is drawn above it
        ordered.append(r)
        ordered += sorted((t for t in twins if t.same_as == r.record["run_id"]), key=lambda t: t.record["run_id"])
    ordered += refs  # below every ranked run
    placed = {id(r) for r in ordered}
    rest = sorted((r for r in rows if r.unranked and id(r) not in placed),
                  key=lambda r: (not r.reference, *_by_score(r)))
    return RankedGroup(examples, ordered + rest, tested=test is not None, untested_reason=untested_reason,
                       clustering=clustering)


@dataclass(frozen=True)
class ReferenceLead:
    """A reference baseline that scores above every ranked run of a group: what a board must say first."""

    reference: Ranked
    best: Ranked  # the group's best ranked run
    cis_apart: bool | None  # whether the two 95 % CIs are disjoint (None: a CI is missing): the gap is not noise


def reference_above_all(group: RankedGroup, head: Headline) -> list[ReferenceLead]:
    """Each reference baseline of ``group`` whose headline is above every ranked run's, best first; empty when a
    trained run beats every reference, or when nothing is ranked."""
    ranked = sorted((r for r in group.rows if r.position is not None and r.value is not None),
                    key=lambda r: r.position or 0)
    if not ranked:
        return []
    best = ranked[0]
    out = []
    for r in sorted((r for r in group.rows if r.reference and r.value is not None), key=_by_score):
        if r.value is not None and best.value is not None and r.value > best.value:
            a, b = head.ci(r.record), head.ci(best.record)
            out.append(ReferenceLead(r, best, None if a is None or b is None else a[0] > b[1]))
    return out
