"""#40 finding 12: a rerun after a kill resumes from its checkpoint and says so (step and path), one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from toy_training import toy_collate, toy_data, toy_loss

from systems.training import Trainer
from systems.training.trainer import TrainConfig


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _fit(work: Path, steps: int) -> int:
    cfg = TrainConfig(steps=steps, batch_size=8, lr=1e-2, warmup=0, save_every=4, progress=False)
    return Trainer(cfg, work).fit(_model(), toy_data(), toy_collate, toy_loss).resumed_from


def test_a_resumed_fit_names_its_checkpoint_step_and_path(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    assert _fit(work, 4) == 0  # "killed" after its step-4 checkpoint
    assert "[fit]" not in capfd.readouterr().err  # a fresh start has nothing to say
    assert _fit(work, 12) == 4
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("[fit]")]
    assert lines == [f"[fit] resuming at step 4 of 12 from checkpoint {work / 'checkpoints' / 'step-4'}"]
    assert _fit(work, 12) == 12
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("[fit]")]
    assert lines == [f"[fit] trained already: checkpoint {work / 'checkpoints' / 'step-12'} is step 12 of 12; "
                     "nothing to train"]
