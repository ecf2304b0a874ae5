"""XSum ROUGE recipes: ROUGE-1.5.5 reproduces the published files; pltrdy and rouge-score as protocols."""

import os
import re
from pathlib import Path

import pytest

from bench.api.types import Example, Split
from bench.scoring import score_split
from bench.scoring.recipes_sum import pltrdy_hyps
from bench.scoring.rouge155 import run_rouge155

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
XSUM = DATA / "xsum"
needs_data = pytest.mark.skipif(not (XSUM / "gold-test-sentences.txt").is_file(),
                                reason=f"shared data not found under {DATA}")


def _lines(p: Path) -> list[str]:
    return p.read_text(encoding="utf-8").split("\n")[:-1]


def _split(refs: list[str]) -> Split:
    exs = tuple(Example(id=str(i), source="", target=r, fields={}) for i, r in enumerate(refs))
    return Split(task="xsum", name="test", examples=exs, sha256="0" * 64)


def test_rouge155_per_item_order_follows_the_sorted_file_names():
    refs = [f"story number {i} is about a cat ." for i in range(12)]
    hyps = ["completely unrelated words here"] * 12
    hyps[10] = refs[10]  # s.10.txt sorts before s.2.txt: per-item scores must still land on line 10
    hyps[3] = ""  # empty hypothesis: scored 0, no crash
    res = run_rouge155(hyps, refs)
    f1 = res.per_item["ROUGE-1"]
    assert f1[10] == 1.0 and f1[3] == 0.0 and max(f1[:10] + f1[11:]) < 0.5
    assert set(res.average) == {"ROUGE-1", "ROUGE-2", "ROUGE-L"}


@needs_data
def test_pltrdy_recipe_equals_files_rouge_on_mist_prepared_files(tmp_path):
    from rouge import FilesRouge

    refs = _lines(XSUM / "gold-test-sentences.txt")[:200]
    hyps = _lines(XSUM / "outputs" / "ptgen-test-output.txt")[:200]
    hyps[5] = "the play ##er said [SEP] [SEP] it ' s over - done ( really ) ."
    sc = score_split("rouge-pltrdy", hyps, _split(refs), bootstrap=0)
    # the MIST pipeline written out by hand: sed fixes, no final newline, lowercased refs
    text = "\n".join(hyps).replace(" ##", "").replace("[SEP]", "")
    text = "\n".join(" ".join(_dedup(line.split())) for line in text.split("\n"))
    for a, b in ((" - ", " "), (" ' s", "'s"), (" ,", ","), (" .", "."), ("( ", "("), (" )", ")")):
        text = text.replace(a, b)
    (tmp_path / "hyp.txt").write_text(text, encoding="utf-8")
    (tmp_path / "ref.txt").write_text("\n".join(r.lower() for r in refs) + "\n", encoding="utf-8")
    want = FilesRouge().get_scores(str(tmp_path / "hyp.txt"), str(tmp_path / "ref.txt"), avg=True)
    for ours, theirs in (("rouge1", "rouge-1"), ("rouge2", "rouge-2"), ("rougeL", "rouge-l")):
        assert sc.metrics[ours] / 100 == pytest.approx(want[theirs]["f"], rel=1e-12)
    assert "rouge-pltrdy-1.0.1" in sc.signature
    assert pltrdy_hyps(["a b", "c d ."])[-1] == "c d"  # last line loses its last character


def _dedup(toks):
    out = []
    for t in toks:
        if len(out) >= 2 and t == out[-1]:
            continue
        out.append(t)
    return out


def _published(path: Path) -> dict[str, dict[str, float]]:
    """{'F': {'ROUGE-1': 29.70, 'ROUGE-2': ..., 'ROUGE-L': ...}, 'P': ..., 'R': ...} from a .rouge file."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"(f-score|precision|recall) >> ROUGE\(1/2/3/L/SU4\): (.*)", line)
        if m:
            v = [float(x) for x in m.group(2).split("/")]
            out[{"f-score": "F", "precision": "P", "recall": "R"}[m.group(1)]] = {
                "ROUGE-1": v[0], "ROUGE-2": v[1], "ROUGE-L": v[3]}
    return out


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("system", ["ptgen", "convs2s"])
def test_rouge155_reproduces_the_published_xsum_numbers(system):
    refs = _lines(XSUM / "gold-test-sentences.txt")
    hyps = _lines(XSUM / "outputs" / f"{system}-test-output.txt")
    res = run_rouge155(hyps, refs)
    published = _published(XSUM / "outputs" / f"{system}-test-output.rouge")
    for stat in "FPR":
        for name in ("ROUGE-1", "ROUGE-2", "ROUGE-L"):
            assert round(100 * res.average[name][stat], 2) == published[stat][name], (stat, name)
