"""`bench refile`: a record moves to another spec only when that spec resolves to exactly its settings and model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.runs import (
    RunSpec,
    build_system,
    display_path,
    model_spec,
    outputs_path,
    record_path,
    sha256_text,
    stale_reason,
)
from bench.store.integrity import sealed
from bench.workflows.refile import RefileError, refile

OUTPUTS = "what is the first question ?\nwho wrote the second ?\n"


def _write_record(spec: RunSpec, results: Path, config_changes: dict | None = None) -> Path:
    """A record of ``spec`` as `bench run` writes one, made with today's settings plus ``config_changes``
    (a preset that has moved since), its model keyed as training those settings did."""
    system = build_system(spec)
    config = {**system.describe().config, **(config_changes or {})}
    trained, key = model_spec(spec, system)
    if config_changes:  # the key of the settings it was made with: the preset's own at the time
        from systems import build

        trained, key = model_spec(spec, build(spec.system, spec.budget, {**spec.overrides, **config_changes,
                                                                         "seed": spec.seed}))
    out = outputs_path(spec, results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(OUTPUTS, encoding="utf-8")
    rec = {"schema": 1, "run_id": spec.run_id, "status": "complete", "kind": "run", "spec": spec.to_json(),
           "harness": {"git_sha": "abc", "dirty": False}, "system": {"name": spec.system, "config": config},
           "data": {"split_sha256": "0" * 64, "n_examples": 2},  # the spec's --limit 2
           "outputs": {"path": display_path(out), "sha256": sha256_text(OUTPUTS), "n": 2},
           "model": {"training_key": key, "training_run_id": trained.run_id, "workdir": "w"},
           "scores": {"unilm": {"signature": "s", "metrics": {"bleu4": 9.5}}}, "timings": {"fit_s": 12.0}}
    path = record_path(spec, results)
    path.write_text(json.dumps(sealed(rec)))  # as the harness writes it
    return path


def test_an_old_preset_record_is_pinned_to_the_settings_it_was_made_with(tmp_path: Path) -> None:
    preset = RunSpec("unilm", "squad_qg", budget="cpu", limit=2)
    steps_now = build_system(preset).describe().config["steps"]
    old = _write_record(preset, tmp_path, {"steps": 400})  # made when the preset trained 400 updates
    assert stale_reason(json.loads(old.read_text()), preset) is not None

    from bench.workflows.refile import pin_hint

    assert pin_hint(json.loads(old.read_text())) == f"bench refile {preset.run_id} --set steps=400"
    with pytest.raises(RefileError, match="made with steps=400, not 500"):
        refile(old.stem, {"steps": 500}, [], tmp_path)  # a pin can only restate what the record was made with
    with pytest.raises(RefileError, match="no setting 'stepz'"):
        refile(old.stem, {"stepz": 400}, [], tmp_path)
    assert old.exists()  # a refused re-file writes nothing and moves nothing

    new = refile(old.stem, {"steps": 400}, [], tmp_path)
    pinned = RunSpec("unilm", "squad_qg", budget="cpu", limit=2, overrides={"steps": 400})
    assert new == record_path(pinned, tmp_path) and not old.exists()
    rec = json.loads(new.read_text())
    assert rec["run_id"] == pinned.run_id and rec["spec"] == pinned.to_json()
    assert stale_reason(rec, pinned) is None and pin_hint(rec) is None
    assert [(r["from"], r["set"], r["unset"]) for r in rec["refiled"]] == [(preset.run_id, {"steps": 400}, [])]
    assert rec["scores"] == {"unilm": {"signature": "s", "metrics": {"bleu4": 9.5}}}
    assert rec["harness"]["git_sha"] == "abc" and rec["timings"] == {"fit_s": 12.0}  # the original run's
    assert rec["model"]["training_run_id"] == model_spec(pinned, build_system(pinned))[0].run_id
    assert Path(rec["outputs"]["path"]).read_text(encoding="utf-8") == OUTPUTS
    assert not outputs_path(preset, tmp_path).exists()
    assert steps_now != 400


def test_a_calibration_point_s_run_becomes_the_preset_s_once_the_preset_adopts_its_value(tmp_path: Path) -> None:
    steps_now = build_system(RunSpec("unilm", "squad_qg", budget="cpu")).describe().config["steps"]
    point = RunSpec("unilm", "squad_qg", budget="cpu", limit=2, overrides={"steps": steps_now})
    path = _write_record(point, tmp_path)
    moved = refile(path.stem, {}, ["steps"], tmp_path)
    assert json.loads(moved.read_text())["spec"]["overrides"] == {}
    back = json.loads(refile(moved.stem, {"steps": steps_now}, [], tmp_path).read_text())  # and back: both moves kept
    assert [r["from"] for r in back["refiled"]] == [point.run_id, replace(point, overrides={}).run_id]
    assert back["run_id"] == point.run_id

    other = RunSpec("unilm", "squad_qg", budget="cpu", limit=2, overrides={"steps": steps_now + 1})
    path = _write_record(other, tmp_path)
    with pytest.raises(RefileError, match=f"steps: {steps_now + 1} -> {steps_now}"):
        refile(path.stem, {}, ["steps"], tmp_path)  # the preset does not resolve to what it was made with
    with pytest.raises(RefileError, match="does not override lr"):
        refile(path.stem, {}, ["lr"], tmp_path)


def test_refile_refuses_a_spec_that_would_train_another_model_or_overwrite_a_record(tmp_path: Path) -> None:
    preset = RunSpec("unilm", "squad_qg", budget="cpu", limit=2)
    path = _write_record(preset, tmp_path, {"steps": 400})
    rec = json.loads(path.read_text())
    path.write_text(json.dumps(sealed({**rec, "model": {**rec["model"], "training_key": "0123456789ab"}})))
    with pytest.raises(RefileError, match="would train another model"):
        refile(path.stem, {"steps": 400}, [], tmp_path)

    path.write_text(json.dumps(sealed(rec)))
    pinned = RunSpec("unilm", "squad_qg", budget="cpu", limit=2, overrides={"steps": 400})
    record_path(pinned, tmp_path).write_text("{}")
    with pytest.raises(RefileError, match="exists already"):
        refile(path.stem, {"steps": 400}, [], tmp_path)
    record_path(pinned, tmp_path).unlink()

    Path(rec["outputs"]["path"]).write_text("edited\n", encoding="utf-8")
    with pytest.raises(RefileError, match="sha256 differs"):
        refile(path.stem, {"steps": 400}, [], tmp_path)
    assert path.exists() and not record_path(pinned, tmp_path).exists()


def test_a_table_footnote_says_where_a_refiled_record_was_made() -> None:
    from bench.report.views import _refiled_note

    moves = [{"from": "a--s--test--cpu--s42--old", "set": {"steps": 2400}, "unset": []},
             {"from": "a--s--test--cpu--s42--mid", "set": {}, "unset": ["steps"]}]
    assert _refiled_note(moves) == ("made as `a--s--test--cpu--s42--old`, re-filed by `bench refile` "
                                    "(set steps=2400; unset steps) after its preset moved")
