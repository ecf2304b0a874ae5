"""Rank clusters on constructed records: `bench compare`'s paired bootstrap decides who shares a rank.

The records are made here, with outputs scored against a constructed split, so the test knows which
runs are the same (identical outputs) and which one is clearly better (it copies the references).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from bench.api.types import Example, Split
from bench.report.board import build_board
from bench.report.ranking import ExampleSet, Headline, group_records, rank_group, reference_above_all
from bench.report.significance import PairedBootstrap
from bench.store.pvalues import PValues

HEAD = Headline("sacrebleu", "bleu4")  # no Java: the same paired bootstrap, fast
HEALTHY = {"n": 200, "distinct_ratio": 0.99, "reference_distinct_ratio": 1.0, "most_frequent": "x",
           "most_frequent_share": 0.005, "length_ratio": 1.0, "repeated_trigram_rate": 0.0, "at_max_len": 0.01}
DEGENERATE = dict(HEALTHY, distinct_ratio=0.01, most_frequent_share=0.9)


def _split(n: int = 200) -> Split:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(300)]
    examples = tuple(
        Example(f"q{i}", " ".join(rng.choices(words, k=12)), " ".join(rng.choices(words, k=10))) for i in range(n)
    )
    return Split("quora", "test", examples, sha256="constructed")


def _noisy(text: str, keep: float, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(w if rng.random() < keep else "zzz" for w in text.split())


class Given(PairedBootstrap):
    """The real test (per-item statistics -> paired_bootstrap), on outputs held in memory."""

    def __init__(self, split: Split, outputs: dict[str, list[str]], cache: Path):
        super().__init__(HEAD, store=PValues(cache))
        self.split, self.outputs = split, outputs

    def stats(self, rec: dict):
        from bench.scoring.api import item_stats

        return item_stats(HEAD.recipe, self.outputs[rec["run_id"]], self.split, HEAD.metric)


def _record(run_id: str, outputs: list[str], split: Split, stats: dict | None = None, n: int | None = None,
            partial: bool = False) -> dict:
    from bench.scoring.api import item_stats

    value = 100 * item_stats(HEAD.recipe, outputs, split, HEAD.metric).value()
    digest = hashlib.sha256("\n".join(outputs).encode()).hexdigest()
    return {
        "run_id": run_id, "kind": "run", "status": "complete",
        "spec": {"system": run_id.split("--")[0], "task": "quora", "split": "test", "budget": "cpu", "seed": 1,
                 "overrides": {}},
        "data": {"n_examples": n or len(outputs), "partial": partial, "split_sha256": "constructed"},
        "outputs": {"sha256": digest, "path": f"results/outputs/{run_id}.txt", "n": len(outputs)},
        "output_stats": stats or HEALTHY,
        "scores": {HEAD.recipe: {"metrics": {"bleu4": value}, "ci": {"bleu4": [value - 1, value + 1]},
                                 "signature": "bleu:sacrebleu|constructed", "n_items": len(outputs)}},
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Split, dict[str, list[str]], list[dict]]:
    split = _split()
    refs = [ex.target for ex in split.examples]
    twin = [_noisy(t, 0.5, i) for i, t in enumerate(refs)]
    outputs = {
        "best--quora--test--cpu--s1--00000001": refs,  # copies the references: clearly better
        "twin_a--quora--test--cpu--s1--00000002": twin,
        "twin_b--quora--test--cpu--s1--00000003": list(twin),  # identical outputs to twin_a
        "worst--quora--test--cpu--s1--00000004": [_noisy(t, 0.15, 1000 + i) for i, t in enumerate(refs)],
        "constant--quora--test--cpu--s1--00000005": refs[:1] * len(refs),
    }
    records = [_record(rid, outs, split, DEGENERATE if rid.startswith("constant") else None)
               for rid, outs in outputs.items()]
    # the degenerate run scores above every healthy run but one, to show it is never ranked above them
    records[-1]["scores"][HEAD.recipe]["metrics"]["bleu4"] = 99.0
    return split, outputs, records


def test_identical_outputs_are_ranked_once_and_a_clearly_better_run_stands_alone(runs, tmp_path) -> None:
    split, outputs, records = runs
    test = Given(split, outputs, tmp_path / "p.json")
    group = rank_group(ExampleSet.of(records[0]), records, HEAD, test.p)
    order = [r.record["spec"]["system"] for r in group.rows]
    assert order[0] == "best" and group.rows[0].rank == "1"  # alone: significantly better than every run below
    assert order[1:3] == ["twin_a", "twin_b"]  # the twin listed right under the run it repeats
    twin_a, twin_b = group.rows[1], group.rows[2]
    assert twin_a.rank == "2" and twin_a.position == 2
    assert twin_b.rank == "=" and twin_b.position is None and twin_b.same_as == twin_a.record["run_id"]
    assert "ranked once" in twin_b.unranked
    assert order[3] == "worst" and group.rows[3].rank == "3"  # positions count each model once
    assert group.rows[0].p_next is not None and group.rows[0].p_next < 0.05
    assert group.tested and group.n_clusters == 3


def test_the_run_that_trained_the_model_is_the_one_ranked(runs, tmp_path) -> None:
    split, outputs, records = runs
    recs = [dict(r) for r in records]
    recs[1]["model"] = {"workdir": ".cache/runs/twin_b--quora--test--cpu--s1--00000003"}  # twin_a decodes b's model
    recs[2]["model"] = {"workdir": ".cache/runs/twin_b--quora--test--cpu--s1--00000003"}
    group = rank_group(ExampleSet.of(recs[0]), recs, HEAD, Given(split, outputs, tmp_path / "p.json").p)
    by = {r.record["spec"]["system"]: r for r in group.rows}
    assert by["twin_b"].rank == "2" and by["twin_a"].same_as == by["twin_b"].record["run_id"]


def test_a_reference_baseline_is_unranked_in_every_group_whatever_its_score(runs, tmp_path) -> None:
    """Never ranked, but drawn at its score's place: here the best score, so the first line."""
    split, outputs, records = runs
    ref = dict(records[0], system={"family": "reference", "name": "best"})  # the best score of the group
    for stats in (None, DEGENERATE):  # healthy on one subset, degenerate-looking on another: one rule
        rec = dict(ref, output_stats=stats or records[0]["output_stats"])
        group = rank_group(ExampleSet.of(rec), [rec, *records[1:4]], HEAD, Given(split, outputs, tmp_path / "p.json").p)
        row = next(r for r in group.rows if r.reference)
        assert row is group.rows[0] and row.position is None and row.rank == "ref"
        assert not row.flags and "reference baseline" in row.unranked
        assert [r.position for r in group.rows[1:] if not r.same_as] == [1, 2]
        (lead,) = reference_above_all(group, HEAD)  # what the board's first lines say
        assert lead.reference is row and lead.best is group.rows[1] and lead.cis_apart is True


