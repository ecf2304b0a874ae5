"""`bench calibrate`: grid points are ordinary records, the summary picks a healthy point, tables draw it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.store.calibration import best_point
from bench.store.integrity import sealed

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def _point(lr: float, updates: int, score: float, degenerate: bool) -> dict:
    return {"lr": lr, "updates": updates, "run_id": f"r-{lr}-{updates}", "score": score, "degenerate": degenerate}


def test_pick_is_the_best_healthy_point() -> None:
    from bench.workflows.calibrate import _pick

    points = [
        _point(1e-4, 300, 4.0, False),
        _point(1e-3, 300, 9.0, True),
        _point(5e-4, 600, 6.5, False),
        _point(5e-4, 300, 6.5, False),
    ]
    assert _pick(points) == {"lr": 5e-4, "updates": 300, "run_id": "r-0.0005-300", "score": 6.5}  # tie: fewer updates
    assert _pick([_point(1e-3, 300, 9.0, True)]) is None


def test_a_dev_point_and_the_test_run_share_one_trained_model() -> None:
    from bench.runs import RunSpec, training_workdir
    from systems import build

    dev = RunSpec("encoder_minilm_l6", "quora", split="dev", budget="cpu", overrides={"lr": 5e-4}, limit=500)
    test = RunSpec("encoder_minilm_l6", "quora", split="test", budget="cpu", overrides={"lr": 5e-4})
    assert dev.run_id != test.run_id
    system = build("encoder_minilm_l6", "cpu", {"lr": 5e-4})
    assert training_workdir(dev, system) == training_workdir(test, system)


def test_a_preset_that_adopts_a_calibrated_value_reuses_that_points_model() -> None:
    """The workdir is keyed by the resolved config: `--set lr=X` on a preset whose lr is X is the
    same training; a preset changed after a model was trained under the same spec is not."""
    from bench.runs import RunSpec, training_key, training_workdir
    from systems import build

    preset = build("unilm", "cpu", {})
    lr = preset.describe().config["lr"]
    same = build("unilm", "cpu", {"lr": lr, "threads": 2, "beam_size": 3})  # runtime / decode-only fields
    other = build("unilm", "cpu", {"lr": lr * 2})
    spec = RunSpec("unilm", "squad_qg", budget="cpu")
    assert training_key(same, "squad_qg") == training_key(preset, "squad_qg")
    assert training_workdir(spec, same) == training_workdir(spec, preset)
    assert training_workdir(spec, other) != training_workdir(spec, preset)  # same spec, another preset


def test_a_per_task_sizing_is_resolved_before_the_key() -> None:
    """The NAR budgets size runs per task (lr, updates left unset in the config until fit): a calibration
    point that sets the table's values explicitly trains the same model as the preset run, and the key
    tells tasks with different sizings apart."""
    from bench.runs import training_key
    from systems import build
    from systems.nar.presets import CPU_SIZES

    squad = CPU_SIZES["squad_qg"]
    preset = build("encoder_minilm_l6", "cpu", {})
    point = build("encoder_minilm_l6", "cpu", {"lr": squad.lr, "steps": squad.steps})
    assert training_key(point, "squad_qg") == training_key(preset, "squad_qg")
    assert training_key(point, "quora") != training_key(preset, "quora")  # Quora's table has other values
    assert training_key(build("encoder_minilm_l6", "cpu", {"lr": 1e-3}), "squad_qg") != training_key(
        preset, "squad_qg"
    )


def test_smoke_sweep_records_points_and_draws_the_curve(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    import torch

    from bench.report import render_all
    from bench.store.calibration import load_summaries
    from bench.workflows.calibrate import calibrate

    torch.set_num_threads(1)
    quiet = lambda _m: None  # noqa: E731
    kw = dict(budget="smoke", dev=16, results_dir=tmp_path / "results", say=quiet)
    summary = calibrate("encoder_minilm_l6", "quora", [1e-3], [4, 8], **kw)
    assert [(p["lr"], p["updates"]) for p in summary["points"]] == [(1e-3, 4), (1e-3, 8)]
    assert summary["split"] == "dev" and summary["recipe"] == "mist-quora" and summary["kind"] == "calibration"
    for p in summary["points"]:
        rec = json.loads((tmp_path / "results" / "calibration" / f"{p['run_id']}.json").read_text())
        assert rec["spec"]["overrides"] == {"lr": 1e-3, "steps": p["updates"]} and rec["spec"]["limit"] == 16
        assert rec["training_curve"]["train_loss"][-1][0] == p["updates"]
        assert p["degenerate"] == bool(
            p["distinct_ratio"] < 0.5 * rec["output_stats"]["reference_distinct_ratio"]
            or p["most_frequent_share"] > 0.02
        )
    # a second sweep over a larger grid keeps the first points (they are complete, so not re-run)
    grown = calibrate("encoder_minilm_l6", "quora", [1e-3, 2e-3], [4], **kw)
    assert [(p["lr"], p["updates"]) for p in grown["points"]] == [(1e-3, 4), (1e-3, 8), (2e-3, 4)]
    assert [s["system"] for s in load_summaries(tmp_path / "results")] == ["encoder_minilm_l6"]
    # a decoding sweep of a trained point joins the summary as its own line (its model is reused, not retrained)
    decoded = calibrate("encoder_minilm_l6", "quora", [1e-3], [8], overrides={"iterations": 2}, **kw)
    assert len(decoded["points"]) == 4 and decoded["overrides"] == {}
    assert {json.dumps(p["overrides"]) for p in decoded["points"]} == {"{}", '{"iterations": 2}'}
    render_all(tmp_path / "results", tmp_path / "reports")
    sidecar = json.loads((tmp_path / "reports" / "calibration-encoder_minilm_l6--quora--smoke.json").read_text())
    assert [s["name"] for s in sidecar["series"]] == ["lr 0.001", "lr 0.001 · iterations=2", "lr 0.002"]
    assert (tmp_path / "reports" / "calibration-encoder_minilm_l6--quora--smoke.png").stat().st_size > 1000
    assert render_all(tmp_path / "results", tmp_path / "reports", check=True) == []


def test_sweeps_with_other_settings_share_the_summary(tmp_path: Path) -> None:
    """An old summary (points without their overrides) merges with a decoding sweep: both kept, labelled."""
    from bench.workflows.calibrate import _merge, point_setting

    base = {"split": "dev", "dev_examples": 500, "seed": 42, "recipe": "nqg", "metric": "bleu4"}
    old = {**base, "schema": 1, "kind": "calibration", "system": "s", "task": "t", "budget": "cpu",
           "overrides": {"window": 64}, "points": [_point(1e-4, 2400, 11.0, False)]}
    path = tmp_path / "s--t--cpu.json"  # a summary is read only under its own name
    path.write_text(json.dumps(sealed({**old, "pick": best_point(old["points"])})))  # as `bench calibrate` wrote it
    blocked = {**_point(1e-4, 2400, 12.0, False), "run_id": "r-blocked", "overrides": {"window": 64, "ngram": 3}}
    merged = _merge(path, {**base, "overrides": {"window": 64, "ngram": 3}, "points": [blocked]})
    assert merged["overrides"] == {"window": 64}
    assert [point_setting(p, merged) for p in merged["points"]] == ["", "ngram=3"]
    assert merged["pick"]["run_id"] == "r-blocked"
    from bench.report.plots import calibration_data

    drawn = calibration_data({**merged, "system": "s", "task": "t", "budget": "cpu"})
    assert [s["name"] for s in drawn["series"]] == ["lr 0.0001", "lr 0.0001 · ngram=3"]
    assert (drawn["pick"]["x"], drawn["pick"]["y"]) == (2400, 12.0)  # the star sits on the picked line
    other_dev = _merge(path, {**base, "dev_examples": 100, "overrides": {}, "points": [blocked]})
    assert other_dev["points"] == [blocked]  # other dev items: a new summary


def test_the_reversed_split_decodes_the_squad_model_unless_dev_picks_the_weights() -> None:
    """squad_qg_reversed trains on squad_qg's training split: ERNIE-GEN and UniLM (dev draws only the curve)
    share the squad_qg model; CopyBERT keeps the best dev-loss checkpoint, and the reversed dev is squad_qg's
    test, so it trains its own."""
    from bench.data import TASKS
    from bench.runs import RunSpec, training_spec, training_workdir
    from systems import build

    assert TASKS.get("squad_qg_reversed").train_from == "squad_qg" and TASKS.get("squad_qg").train_from is None
    for name, shared in (("erniegen_base", True), ("unilm", True), ("copybert_selfcopy", False)):
        system = build(name, "cpu")
        rev = RunSpec(name, "squad_qg_reversed", split="test", budget="cpu", limit=2000)
        du = RunSpec(name, "squad_qg", split="test", budget="cpu", limit=2000)
        assert (training_workdir(rev, system) == training_workdir(du, system)) is shared, name
        assert (training_spec(rev, system).run_id == training_spec(du, system).run_id) is shared, name


def test_the_plot_data_carries_each_trained_models_dev_loss_once(tmp_path: Path) -> None:
    """A missed floor needs its plateau shown: each point's dev-loss curve comes from its record, and the
    points of a decoding sweep (one model, one curve) draw that curve once, named by what they share."""
    from bench.report.plots import calibration_data
    from bench.store.calibration import load_summaries
    from bench.store.paths import CALIBRATION_DIR

    root = tmp_path / CALIBRATION_DIR
    root.mkdir()
    curves = {"short": [[100, 6.0], [200, 5.5]], "long": [[100, 6.0], [200, 5.5], [300, 5.49]]}
    points = [
        {**_point(5e-4, 200, 0.0, True), "run_id": "a", "overrides": {}},
        {**_point(5e-4, 300, 3.0, True), "run_id": "b", "overrides": {"eos": 0}},
        {**_point(5e-4, 300, 3.5, False), "run_id": "c", "overrides": {"eos": 2}},
        {**_point(5e-4, 400, 4.0, False), "run_id": "no-record", "overrides": {}},
    ]
    for (run_id, curve), point in zip((("a", curves["short"]), ("b", curves["long"]), ("c", curves["long"])), points,
                                      strict=False):
        scores = {"nqg": {"signature": "s", "metrics": {"bleu4": point["score"]}}}  # the summary copies its scores
        record = {"schema": 1, "run_id": run_id, "status": "complete", "scores": scores,
                  "spec": {"system": "s", "task": "t", "split": "dev", "budget": "cpu"},
                  "data": {"split_sha256": "0" * 64}, "outputs": {"path": f"outputs/{run_id}.txt", "sha256": "0" * 64},
                  "training_curve": {"dev_loss": curve}}
        (root / f"{run_id}.json").write_text(json.dumps(sealed(record)))
    summary = {"schema": 1, "kind": "calibration", "system": "s", "task": "t", "budget": "cpu", "split": "dev",
               "dev_examples": 500, "recipe": "nqg", "metric": "bleu4", "overrides": {}, "points": points}
    (root / "s--t--cpu.json").write_text(json.dumps(sealed({**summary, "pick": best_point(points)})))
    (loaded,) = load_summaries(tmp_path)
    expected = [curves["short"], curves["long"], curves["long"], None]
    assert [p.get("dev_loss_curve") for p in loaded["points"]] == expected
    assert "dev_loss_curve" not in json.loads((root / "s--t--cpu.json").read_text())["points"][0]  # not stored
    drawn = calibration_data(loaded)["loss_series"]
    assert [s["name"] for s in drawn] == ["lr 0.0005 · 200 updates", "lr 0.0005 · 300 updates"]
    assert [p["y"] for p in drawn[1]["points"]] == [6.0, 5.5, 5.49]


def test_a_cell_whose_sweep_found_no_healthy_point_points_to_the_plateau() -> None:
    """No run is recorded where the cpu calibration found only degenerate points: the Status column says
    so with the sweep's figures and the plot; a sweep with a pick (or none at all) leaves 'not run' alone."""
    from bench.papers import get_table
    from bench.report.views import build_table_view

    table = get_table("mist", "1")
    points = [
        {**_point(5e-4, 1000, 0.0, True), "distinct_ratio": 0.086, "final_dev_loss": 5.49},
        {**_point(5e-4, 2400, 3.0, True), "distinct_ratio": 0.17, "final_dev_loss": 5.5},
    ]
    summary = {"kind": "calibration", "system": "encoder_minilm_l6", "task": "squad_qg", "budget": "cpu",
               "metric": "bleu4", "recipe": "nqg", "points": points, "pick": None}

    def status(cals: list[dict], budget: str | None = None) -> str:
        view = build_table_view(table, [], budget, calibrations=cals)
        (row,) = [r for r in view.rows if "encoder_minilm_l6" in r[2] and "Encoder MiniLM" in r[1]]
        return row[-1]

    text = status([summary])
    assert text.startswith("not run (paper: ")
    assert "cpu: no healthy calibration point: 2 point(s) over lr 0.0005 × 1,000/2,400 updates" in text
    assert "3.00 at lr 0.0005 and 2,400 updates, is DEGENERATE, 17.0 % distinct" in text
    assert "at lr 0.0005 the final dev loss went 5.49 (1,000) → 5.50 (2,400)" in text
    assert "`reports/calibration-encoder_minilm_l6--squad_qg--cpu.png`" in text
    assert status([summary], "cpu").startswith("not run (cpu: no healthy calibration point")
    healthy = {**summary, "pick": {"lr": 5e-4, "updates": 2400, "run_id": "r", "score": 3.0}}
    assert "calibration" not in status([healthy]) and "calibration" not in status([])
    other_task = {**summary, "task": "quora"}
    assert "calibration" not in status([other_task])
