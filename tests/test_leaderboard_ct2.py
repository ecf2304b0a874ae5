"""fairseq_transformer_ct2 on the leaderboards: each scored record is its own row, labelled with the compute type
the system ran (what "default" resolved to, from the record's system config) and its beam, so an int8 and a
float32 run never read as one; hostile config strings stay text."""

from __future__ import annotations

import copy

import pytest
from test_leaderboard_ranking import Given, _noisy, _record, _split
from test_text_escape import HOSTILE, _assert_inert, _page

from bench.report.board import build_board, decoded_with, run_settings, settings
from bench.report.leaderboard import task_page
from bench.report.term_views import board_groups

CT2 = "fairseq_transformer_ct2"


def _ct2(run_id: str, outputs: list[str], split, overrides: dict, used: str, beam: int = 4) -> dict:
    rec = _record(run_id, outputs, split)
    rec["spec"]["overrides"] = overrides
    rec["system"] = {"name": CT2, "family": "AR", "config": {"beam": beam, "ctranslate2": {
        "decodes_model_of": "fairseq_transformer", "compute_type": overrides.get("compute_type", "default"),
        "compute_type_used": used}}}
    return rec


@pytest.fixture(scope="module")
def board_inputs():
    split = _split()
    refs = [ex.target for ex in split.examples]
    outputs = {
        "fairseq_transformer--quora--test--cpu--s1--0000000a": [_noisy(t, 0.6, i) for i, t in enumerate(refs)],
        f"{CT2}--quora--test--cpu--s1--0000000b": [_noisy(t, 0.55, i) for i, t in enumerate(refs)],
        f"{CT2}--quora--test--cpu--s1--0000000c": [_noisy(t, 0.6, i + 1) for i, t in enumerate(refs)],
    }
    int8, f32 = f"{CT2}--quora--test--cpu--s1--0000000b", f"{CT2}--quora--test--cpu--s1--0000000c"
    records = [
        _record("fairseq_transformer--quora--test--cpu--s1--0000000a",
                outputs["fairseq_transformer--quora--test--cpu--s1--0000000a"], split),
        _ct2(int8, outputs[int8], split, {}, "int8"),
        _ct2(f32, outputs[f32], split, {"compute_type": "float32", "beam": 1}, "float32", beam=1),
    ]
    return split, outputs, records


def test_decode_settings_come_from_the_record_not_the_preset(board_inputs) -> None:
    _, _, (fair, int8, f32) = board_inputs
    assert decoded_with(fair) == {} and run_settings(fair) == settings(fair["spec"]) == ""
    assert run_settings(int8) == "beam=4 compute_type=int8"  # "default" as it resolved on the run's device
    assert run_settings(f32) == "beam=1 compute_type=float32"
    unknown = copy.deepcopy(int8)
    del unknown["system"]["config"]["ctranslate2"]["compute_type_used"]
    unknown["system"]["config"]["ctranslate2"]["compute_type"] = None
    assert run_settings(unknown) == "beam=4 compute_type=not recorded"


def test_int8_and_float32_runs_are_separate_labelled_rows(board_inputs, tmp_path) -> None:
    split, outputs, records = board_inputs
    board = build_board("quora", records, test=Given(split, outputs, tmp_path / "p.json"))
    (group,) = board_groups(board)
    names = {row[-1]: row[1] for row in group.rows}
    assert names == {records[0]["run_id"]: "fairseq_transformer",
                     records[1]["run_id"]: f"{CT2} beam=4 compute_type=int8",
                     records[2]["run_id"]: f"{CT2} beam=1 compute_type=float32"}
    html = task_page("quora", records, test=Given(split, outputs, tmp_path / "p.json"))
    assert "beam=4 compute_type=int8" in html and "beam=1 compute_type=float32" in html
    assert html.count(f'data-run="{CT2}--') == 2


def test_the_same_outputs_at_two_compute_types_stay_two_rows(board_inputs, tmp_path) -> None:
    split, outputs, records = board_inputs
    same = dict(outputs)
    same[records[2]["run_id"]] = list(outputs[records[1]["run_id"]])
    twin = _ct2(records[2]["run_id"], same[records[2]["run_id"]], split, {"compute_type": "float32", "beam": 1},
                "float32", beam=1)
    board = build_board("quora", [records[0], records[1], twin], test=Given(split, same, tmp_path / "p.json"))
    (group,) = board_groups(board)
    assert len(group.rows) == 3  # ranked once (same outputs), listed twice: each with its own label
    assert {row[1] for row in group.rows} >= {f"{CT2} beam=4 compute_type=int8", f"{CT2} beam=1 compute_type=float32"}


def test_a_hostile_compute_type_stays_text(board_inputs, tmp_path) -> None:
    split, outputs, records = board_inputs
    evil = copy.deepcopy(records)
    evil[1]["system"]["config"]["ctranslate2"]["compute_type_used"] = HOSTILE
    page = _page(task_page("quora", evil, test=Given(split, outputs, tmp_path / "p.json")))
    _assert_inert(page, allowed_scripts=1)  # the page's own
    assert "<script>alert(1)</script>" in "".join(page.text)
