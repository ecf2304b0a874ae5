"""Bootstrap CIs from per-item statistics and the paired significance tests."""

import numpy as np
import pytest

from bench.api.types import Example, Split
from bench.scoring import applicable_recipes, coco, compare, score_split
from bench.scoring.resample import ItemStats, approximate_randomization, ci95, mean_stats, paired_bootstrap

REFS = [f"the {w} sat on the mat near the door" for w in
        ["cat", "dog", "bird", "fox", "cow", "pig", "hen", "owl", "bee", "ant"] * 6]


def _split() -> Split:
    exs = tuple(Example(id=str(i), source=f"doc {i}", target=r, fields={}) for i, r in enumerate(REFS))
    return Split(task="xsum", name="test-available", examples=exs, sha256="0" * 64, partial=True)


def test_bleu_from_item_stats_equals_pycocoevalcap_corpus_value():
    hyps = ["the cat sat on a mat", "a dog sat near the door", "", "the fox sat on the mat near the door"]
    refs = [[r] for r in REFS[:4]]
    cooked = [coco.cook_bleu(h, r) for h, r in zip(hyps, refs, strict=True)]
    official = coco.bleu_corpus(cooked)
    rows = coco.bleu_rows(cooked)
    for k in range(1, 5):
        assert ItemStats(rows, lambda s, n, k=k: coco.bleu_from_sums(s, k)).value() == pytest.approx(
            official[k - 1], rel=1e-12)


def test_ci95_uses_sacrebleu_bounds():
    vals = np.arange(1000, dtype=float)
    assert ci95(vals) == (25.0, 974.0)


def test_bootstrap_is_seeded_and_brackets_the_score():
    hyps = [r.replace("sat", "stood") if i % 3 else r for i, r in enumerate(REFS)]
    a = score_split("rouge-score", hyps, _split(), bootstrap=200, seed=1)
    b = score_split("rouge-score", hyps, _split(), bootstrap=200, seed=1)
    c = score_split("rouge-score", hyps, _split(), bootstrap=200, seed=2)
    assert a.ci == b.ci and a.ci != c.ci
    assert "boot:200,seed:1" in a.signature
    for m, (lo, hi) in a.ci.items():
        assert lo <= a.metrics[m] <= hi and lo < hi


def test_paired_tests_separate_clearly_different_outputs_and_not_identical_ones():
    good = list(REFS)
    bad = [" ".join(r.split()[::-1]) for r in REFS]
    diff = compare("sacrebleu", bad, good, _split(), bootstrap=300, ar_trials=500)
    m = diff["metrics"]["bleu4"]
    assert m["delta"] < -50 and m["p_bootstrap"] < 0.01 and m["p_ar"] < 0.01
    same = compare("rouge-score", good, good, _split(), bootstrap=300, ar_trials=500)
    for m in same["metrics"].values():
        assert m["delta"] == 0 and m["p_bootstrap"] == 1.0 and m["p_ar"] == 1.0


def test_paired_tests_on_a_mean_metric_by_hand():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 1, 400)
    b = a + 0.001 * rng.standard_normal(400)  # no real difference
    p_bs = paired_bootstrap(mean_stats(a), mean_stats(b), 500, 3)
    p_ar = approximate_randomization(mean_stats(a), mean_stats(b), 500, 3)
    assert p_bs > 0.05 and p_ar > 0.05


def test_scores_to_json_matches_the_run_record_schema():
    sc = score_split("sacrebleu", list(REFS), _split(), bootstrap=50)
    js = sc.to_json()
    assert set(js) == {"signature", "metrics", "ci", "n_items", "notes"}
    assert js["metrics"]["bleu4"] == pytest.approx(100.0) and js["n_items"] == len(REFS)
    assert js["signature"].startswith("bleu:sacrebleu|refs:target|agg:none|nrefs:1|")


def test_applicable_recipes():
    assert applicable_recipes("squad_qg") == ["nqg", "unilm", "unilm-tok", "glge", "mist", "sacrebleu"]
    assert applicable_recipes("xsum") == ["rouge155", "rouge-pltrdy", "rouge-score"]
    assert applicable_recipes("paraphrase") == ["mist-quora", "sacrebleu"]
    with pytest.raises(Exception, match="No scoring recipes for 'nope'"):
        applicable_recipes("nope")


def test_the_batched_paired_tests_are_the_per_metric_ones_bit_for_bit() -> None:
    """`bench compare` draws each resample and swap once for every metric (BLEU-1..4 share one statistics matrix);
    the p-values and the CI of Δ must be exactly what one call per metric gives (cached results stay valid)."""
    from functools import partial

    from bench.scoring.coco import bleu_from_sums
    from bench.scoring.resample import (
        ItemStats,
        approximate_randomization,
        approximate_randomization_many,
        mean_stats,
        paired_bootstrap,
        paired_delta_ci,
        paired_tests,
    )

    rng = np.random.default_rng(7)
    n = 257  # not a multiple of any chunk
    rows_a, rows_b = (np.abs(rng.normal(5, 2, size=(n, 10))).round() for _ in range(2))
    for rows in (rows_a, rows_b):
        rows[:, 6:10] = np.minimum(rows[:, 6:10], rows[:, 2:6])  # matches never exceed guesses
    pairs = {f"bleu{k}": (ItemStats(rows_a, partial(lambda s, _n, k: bleu_from_sums(s, k), k=k)),
                          ItemStats(rows_b, partial(lambda s, _n, k: bleu_from_sums(s, k), k=k))) for k in (1, 4)}
    pairs["rougeL"] = (mean_stats(rng.random(n)), mean_stats(rng.random(n)))
    many_ar = approximate_randomization_many(pairs, 1234, 5)
    many_boot = paired_tests(pairs, 321, 5, delta_ci=True)
    for name, (a, b) in pairs.items():
        assert many_ar[name] == approximate_randomization(a, b, 1234, 5)
        assert many_boot[name] == (paired_bootstrap(a, b, 321, 5), paired_delta_ci(a, b, 321, 5))
    assert paired_tests(pairs, 321, 5)["rougeL"][1] is None and approximate_randomization_many({}, 10, 5) == {}


def test_references_cooked_once_give_the_same_items() -> None:
    cache: dict = {}
    for hyp in ("the cat sat on a mat", "", "a dog"):
        assert coco.cook_bleu(hyp, REFS[:2], cache) == coco.cook_bleu(hyp, REFS[:2])
    assert list(cache) == [tuple(REFS[:2])]  # one cooking for three hypotheses
