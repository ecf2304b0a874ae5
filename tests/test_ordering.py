"""The ordering line: Kendall's τ-b, its bootstrap interval, adjacent-pair tests, and the table note."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bench.store.integrity import sealed
from bench.workflows.ordering import kendall_tau_b, ordering_line, reference_line

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))


def test_kendall_tau_b() -> None:
    assert kendall_tau_b([3, 2, 1], np.array([30.0, 20.0, 10.0]))[0] == 1.0
    assert kendall_tau_b([3, 2, 1], np.array([10.0, 20.0, 30.0]))[0] == -1.0
    # one discordant pair of three: (2 - 1) / 3
    assert kendall_tau_b([3, 2, 1], np.array([30.0, 10.0, 20.0]))[0] == pytest.approx(1 / 3)
    # a tie in the reproduced values counts in neither numerator nor its side of the denominator
    assert kendall_tau_b([3, 2, 1], np.array([30.0, 10.0, 10.0]))[0] == pytest.approx(2 / np.sqrt(3 * 2))
    rows = np.array([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]])
    assert list(kendall_tau_b([3, 2, 1], rows)) == [1.0, -1.0]
    assert np.isnan(kendall_tau_b([3, 2, 1], np.array([5.0, 5.0, 5.0]))[0])


def test_ordering_line_names_each_adjacent_pair() -> None:
    data = {
        "budget": "cpu",
        "metric": "bleu4",
        "tau_b": 0.3333,
        "tau_ci95": [-0.33, 1.0],
        "rows": [{"row": r} for r in "abc"],
        "pairs": [
            {"higher": "a", "lower": "b", "reproduced_delta": 1.5, "p_bootstrap": 0.001},
            {"higher": "b", "lower": "c", "reproduced_delta": -0.2, "p_bootstrap": 0.4},
        ],
    }
    line = ordering_line(data, {"a": "A", "b": "B", "c": "C"})
    assert (
        "Kendall τ-b between the paper's and the reproduced order +0.33 (95% bootstrap interval -0.33 to +1.00)" in line
    )
    assert "A > B: holds (+1.50, p = 0.001, significant)" in line
    assert "B > C: reversed (-0.20, p = 0.400, not significant)" in line


def test_reference_line_says_above_or_below_the_harness_baseline_per_row() -> None:
    """#19: a row that does not beat copying its input has not learned the task; the note says so, paired."""
    data = {
        "budget": "cpu",
        "metric": "bleu4",
        "reference": {
            "system": "copy_source",
            "run_id": "copy_source--squad_qg--test--cpu--s42--x",
            "rows": [
                {"row": "a", "recipe": "unilm", "reference_value": 7.31, "delta": 0.37, "p_bootstrap": 0.02},
                {"row": "b", "recipe": "unilm", "reference_value": 7.31, "delta": -1.45, "p_bootstrap": 0.001},
                {"row": "c", "recipe": "unilm", "reference_value": 7.31, "delta": 0.05, "p_bootstrap": 0.6},
            ],
        },
    }
    line = reference_line(data, {"a": "A", "b": "B", "c": "C"}, "Copy the source")
    assert line is not None and line.startswith("Versus Copy the source (`copy_source`, bleu4 7.31 (unilm)")
    assert "A: above it (+0.37, p = 0.020, significant)" in line
    assert "B: below it (-1.45, p = 0.001, significant)" in line
    assert "C: above it (+0.05, p = 0.600, not significant)" in line
    assert reference_line({**data, "reference": None}, {}, "Copy the source") is None


