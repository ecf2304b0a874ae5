"""Two registered names, one trained model: a variant that resolves to a sibling's training settings
decodes the sibling's model instead of training an identical one (bench.runs.model_owner)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.runs import RunSpec, build_system, model_spec, training_workdir

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def _workdir(system: str, budget: str, **overrides: object) -> Path:
    spec = RunSpec(system, "squad_qg", budget=budget, overrides=dict(overrides))
    return training_workdir(spec, build_system(spec))


def test_spanbert_row_at_cpu_is_the_selfcopy_model() -> None:
    """No SpanBERT weights offline: at the cpu budget minilm-l6 stands in for both backbones, so the rows
    train the same settings and share the self-copy row's workdir; at the paper budget they differ."""
    assert _workdir("copybert_spanbert_selfcopy", "cpu") == _workdir("copybert_selfcopy", "cpu")
    assert _workdir("copybert_spanbert_selfcopy", "cpu").name.startswith("copybert_selfcopy--")
    assert _workdir("copybert_spanbert_selfcopy", "cpu", lr=3e-4) == _workdir("copybert_selfcopy", "cpu", lr=3e-4)
    assert _workdir("copybert_spanbert_selfcopy", "paper").name.startswith("copybert_spanbert_selfcopy--")
    assert _workdir("copybert_twohop", "cpu").name.startswith("copybert_twohop--")  # other settings: its own
    spec = RunSpec("copybert_spanbert_selfcopy", "squad_qg", budget="cpu", limit=10)
    trainer, _ = model_spec(spec, build_system(spec))
    assert trainer.run_id == RunSpec("copybert_selfcopy", "squad_qg", budget="cpu").run_id


def test_only_an_earlier_sibling_owns_a_model() -> None:
    """The owner is the first listed sibling with the same settings, so the self-copy row never trains
    into the SpanBERT row's workdir (whichever of the two runs first)."""
    assert _workdir("copybert_selfcopy", "cpu").name.startswith("copybert_selfcopy--")
    spec = RunSpec("copy_source", "squad_qg", budget="cpu")  # no siblings: always its own
    assert training_workdir(spec, build_system(spec)).name.startswith("copy_source--")


def test_a_plan_orders_the_sharing_row_after_the_trainer() -> None:
    from bench.launch.plan import training_edges

    own = RunSpec("copybert_selfcopy", "squad_qg", budget="cpu")
    span = RunSpec("copybert_spanbert_selfcopy", "squad_qg", budget="cpu")
    assert training_edges([span, own]) == training_edges([own, span]) == {span.run_id: (own.run_id,)}


def test_the_sharing_run_decodes_the_trained_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end at the smoke budget: the SpanBERT row trains nothing, writes the self-copy row's outputs
    and names its workdir and training run; the workdir keeps its trainer's name."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    import torch

    from bench.runs.pipeline import execute

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    torch.set_num_threads(1)
    tiny = {"steps": 4, "batch_size": 4, "train_examples": 16, "dev_examples": 4}
    quiet = lambda _m: None  # noqa: E731
    said: list[str] = []
    own = execute(RunSpec("copybert_selfcopy", "squad_qg", budget="smoke", overrides=tiny, limit=4),
                  results_dir=tmp_path / "results", say=quiet)
    workdir = Path(own["model"]["workdir"])
    logged = (workdir / "train_log.jsonl").read_text()
    span = execute(RunSpec("copybert_spanbert_selfcopy", "squad_qg", budget="smoke", overrides=tiny, limit=4),
                   results_dir=tmp_path / "results", say=said.append)
    assert span["model"] == own["model"]
    assert span["outputs"]["sha256"] == own["outputs"]["sha256"]
    assert (workdir / "train_log.jsonl").read_text() == logged  # nothing trained again
    assert any("copybert_selfcopy's model" in line for line in said)
    assert json.loads((workdir / "copybert_model.json").read_text())["config"]["variant"] == "copybert_selfcopy"
    assert span["system"]["name"] == "copybert_spanbert_selfcopy"
