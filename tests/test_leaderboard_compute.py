"""A run decoded at int8 on the leaderboard (#60): its headline change against its float32 twin (the run that
decoded the same trained model with every other setting equal) is shown beside it, and a loss beyond the
tolerance is marked, never hidden."""

from __future__ import annotations

import copy

import pytest
from test_leaderboard_ranking import Given, _noisy, _record, _split

from bench.report.board import build_board
from bench.report.compute_twins import TOLERANCE, compute_type, fp32_twin, quality_changes
from bench.report.leaderboard import task_page

MODEL = {"training_run_id": "encoder_bert--quora--test--cpu--s1--00000001", "training_key": "abc123",
         "workdir": ".cache/runs/encoder_bert--quora--cpu--s1--cfgabc123"}
FP32 = "encoder_bert--quora--test--cpu--s1--00000001"
TWIN = "encoder_bert_int8--quora--test--cpu--s1--00000002"
SET = "encoder_bert--quora--test--cpu--s1--00000003"


def _run(run_id: str, outputs: list[str], split, compute: str | None, overrides: dict | None = None,
         model: dict | None = None) -> dict:
    rec = _record(run_id, outputs, split)
    rec["spec"]["overrides"] = dict(overrides or {})
    rec["model"] = dict(model or MODEL)
    rec["system"] = {"name": rec["spec"]["system"], "family": "NAR",
                     "config": {} if compute is None else {"compute_type": compute}}
    return rec


@pytest.fixture(scope="module")
def board_inputs():
    split = _split()
    refs = [ex.target for ex in split.examples]
    fp32 = [_noisy(t, 0.6, i) for i, t in enumerate(refs)]
    outputs = {FP32: fp32, TWIN: [_noisy(t, 0.4, i) for i, t in enumerate(refs)], SET: list(fp32)}
    records = [_run(FP32, outputs[FP32], split, None),  # recorded before the setting existed: float32
               _run(TWIN, outputs[TWIN], split, "int8"),
               _run(SET, outputs[SET], split, "int8", {"compute_type": "int8"})]
    return split, outputs, records


def test_the_twin_is_the_same_model_at_float32_with_every_other_setting_equal(board_inputs) -> None:
    _, _, (fp32, twin, by_set) = board_inputs
    assert [compute_type(r) for r in (fp32, twin, by_set)] == ["float32", "int8", "int8"]
    assert fp32_twin(twin, [fp32, twin, by_set]) is fp32 and fp32_twin(by_set, [fp32, by_set]) is fp32
    assert fp32_twin(fp32, [fp32, twin]) is None  # float32 has no twin of its own
    for change in (("model", {**MODEL, "training_key": "other"}), ("seed", 2), ("budget", "smoke")):
        other = copy.deepcopy(fp32)
        (other if change[0] == "model" else other["spec"])[change[0]] = change[1]
        assert fp32_twin(twin, [other]) is None, change
    beam = copy.deepcopy(fp32)
    beam["spec"]["overrides"] = {"beam": 1}
    assert fp32_twin(twin, [beam]) is None  # another decoding setting: not the int8 run's twin
    elsewhere = copy.deepcopy(fp32)  # the same model folder under another cache root ($BENCH_CACHE): the same model
    elsewhere["model"]["workdir"] = "/srv/cache/runs/encoder_bert--quora--cpu--s1--cfgabc123"
    assert fp32_twin(twin, [elsewhere]) is elsewhere
    retrained = copy.deepcopy(fp32)  # CTranslate2 names the checkpoint it converted: another one is another model
    for r, sha in ((retrained, "a" * 64), (twin_ct2 := copy.deepcopy(twin), "b" * 64)):
        config = (r.get("system") or {}).get("config", {})
        r["system"] = {"config": {**config, "ctranslate2": {"converted": {"sha256": sha}}}}
    assert fp32_twin(twin_ct2, [retrained]) is None
    other_folder = copy.deepcopy(fp32)
    other_folder["model"]["workdir"] = ".cache/runs/encoder_bert--quora--cpu--s2--cfgabc123"
    assert fp32_twin(twin, [other_folder]) is None


def test_the_board_shows_the_change_and_marks_a_loss_beyond_the_tolerance(board_inputs, tmp_path) -> None:
    split, outputs, records = board_inputs
    board = build_board("quora", records, test=Given(split, outputs, tmp_path / "p.json"))
    assert set(board.quality_changes) == {TWIN, SET}
    lost, same = board.quality_changes[TWIN], board.quality_changes[SET]
    head = board.head
    assert head is not None and lost.twin_run_id == FP32 == same.twin_run_id
    assert lost.delta == pytest.approx(head.value(records[1]) - head.value(records[0]))
    assert lost.delta < -TOLERANCE and lost.beyond_tolerance and not lost.same_outputs
    assert same.delta == 0 and same.same_outputs and not same.beyond_tolerance
    html = task_page("quora", records, test=Given(split, outputs, tmp_path / "p.json"))
    assert f"int8: BLEU-4 −{abs(lost.delta):.2f} vs its float32 run, a loss beyond {TOLERANCE}" in html
    assert 'class="set loss"' in html
    assert "int8: BLEU-4 +0.00 vs its float32 run (identical outputs)" in html
    alone = quality_changes([records[1]], head.value)[TWIN]
    assert alone.twin_run_id is None and alone.delta is None
    assert "int8: no float32 run of the same model recorded" in task_page(
        "quora", [records[1]], test=Given(split, outputs, tmp_path / "q.json"))


def test_a_hostile_compute_type_stays_text(board_inputs, tmp_path) -> None:
    split, outputs, records = board_inputs
    bad = copy.deepcopy(records[1])
    bad["system"]["config"]["compute_type"] = "<script>alert(1)</script>`x`"
    html = task_page("quora", [records[0], bad], test=Given(split, outputs, tmp_path / "p.json"))
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