def test_committed_mist_ordering_is_reproduced_exactly() -> None:
    """Recomputed from the committed records and outputs, the committed ordering record is the same:
    the order, the adjacent-pair tests, the rows left out, and each row against copy_source."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.store.paths import ordering_file as ordering_path
    from bench.workflows.ordering import compute

    committed = json.loads(ordering_path(REPO / "results", "mist", "3", "quora", "cpu").read_text())
    [fresh] = compute("mist", "3", "cpu", REPO / "results", say=lambda _m: None, write=False)
    for key in ("tau_b", "tau_ci95", "rows", "pairs", "column", "metric", "excluded", "reference"):
        assert fresh[key] == committed[key], key
    assert committed["reference"]["system"] == "copy_source"
    assert {r["row"] for r in committed["reference"]["rows"]} == {r["row"] for r in committed["rows"]}


def test_degenerate_and_stale_runs_are_not_evidence_for_an_ordering() -> None:
    from bench.workflows.ordering import not_evidence

    healthy = {"output_stats": {"n": 100, "distinct_ratio": 0.9, "most_frequent_share": 0.01, "most_frequent": "x",
                                "reference_distinct_ratio": 0.95}, "kind": "external"}
    assert not_evidence(healthy) is None
    same_text = {**healthy, "output_stats": {**healthy["output_stats"], "most_frequent_share": 0.3}}
    assert not_evidence(same_text) == "degenerate outputs"
    line = ordering_line(
        {"budget": "cpu", "metric": "bleu4", "tau_b": 1.0, "tau_ci95": [1.0, 1.0], "rows": [], "pairs": [],
         "excluded": [{"row": "cmlm", "label": "CMLM", "why": "degenerate outputs"}]},
        {},
    )
    assert "left out, not evidence: CMLM (degenerate outputs)" in line


def test_one_model_under_two_names_is_ranked_once() -> None:
    """CopyBERT's SpanBERT row at the cpu budget decodes the self-copy row's model (same settings): the same
    outputs, a tie by construction, so it is left out of the ordering and the row that trained it stays."""
    from types import SimpleNamespace

    from bench.workflows.ordering import duplicate_rows

    def match(system: str, owner: str, sha: str) -> SimpleNamespace:
        model = {"training_key": "abc", "workdir": f".cache/runs/{owner}--squad_qg--cpu--s42--cfgabc"}
        return SimpleNamespace(record={"run_id": system, "spec": {"system": system}, "outputs": {"sha256": sha},
                                       "model": model})

    table = SimpleNamespace(row=lambda r: SimpleNamespace(label={"span": "SpanBERT", "self": "BERT"}[r]))
    matches = {"span": match("copybert_spanbert_selfcopy", "copybert_selfcopy", "x"),
               "self": match("copybert_selfcopy", "copybert_selfcopy", "x"),
               "other": match("copybert_nocopy", "copybert_nocopy", "y")}
    why = "the same outputs as 'BERT': one model, ranked once"
    assert duplicate_rows(matches, table) == {"span": why}
    assert duplicate_rows({k: matches[k] for k in ("span", "other")}, table) == {}
    twin = match("copybert_twohop", "copybert_twohop", "x")  # the same text from another model: not one model
    assert duplicate_rows({"self": matches["self"], "twin": twin}, table) == {}
    assert duplicate_rows({"self": matches["self"], "again": matches["self"]}, table) == {}  # one run, two rows


def test_a_harness_row_meets_the_reference_but_is_not_ranked(tmp_path: Path) -> None:
    """ERNIE-GEN Table 4's noise ablation (a harness row, no reported number) is compared with copy_source
    like the paper's rows, and left out of the paper's order."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.workflows.ordering import compute

    results = tmp_path / "results"
    results.mkdir()
    ids = ("unilm--squad_qg--test--cpu--s42--cc4a2f59", "erniegen_base--squad_qg--test--cpu--s42--ff8f63eb",
           "copy_source--squad_qg--test--cpu--s42--b5a48ee8")
    (results / "outputs").mkdir()
    for rid in ids:  # a record's outputs are read beside it, at outputs/<run_id>.txt (bench.store.outputs)
        (results / f"{rid}.json").write_text((REPO / "results" / f"{rid}.json").read_text())
        (results / "outputs" / f"{rid}.txt").write_bytes((REPO / "results" / "outputs" / f"{rid}.txt").read_bytes())
    ablation = json.loads((REPO / "results" / f"{ids[1]}.json").read_text())
    ablation["run_id"] = "erniegen_base--squad_qg--test--cpu--s42--noise0"
    ablation["outputs"]["path"] = f"results/outputs/{ablation['run_id']}.txt"
    (results / "outputs" / f"{ablation['run_id']}.txt").write_bytes(
        (REPO / "results" / "outputs" / f"{ids[1]}.txt").read_bytes())
    ablation["spec"]["overrides"] = {"noise_prob": 0.0}
    ablation["system"]["config"]["noise_prob"] = 0.0
    ablation["model"] = {**ablation["model"], "training_key": "noise0", "workdir": ".cache/runs/noise0"}
    (results / f"{ablation['run_id']}.json").write_text(json.dumps(sealed(ablation)))  # as the harness writes it
    [out] = compute("erniegen", "4", "cpu", results, say=lambda _m: None, write=False, samples=200)
    assert [(r["row"], r["reported"] is None) for r in out["rows"]] == [
        ("erniegen_base", False), ("unilm", False), ("erniegen_base_noise0", True)]
    assert out["tau_b"] is None and out["pairs"] == []  # two printed rows: no order to test
    versus = {r["row"]: r for r in out["reference"]["rows"]}
    assert set(versus) == {"unilm", "erniegen_base", "erniegen_base_noise0"}
    assert versus["erniegen_base_noise0"]["delta"] == versus["erniegen_base"]["delta"]  # the same outputs


