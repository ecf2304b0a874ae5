"""The harness side of placement (#39): records say the device, launchers pass it on, the meter refuses a
speed-up between devices, fairseq's child sees exactly the run's GPU, and --no-score leaves scoring for later."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from fake_systems import DecodeOnly

from bench.api.types import Example


def test_launched_runs_carry_the_device() -> None:
    from bench.launch.command import bench_argv
    from bench.runs import RunSpec

    spec = RunSpec("unilm", "squad_qg", budget="smoke")
    argv = bench_argv(spec, results_dir=Path("r"), device="cuda")
    assert argv[argv.index("--device") + 1] == "cuda"
    assert "--device" not in bench_argv(spec, results_dir=Path("r"))  # auto: each job resolves it where it runs
    assert "--device" not in bench_argv(spec, results_dir=Path("r"), device="auto")


class _NoModel(DecodeOnly):
    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        return example.source


class _Placed(DecodeOnly):
    """A model-holding system left on the CPU."""

    def __init__(self) -> None:
        self.model = torch.nn.Linear(2, 2)

    def models(self) -> list[Any]:
        return [self.model]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        return example.source


def test_the_meter_refuses_a_speedup_between_devices() -> None:
    from bench.latency.meter import misplaced

    assert misplaced({"nar": _Placed(), "copy": _NoModel()}, "cuda") == [
        "nar is placed on cpu, but the meter times cuda: its speed-up compares devices, not systems (the harness "
        "places every system with --device)"
    ]
    assert misplaced({"nar": _Placed()}, "cpu") == []


def test_fairseq_trains_on_exactly_the_runs_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from systems.fairseq_nat.flags import runtime_args
    from systems.fairseq_nat.presets import preset
    from systems.fairseq_nat.system import gpu_env

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_env("cpu") == {}
    assert gpu_env("cuda:1") == {"CUDA_VISIBLE_DEVICES": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")  # the process sees two GPUs: cuda:1 is physical 6
    assert gpu_env("cuda:1") == {"CUDA_VISIBLE_DEVICES": "6"}
    cfg = preset("fairseq_cmlm", "smoke")
    assert "--cpu" in runtime_args(cfg, "ckpt", cpu=True)
    gpu = runtime_args(cfg, "ckpt", cpu=False)
    assert "--cpu" not in gpu and gpu[gpu.index("--distributed-world-size") + 1] == "1"


def test_the_trainer_trains_where_it_is_told(tmp_path: Path) -> None:
    from systems.training.trainer import TrainConfig, Trainer

    model = torch.nn.Linear(3, 1)
    cfg = TrainConfig(steps=2, batch_size=2, lr=0.1, progress=False, device="cpu")
    data = [torch.randn(3) for _ in range(8)]
    Trainer(cfg, tmp_path).fit(model, data, lambda items, rng: torch.stack(items), lambda m, b: m(b).pow(2).mean())
    assert next(model.parameters()).device.type == "cpu"


def test_no_score_writes_an_unscored_record_that_a_later_run_scores(tmp_path: Path) -> None:
    from bench.runs import RunSpec, record_path
    from bench.runs.pipeline import execute
    from bench.store.records import load_records

    spec = RunSpec("copy_source", "quora", budget="smoke", limit=20)
    said: list[str] = []
    rec = execute(spec, results_dir=tmp_path, device="cpu", score_outputs=False, say=said.append)
    assert rec["status"] == "unscored" and rec["scores"] == {}
    assert rec["environment"]["device"] == "cpu"
    assert any("--no-score" in line for line in said)
    assert load_records(tmp_path) == []  # tables skip it
    assert (tmp_path / "outputs" / f"{spec.run_id}.txt").is_file()
    again = execute(spec, results_dir=tmp_path, device="cpu", say=said.append)
    assert again["status"] == "complete" and set(again["scores"]) == {"mist-quora"}
    stored = json.loads(record_path(spec, tmp_path).read_text())
    assert stored["outputs"]["sha256"] == rec["outputs"]["sha256"]  # scored from the stored outputs
    assert [r["run_id"] for r in load_records(tmp_path)] == [spec.run_id]
