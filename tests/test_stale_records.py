"""A record made under another preset is stale (#17: run ids hash the spec, not the resolved preset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.runs import RunSpec, completed_record, record_path, stale_reason
from bench.store.integrity import sealed
from systems import build


def _record(spec: RunSpec, config: dict) -> dict:
    return {"schema": 1, "run_id": spec.run_id, "status": "complete", "spec": spec.to_json(),
            "system": {"name": spec.system, "config": config}, "data": {"split_sha256": "0" * 64},
            "outputs": {"path": f"results/outputs/{spec.run_id}.txt", "sha256": "0" * 64},
            "scores": {"unilm": {"signature": "s", "metrics": {"bleu4": 1.0}}}}


def test_a_changed_setting_makes_a_record_stale_and_names_it(tmp_path: Path) -> None:
    spec = RunSpec("unilm", "squad_qg", budget="cpu")
    now = build("unilm", "cpu", {"seed": 42}).describe().config
    same = _record(spec, {**now, "threads": 7, "train": {"precision": "bf16"}})  # runtime / fit facts differ
    assert stale_reason(same, spec) is None
    old = _record(spec, {**now, "lr": 1.5e-4, "steps": 400, "retired_field": 1})
    reason = stale_reason(old, spec)
    assert reason is not None and "lr: 0.00015 -> 0.0001" in reason and f"steps: 400 -> {now['steps']}" in reason
    assert "retired_field" not in reason  # a setting today's config does not have is not compared
    record_path(spec, tmp_path).write_text(json.dumps(sealed(old)))
    assert completed_record(spec, tmp_path) is None  # not done: bench run / reproduce / queue run it again
    record_path(spec, tmp_path).write_text(json.dumps(sealed(same)))
    assert completed_record(spec, tmp_path) is not None


def test_settings_decided_at_fit_time_and_unbuildable_systems_are_not_stale() -> None:
    spec = RunSpec("encoder_minilm_l6", "squad_qg", budget="cpu")
    now = build("encoder_minilm_l6", "cpu", {"seed": 42}).describe().config
    assert now["lr"] is None  # the per-task learning rate is resolved by fit
    assert stale_reason(_record(spec, {**now, "lr": 1e-4}), spec) is None
    gone = RunSpec("no_such_system", "quora")
    assert stale_reason(_record(gone, {"lr": 1}), gone) is None


def test_committed_records_still_name_the_workdir_they_were_trained_in() -> None:
    """A refactor of a family's config (a new field, a moved default) must not move the training key of
    what is already recorded: the key names the workdir a decode-only run reuses, so a moved key would
    retrain a committed model, and the record's key would no longer name its checkpoint."""
    from bench.runs import REPO_ROOT, build_system, training_key
    from bench.store.records import load_records

    checked = 0
    for rec in load_records(REPO_ROOT / "results"):
        key = (rec.get("model") or {}).get("training_key")
        spec = RunSpec.from_json(rec["spec"])
        if rec.get("kind", "run") != "run" or not key or stale_reason(rec, spec) is not None:
            continue  # submissions, records from before training keys, and stale ones name no live workdir
        system = build_system(spec)
        if spec.system.startswith("fairseq_") and training_key(system, spec.task) != key:
            # One deliberate move: fairseq's generator flags (derived from decode-only settings) left the
            # key, so `--set eos_penalty=1` decodes the plain run's model. Records from before it still
            # name the workdir of their time, keyed with those flags.
            assert _key_with_generator_flags(system, spec.task) == key, rec["run_id"]
        else:
            assert training_key(system, spec.task) == key, rec["run_id"]
        checked += 1
    assert checked >= 4


def test_a_per_task_sizing_change_is_seen_field_by_field() -> None:
    """The NAR budgets size runs per task inside ``size``: a changed table flags the record (naming the
    field), while a field added to the sizing since (``source_window``) does not flag older records."""
    from dataclasses import asdict

    from systems.nar.presets import CPU_SIZES

    spec = RunSpec("encoder_minilm_l6", "squad_qg", budget="cpu")
    config = dict(build("encoder_minilm_l6", "cpu", {"seed": 42}).describe().config)
    old_size = {**asdict(CPU_SIZES["squad_qg"]), "steps": 250}
    del old_size["source_window"]
    reason = stale_reason(_record(spec, {**config, "size": old_size}), spec)
    assert reason is not None and "size.steps: 250 -> 1000" in reason
    quora = RunSpec("encoder_minilm_l6", "quora", budget="cpu")
    same = {k: v for k, v in asdict(CPU_SIZES["quora"]).items() if k != "source_window"}
    assert stale_reason(_record(quora, {**config, "size": same}), quora) is None


def _key_with_generator_flags(system: Any, task: str) -> str:
    """The fairseq training key as it was before the generator flags left it: bench.runs.training_key over
    the base contract's settings (the whole describe() config), not FairseqSystem's narrower ones."""
    from unittest import mock

    from bench.api.system import System
    from bench.runs import training_key

    with mock.patch.object(type(system), "training_settings", System.training_settings):
        return training_key(system, task)