def test_a_column_over_two_test_sets_is_ordered_per_test_set() -> None:
    """ERNIE-GEN Table 4's column holds the Du split's rows and the reversed split's: two blocks, never mixed
    in one order or paired test (they score different examples), each with its own record name."""
    from bench.papers import get_table
    from bench.workflows.ordering import block_id, column_blocks

    table = get_table("erniegen", "4")
    group = table.group("squad")
    matches = {r: object() for r in ("unilm", "erniegen_base", "unilm_rev", "erniegen_base_rev")}
    blocks = column_blocks(table, group, matches, "bleu4")
    assert [(g.task, g.split, sorted(part)) for g, part in blocks] == [
        ("squad_qg", "test", ["erniegen_base", "unilm"]),
        ("squad_qg_reversed", "test", ["erniegen_base_rev", "unilm_rev"]),
    ]
    assert blocks[0][0] is group
    assert [block_id(group, g) for g, _ in blocks] == ["squad", "squad--squad_qg_reversed"]


def test_the_table_note_names_each_row_left_out_and_why() -> None:
    """When too few of a column's rows are evidence to order, the note says which rows were left out and
    why (degenerate outputs, a stale record, or another row's model), so a reader can act on it."""
    import copy

    from bench.papers import get_table
    from bench.report.views import build_table_view
    from bench.scoring.output_stats import output_stats
    from bench.store.records import load_records

    table = get_table("copybert", "1")
    records = [copy.deepcopy(r) for r in load_records(REPO / "results")]
    constant = output_stats(["what is the in ?"] * 50, [f"q{i}" for i in range(50)])
    broken = {"copybert_nocopy", "copybert_normalcopy", "copybert_twohop", "unilm"}
    for rec in records:
        if rec["spec"]["system"] in broken and rec["spec"]["task"] == "squad_qg":
            rec["output_stats"] = constant
    view = build_table_view(table, records, "cpu")
    [note] = [n for n in view.notes if "Ordering not computed" in n]
    assert "1 of the 6 reproduced rows are evidence" in note, note
    assert note.count("degenerate outputs") == 4, note
    assert "SpanBERT" in note and "one model, ranked once" in note, note


def test_an_ordering_stops_standing_for_a_run_re_run_under_its_id() -> None:
    """A re-run under the same spec keeps its run id but not its outputs: the stored ordering was computed
    over the old outputs, so the table must stop printing it (and say how to recompute it), and
    `bench table --check` must fail on it rather than let the table drop the line silently."""
    import copy

    from bench.papers import get_table
    from bench.report.views import build_table_view
    from bench.store.orderings import load_orderings
    from bench.store.records import load_records
    from bench.workflows.ordering import stale_orderings

    table = get_table("copybert", "1")
    records = [copy.deepcopy(r) for r in load_records(REPO / "results")]
    orderings = [o for o in load_orderings(REPO / "results") if (o["paper"], o["table"]) == ("copybert", "1")]
    assert stale_orderings(orderings, records) == []
    before = build_table_view(table, records, "cpu", orderings=orderings).notes
    assert any(n.startswith("Ordering (cpu, bleu4") for n in before), before
    assert any(n.startswith("Versus ") for n in before), before

    [shown] = orderings
    rerun = shown["rows"][0]["run_id"]
    for rec in records:
        if rec["run_id"] == rerun:
            rec["outputs"]["sha256"] = "0" * 64
    after = build_table_view(table, records, "cpu", orderings=orderings).notes
    assert not any(n.startswith(("Ordering (cpu", "Versus ")) for n in after), after
    assert any("Ordering not computed for the runs shown: `bench order copybert:1 --budget cpu`" in n for n in after)
    assert any("Not yet compared with `copy_source`" in n for n in after), after
    [problem] = stale_orderings(orderings, records)
    assert f"{rerun} was re-run since" in problem and "`bench order copybert:1 --budget cpu`" in problem

    legacy = copy.deepcopy(shown)
    del legacy["reference"]["outputs_sha256"]
    [problem] = stale_orderings([legacy], load_records(REPO / "results"))
    assert "has no outputs hash in it" in problem, problem
    gone = [r for r in load_records(REPO / "results") if r["run_id"] != rerun]
    assert f"{rerun} no longer exists" in stale_orderings([shown], gone)[0]


def test_an_ordering_whose_only_change_is_its_time_is_left_byte_identical(tmp_path: Path) -> None:
    """#58: `bench order mist:3` on unchanged records rewrote the committed file for its new `created` time."""
    import shutil

    from bench.store.paths import ordering_file
    from bench.workflows.ordering import unchanged_ordering

    src = ordering_file(REPO / "results", "mist", "3", "quora", "cpu")
    dest = ordering_file(tmp_path, "mist", "3", "quora", "cpu")
    dest.parent.mkdir(parents=True)
    shutil.copyfile(src, dest)
    out = {**json.loads(src.read_text()), "created": "2099-01-01T00:00:00+00:00"}
    out["tau_ci95"] = tuple(out["tau_ci95"])  # as computed (a tuple), not as read back (a list)
    assert unchanged_ordering(tmp_path, out, "quora") == dest
    assert unchanged_ordering(tmp_path, {**out, "tau_b": 0.5}, "quora") is None