def test_a_reference_is_drawn_between_the_runs_its_score_falls_between(runs, tmp_path) -> None:
    split, outputs, records = runs
    best, twin_a, twin_b, worst = records[:4]
    middle = (HEAD.value(twin_a) + HEAD.value(worst)) / 2  # type: ignore[operator]
    ref = dict(worst, run_id="copy_source--quora--test--cpu--s1--0000000f", system={"family": "reference"},
               scores={HEAD.recipe: dict(worst["scores"][HEAD.recipe], metrics={"bleu4": middle})})
    group = rank_group(ExampleSet.of(best), [ref, best, twin_a, twin_b, worst], HEAD,
                       Given(split, outputs, tmp_path / "p.json").p)
    assert [r.rank for r in group.rows] == ["1", "2", "=", "ref", "3"]  # below the twin pair, above the worst
    assert reference_above_all(group, HEAD) == []  # a trained run beats it: nothing to say first
def test_a_degenerate_run_is_flagged_and_never_ranked_above_a_healthy_run(runs, tmp_path) -> None:
    split, outputs, records = runs
    group = rank_group(ExampleSet.of(records[0]), records, HEAD, Given(split, outputs, tmp_path / "p.json").p)
    last = group.rows[-1]
    assert last.record["spec"]["system"] == "constant" and last.value == 99.0  # the best number of the group
    assert last.degenerate and last.rank == "–" and last.position is None and "degenerate" in last.unranked
    assert all(r.position is not None for r in group.rows[:-1] if not r.same_as)


