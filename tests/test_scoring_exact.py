"""Exact reproduction of the published QG scorer output on the full Du et al. test set.

The NQG outputs scored with ``nqg`` must print 42.496 / 12.056 / 16.355 / 39.501 and with ``unilm``
42.489 / 12.043 / 16.351 / 39.499 (BLEU-1 / BLEU-4 / METEOR / ROUGE-L, x100, 3 decimals), and the
corpus values must equal pycocoevalcap's own ``Bleu``/``Rouge`` (run here) and ``Meteor`` output.
"""

import os
from collections import defaultdict
from pathlib import Path

import pytest

from bench.scoring import ScoringSession, score_files
from bench.scoring.inputs import read_lines
from bench.scoring.recipe import group_last

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
DU = DATA / "du2017"
HYP = DATA / "qg_outputs" / "nqg-du2017-test.txt"
pytestmark = pytest.mark.skipif(not HYP.is_file(), reason=f"shared data not found under {DATA}")

# pycocoevalcap 1.2's Meteor().compute_score on the nqg grouping (its EVAL answer), full precision
COCO_METEOR_NQG = 0.16354594998864683


@pytest.fixture(scope="module")
def session():
    with ScoringSession() as s:
        yield s


@pytest.mark.parametrize("split, keys", [("test", 6652), ("dev", 6795)])
def test_du_grouping_counts(split, keys):
    src = read_lines(DU / f"src-{split}.txt").legacy()
    tgt = read_lines(DU / f"tgt-{split}.txt").legacy()
    items = group_last(src, tgt, tgt)
    assert len(items) == keys
    assert sum(len(r) for r in items.refs) == len(src)


def _published(sc):
    m = sc.metrics
    return tuple(round(m[k], 3) for k in ("bleu1", "bleu4", "meteor", "rougeL"))


@pytest.mark.slow
def test_nqg_recipe_exact(session):
    sc = score_files("nqg", HYP, DU / "tgt-test.txt", DU / "src-test.txt", session=session)
    assert _published(sc) == (42.496, 12.056, 16.355, 39.501)
    assert sc.n_items == 6652 and sc.notes == []
    assert sc.signature == "qg:nqg|key:file|refs:file|agg:last|hyp:none|meteor:1.5-coco|boot:1000,seed:12345|v:0.1"
    assert sc.metrics["meteor"] / 100 == pytest.approx(COCO_METEOR_NQG, rel=1e-15, abs=0)
    # the corpus values are pycocoevalcap's own
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.rouge.rouge import Rouge

    src, tgt, hyp = (read_lines(p).legacy() for p in (DU / "src-test.txt", DU / "tgt-test.txt", HYP))
    res, gts = {}, defaultdict(list)
    for k, r, h in zip(src, tgt, hyp, strict=True):
        res[k] = [h]
        gts[k].append(r)
    bleu, _ = Bleu(4).compute_score(dict(gts), res, verbose=0)
    rouge, _ = Rouge().compute_score(dict(gts), res)
    assert [sc.metrics[f"bleu{k}"] / 100 for k in range(1, 5)] == pytest.approx(bleu, rel=1e-15, abs=0)
    assert sc.metrics["rougeL"] / 100 == pytest.approx(rouge, rel=1e-15, abs=0)
    for m, (lo, hi) in sc.ci.items():  # every corpus score has a bootstrap CI around it
        assert lo < sc.metrics[m] < hi and hi - lo < 2.0


@pytest.mark.slow
def test_unilm_recipe_exact_and_reuses_the_session(session):
    sc = score_files("unilm", HYP, DU / "tgt-test.txt", DU / "src-test.txt", session=session)
    assert _published(sc) == (42.489, 12.043, 16.351, 39.499)
    assert session.meteor_starts == 1


def test_legacy_recipes_drop_the_last_char_without_final_newline(session, tmp_path):
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("what is it ?\nwhere is it ?x")  # no final newline: 'x' is dropped by line[:-1]
    ref = tmp_path / "ref.txt"
    ref.write_text("what is it ?\nwhere is it ?\n")
    key = tmp_path / "key.txt"
    key.write_text("a\nb\n")
    sc = score_files("nqg", hyp, ref, key, session=session, bootstrap=0)
    assert sc.metrics["bleu1"] == pytest.approx(100.0) and sc.metrics["rougeL"] == pytest.approx(100.0)
    assert any("no final newline" in n for n in sc.notes)
    assert score_files("glge", hyp, ref, key, session=session, bootstrap=0).metrics["bleu1"] < 100


def _load_split(name: str):
    try:
        from bench.data import load_split
    except ImportError:
        pytest.skip("bench.data.load_split is not available yet")
    return load_split("squad_qg", name)


@pytest.mark.slow
def test_split_route_matches_the_file_route_and_groups_keys(session):
    from bench.scoring import RECIPES, score_split

    split = _load_split("test")
    hyps = read_lines(HYP).lines
    sc = score_split("nqg", hyps, split, session=session)
    assert _published(sc) == (42.496, 12.056, 16.355, 39.501) and sc.n_items == 6652
    assert sc.signature.startswith("qg:nqg|key:du-sentence|refs:du2017|agg:last|hyp:none|")
    assert _published(score_split("unilm", hyps, split, session=session)) == (42.489, 12.043, 16.351, 39.499)
    dev = _load_split("dev")
    assert len(RECIPES.get("nqg").prepare_split([""] * len(dev), dev)) == 6795
    # the passage+answer recipes group by (answer, paragraph): fewer items than questions
    assert 6652 < len(RECIPES.get("mist").prepare_split(hyps, split)) < 11877
