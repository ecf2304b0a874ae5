"""The leaderboard page's default view, rendered from constructed records (no browser: the HTML text).

Ranked groups named by their examples, compact columns (none left empty), the degeneracy flag beside the
system, reference runs as marked lines at their score's place (and the first lines saying when one beats every
ranked run), submissions marked, each speed-up's timing setting in a footnote, details with every recipe, a
labelled quality-vs-speed plot.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from bench.report.leaderboard import task_page
from bench.store.latency import load_latency_records

REPO = Path(__file__).resolve().parents[1]
HEALTHY = {"n": 100, "distinct_ratio": 0.9, "reference_distinct_ratio": 0.95, "most_frequent": "x",
           "most_frequent_share": 0.01, "length_ratio": 1.0, "repeated_trigram_rate": 0.0, "at_max_len": 0.0}


def _rec(system: str, bleu: float, n: int = 30000, partial: bool = False, kind: str = "run",
         stats: dict | None = None, overrides: dict | None = None, tag: str = "0") -> dict:
    budget = "external" if kind == "external" else "cpu"
    rec = {
        "run_id": f"{system}--quora--test--{budget}--s42--{tag * 8}", "kind": kind, "status": "complete",
        "spec": {"system": system, "task": "quora", "split": "test", "budget": budget, "seed": 42,
                 "overrides": overrides or {}},
        "data": {"n_examples": n, "partial": partial, "split_sha256": "s"},
        "outputs": {"sha256": f"sha-{system}-{tag}", "path": "results/outputs/none.txt", "n": n},
        "output_stats": stats or HEALTHY,
        "system": {"family": "reference" if system == "copy_source" else "NAR", "backbone": "minilm-l6"},
        "scores": {
            "mist-quora": {"metrics": {"bleu1": bleu + 20, "bleu4": bleu, "meteor": bleu + 5},
                           "ci": {"bleu4": [bleu - 0.3, bleu + 0.3]}, "signature": "quora:mist-quora|x",
                           "n_items": 900},
            "sacrebleu": {"metrics": {"bleu4": bleu - 1}, "ci": {}, "signature": "bleu:sacrebleu|x", "n_items": n},
        },
    }
    if kind == "external":
        rec["submission"] = {"name": f"{system}_release"}
    return rec


class Scripted:
    """A pair test with fixed p-values (by system pair), standing in for the paired bootstrap."""

    def __init__(self, same: set[frozenset[str]]):
        self.same = same

    def check_recipe(self) -> None:
        pass

    def p(self, a: dict, b: dict) -> float:
        return 0.5 if frozenset((a["spec"]["system"], b["spec"]["system"])) in self.same else 0.001

    def save(self) -> None:
        pass


@pytest.fixture(scope="module")
def page() -> str:
    records = [
        _rec("fairseq_nat", 14.7),  # MIST Table 3's NAT row at the cpu budget: its speed-up is measured
        _rec("fairseq_transformer", 23.3),
        _rec("encoder_minilm_l6", 23.1),
        _rec("copy_source", 31.5, stats=dict(HEALTHY, most_frequent_share=0.5)),  # a reference baseline: marked,
        # never ranked (nor flagged: not a learned model), whatever its score and outputs
        _rec("collapsed", 40.0, stats=dict(HEALTHY, most_frequent_share=0.5)),  # degenerate, best number
        _rec("nqg", 12.0, kind="external"),
        _rec("mist_minilm_l6", 11.5, n=2000, partial=True, overrides={"iterations": 3}, tag="1"),
        _rec("mist_minilm_l6", 11.4, n=2000, partial=True, tag="2"),
    ]
    same = {frozenset(("fairseq_transformer", "encoder_minilm_l6"))}
    return task_page("quora", records, load_latency_records(REPO / "results"), test=Scripted(same))  # type: ignore[arg-type]


def _groups(page: str) -> list[tuple[str, list[list[str]]]]:
    """Each group's title and cell texts (a ``<wbr>`` break point inside a system name is no space)."""
    out = []
    for section in page.split('<section class="group"')[1:]:
        title = re.search(r"<h2>(.*?)</h2>", section, re.S).group(1)  # type: ignore[union-attr]
        rows = re.findall(r'<tr class="run[^"]*"[^>]*>(.*?)</tr>', section.split("</section>")[0], re.S)
        cells = [[re.sub(r"<[^>]+>", " ", c.replace("<wbr>", "")).split()
                  for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
                 for r in rows]
        out.append((re.sub(r"<[^>]+>", "", title), [[" ".join(c) for c in row] for row in cells]))
    return out


def test_groups_are_named_by_their_examples_and_ranked_within_themselves(page: str) -> None:
    (whole_title, whole), (sub_title, sub) = _groups(page)
    assert whole_title.startswith("Whole test split (30,000 examples") and sub_title.startswith("First 2,000 of test")
    systems = [row[1].split()[0] for row in whole]
    # the reference (31.5) at its score's place, above every ranked run; the degenerate run after them
    assert systems == ["copy_source", "fairseq_transformer", "encoder_minilm_l6", "fairseq_nat", "nqg_release",
                       "collapsed"]
    assert [row[0] for row in whole] == ["ref", "1–2", "1–2", "3", "4", "–"]  # not separated: one cluster
    assert [row[0] for row in sub] == ["1", "2"] and sub[0][1] == "mist_minilm_l6 iterations=3"


def test_compact_columns_with_the_flag_beside_the_system(page: str) -> None:
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", page, re.S)
    assert head is not None
    assert re.findall(r"<th[^>]*>(.*?)</th>", head.group(1)) == [
        "Rank", "System", "BLEU-4 (mist-quora)", "Budget", "Speed-up", "Paper row", ""]  # no empty Flag column
    (_, whole), _ = _groups(page)
    collapsed = whole[-1]
    assert collapsed[1] == "collapsed ⚠ degenerate" and collapsed[2].startswith("40.00")  # shown, flagged, unranked
    assert all("degenerate" not in row[1] for row in whole[:-1])
    assert whole[1][2] == "23.30 [23.00, 23.60]" and whole[1][3] == "cpu"
    assert re.search(r'<h2>Whole test split <small>\(30,000 examples', page)  # the examples: in the title


def test_reference_runs_and_submissions_are_marked(page: str) -> None:
    (_, whole), _ = _groups(page)
    assert whole[0][1] == "copy_source reference" and whole[0][0] == "ref" and whole[0][2].startswith("31.50")
    assert re.search(r'<tr class="run reference"[^>]*data-run="copy_source--', page)  # the marked line
    assert whole[4][1] == "nqg_release submitted" and whole[4][3] == "external"


def test_the_first_lines_say_that_no_ranked_run_beats_the_reference(page: str) -> None:
    first = re.findall(r'<p class="first">(.*?)</p>', page, re.S)
    assert len(first) == 1 and page.index('<p class="first">') < page.index('<p class="lede">')
    text = re.sub(r"<[^>]+>", "", first[0])
    assert text.startswith("No ranked run beats the reference copy_source (no training).")
    assert "Whole test split: 31.50 [31.20, 31.80] against the best ranked run, fairseq_transformer, 23.30" in text
    assert "The 95 % CIs do not overlap." in text
    assert "First 2,000" not in text  # no reference ran there


def test_no_first_lines_when_a_trained_run_beats_the_reference() -> None:
    records = [_rec("fairseq_transformer", 33.0), _rec("copy_source", 31.5), _rec("fairseq_nat", 14.7)]
    page = task_page("quora", records, test=Scripted(set()))  # type: ignore[arg-type]
    assert '<p class="first">' not in page
    (_, whole), = _groups(page)
    assert [row[0] for row in whole] == ["1", "ref", "2"]  # the reference between the runs it splits


def test_a_reference_name_in_the_first_lines_is_escaped() -> None:
    records = [_rec("fairseq_transformer", 23.0), dict(_rec("copy_source", 31.5), spec={
        **_rec("copy_source", 31.5)["spec"], "system": "copy<img src=x>"}, system={"family": "reference"})]
    page = task_page("quora", records, test=Scripted(set()))  # type: ignore[arg-type]
    first = re.search(r'<p class="first">(.*?)</p>', page, re.S)
    assert first is not None and "copy&lt;img src=x&gt;" in first.group(1) and "<img" not in page


def test_columns_no_run_fills_are_left_out() -> None:
    records = [_rec("encoder_minilm_l6", 10.0, overrides={"x": 1}), _rec("bert2bert_minilm_l6", 22.0)]
    page = task_page("quora", records, test=Scripted(set()))  # type: ignore[arg-type]
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", page, re.S)
    assert head is not None  # no speed-up measured, no paper row reproduced: neither column is drawn
    assert re.findall(r"<th[^>]*>(.*?)</th>", head.group(1)) == ["Rank", "System", "BLEU-4 (mist-quora)", "Budget", ""]
    assert re.findall(r'<tr class="details" hidden><td colspan="(\d+)">', page) == ["5", "5"]


def test_speed_up_and_paper_row_come_from_the_row_the_run_reproduces(page: str) -> None:
    (_, whole), _ = _groups(page)
    nat = whole[3]
    assert nat[5] == "MIST T3: NAT(Gu et al. 2017)"
    # timed on the architecture (latency record), marked †, keyed; a paired record's verdict beside it when not VALID
    assert re.fullmatch(r"\d+\.\d\d×†( (INCONCLUSIVE|UNSTABLE))? a", nat[4])
    assert 'href="index.html#mist-table3"' in page
    assert "results/latency/quora--test--paper--random--forced--" in page  # the record, named in the notes


def test_each_speed_up_names_its_device_threads_weights_and_batch_on_the_page(page: str) -> None:
    """Not only in a hover title: the footnote under the group, keyed from the cell."""
    whole = page.split('<section class="group"')[1].split("</section>")[0]
    note = re.search(r'<p class="timing-key">(.*?)</p>', whole, re.S)
    assert note is not None
    text = html.unescape(re.sub(r"<[^>]+>", "", note.group(1)))
    assert re.search(r"Speed-ups timed on: a\s?CPU [^,]+, 1 torch thread; random weights at paper sizes", text)
    assert "batch 1" in text and "† timed on the architecture of the paper row" in text
    assert '<sup class="key">a</sup>' in whole


def test_details_hold_every_recipe_and_the_pair_test(page: str) -> None:
    details = re.findall(r'<tr class="details" hidden><td colspan="7">(.*?)</td></tr>\n', page, re.S)
    assert len(details) == 8
    first = details[1]  # the first ranked run (the reference is drawn above it)
    assert "<td>mist-quora</td>" in first and "<td>sacrebleu</td>" in first and "<th>METEOR</th>" in first
    assert ("rank 1–2: no boundary below: largest paired-bootstrap p over the pairs it separates = 0.500, "
            "Holm-adjusted 0.500 (α = 0.05); vs the next ranked run alone p = 0.500") in first
    second = details[2]
    assert "rank 1–2: a cluster boundary below" in second and "Holm-adjusted 0.003" in second


def test_quality_vs_speed_plot_labels_its_points(page: str) -> None:
    svg = re.search(r'<section id="quality-vs-speed">(.*?)</section>', page, re.S)
    assert svg is not None
    labels = re.findall(r'<text [^>]*class="lbl">(.*?)</text>', svg.group(1))
    assert {"fairseq_nat", "fairseq_transformer", "encoder_minilm_l6"} <= set(labels)
    assert '<polyline points="' in svg.group(1)  # the Pareto front


def test_notes_fold_under_how_this_was_measured_and_the_page_is_self_contained(page: str) -> None:
    assert page.count('<details class="how"><summary>How this was measured</summary>') == 1
    assert "<link" not in page and " src=" not in page
    assert page.index("How this was measured") > page.index('<table class="board"')


def test_the_baseline_reads_baseline_and_a_smoke_run_borrows_no_paper_timing(page: str) -> None:
    """The AR baseline is 1.00× by definition, not an INVALID speed-up; a smoke model is not the paper row's size,
    so the paper-size timing is not attached to it (the first-day walk saw "17.73×† UNSTABLE" on a smoke run)."""
    from bench.report.reproduces import run_speed

    (_, whole), _ = _groups(page)
    base = next(row for row in whole if row[1].startswith("fairseq_transformer"))
    assert re.fullmatch(r"1\.00×† \(baseline\) a", base[4]), base
    assert "INVALID" not in " ".join(base)
    latency = load_latency_records(REPO / "results")
    nat = _rec("fairseq_nat", 14.7)
    assert run_speed(nat, latency) is not None
    smoke = dict(nat, spec=dict(nat["spec"], budget="smoke"))
    assert run_speed(smoke, latency) is None