def test_the_cluster_test_is_bench_compares_paired_bootstrap(runs, tmp_path) -> None:
    from bench.scoring.api import compare

    split, outputs, records = runs
    best, twin = records[0], records[1]
    p = Given(split, outputs, tmp_path / "p.json").p(best, twin)
    result = compare(HEAD.recipe, outputs[best["run_id"]], outputs[twin["run_id"]], split, ar_trials=0)
    assert p == result["metrics"]["bleu4"]["p_bootstrap"]


def test_p_values_are_cached_by_outputs_and_recipe(runs, tmp_path) -> None:
    split, outputs, records = runs
    cache = tmp_path / "p.json"
    first = Given(split, outputs, cache)
    p = first.p(records[1], records[3])
    first.store.save()
    assert cache.is_file()

    class NoStats(Given):
        def stats(self, rec):  # a warm cache needs no re-scoring
            raise AssertionError("re-scored a cached pair")

    again = NoStats(split, outputs, cache)
    assert again.p(records[3], records[1]) == p  # symmetric key


def test_runs_over_different_examples_are_separate_named_groups(runs, tmp_path) -> None:
    split, outputs, records = runs
    small = Split("quora", "test", split.examples[:100], sha256="constructed")
    first100 = {f"{rid[:-1]}9": outs[:100] for rid, outs in list(outputs.items())[:2]}
    partial = [_record(rid, outs, small, n=100, partial=True) for rid, outs in first100.items()]
    groups = group_records(records + partial)
    assert [g.name for g in groups] == ["whole test split", "first 100 of test"]

    class Both(Given):
        def stats(self, rec):
            from bench.scoring.api import item_stats

            if rec["data"]["partial"]:
                return item_stats(HEAD.recipe, first100[rec["run_id"]], small, HEAD.metric)
            return super().stats(rec)

    board = build_board("quora", records + partial, test=Both(split, outputs, tmp_path / "p.json"))
    assert board.head == HEAD  # the task's first recipe (mist-quora) scored none of them
    whole, sub = board.groups
    assert len(whole.rows) == 5 and len(sub.rows) == 2
    assert sub.rows[0].rank == "1" and sub.rows[0].record["spec"]["system"] == "best"


def test_a_group_without_its_outputs_is_ranked_by_score_and_says_why(runs, tmp_path) -> None:
    _, _, records = runs
    board = build_board("quora", records, test=PairedBootstrap(HEAD, store=PValues(tmp_path / "p.json")))
    (group,) = board.groups
    assert not group.tested and "outputs" in group.untested_reason
    assert [r.rank for r in group.rows] == ["1", "2", "=", "3", "–"]  # a plain order, no clusters claimed


def test_stored_pvalues_keep_exactly_the_entries_a_build_uses(tmp_path) -> None:
    """The leaderboards' p-values live beside the records (committed), so a machine without the data renders
    the same pages; a build keeps only what it used, and --check notices a file that is not that."""
    from bench.store.pvalues import PValues, pvalues_file

    path = pvalues_file(tmp_path)
    first = PValues(path)
    first.put("a|b", 0.25)
    first.put("c|d", 0.5)
    first.save()
    second = PValues(path)
    assert second.get("a|b") == 0.25  # used one of the two entries: the file holds more
    assert second.stale()
    second.save()
    assert PValues(path).known == {"a|b": 0.25}
    third = PValues(path)
    third.get("a|b")
    assert not third.stale()
