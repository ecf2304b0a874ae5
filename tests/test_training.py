"""Trainer, optimisers, schedules, losses, checkpoints: exact resume after a kill and 2-process DDP."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from toy_training import toy_collate, toy_data, toy_loss  # noqa: E402

from systems.training import (  # noqa: E402
    BertAdam,
    Schedule,
    TrainConfig,
    Trainer,
    example_indices,
    fairseq_smoothed_loss,
    paddle_smoothed_loss,
    unilm_smoothed_loss,
)

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- losses
def test_unilm_loss_is_kl_to_smoothed_target_without_pad() -> None:
    torch.manual_seed(0)
    logits, target = torch.randn(4, 6), torch.tensor([2, 0, 5, 3])  # position 1 is pad
    eps, v = 0.1, 6
    logp = logits.log_softmax(-1)
    total = 0.0
    for i in (0, 2, 3):
        q = torch.full((v,), eps / (v - 2))
        q[target[i]], q[0] = 1 - eps, 0.0
        nz = q > 0
        total += float((q[nz] * (q[nz].log() - logp[i][nz])).sum())
    assert math.isclose(float(unilm_smoothed_loss(logits, target, eps)), total / (3 + 1e-5), rel_tol=1e-5)
    ce = torch.nn.functional.cross_entropy(logits[[0, 2, 3]], target[[0, 2, 3]])
    assert math.isclose(float(unilm_smoothed_loss(logits, target, 0.0)), float(ce), rel_tol=1e-4)


def test_paddle_and_fairseq_losses() -> None:
    torch.manual_seed(1)
    logits, target = torch.randn(3, 5), torch.tensor([1, 4, 2])
    logp = logits.log_softmax(-1)
    q = torch.full((3, 5), 0.2 / 5)
    q[torch.arange(3), target] += 0.8
    assert torch.isclose(paddle_smoothed_loss(logits, target, 0.2), -(q * logp).sum(-1).mean())
    nll = -logp[torch.arange(3), target]
    exp = ((0.9 * nll - 0.1 * logp.mean(-1))[[1, 2]]).mean()  # target 1 is fairseq's pad
    assert torch.isclose(fairseq_smoothed_loss(logits, target, 0.1, pad_id=1), exp)


# ---------------------------------------------------------------- optimisers and schedules
def test_bertadam_has_no_bias_correction_and_clips_each_tensor() -> None:
    a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    opt = BertAdam([a, b], lr=1.0, weight_decay=0.0, max_grad_norm=1.0)
    a.grad, b.grad = torch.tensor([30.0, 40.0]), torch.tensor([0.3, 0.4])  # norms 50 and 0.5
    opt.step()
    # per-tensor clip: a's grad -> [0.6, 0.8]; b's is untouched (a global clip would shrink b)
    assert torch.allclose(b.grad, torch.tensor([0.3, 0.4]))
    # no bias correction: first update = 0.1 g / (sqrt(0.001) |g| + eps) ≈ 3.162, not Adam's 1.0
    assert torch.allclose(a.detach(), torch.full((2,), -0.1 / math.sqrt(0.001)), atol=1e-3)


def test_schedules() -> None:
    lin = Schedule("linear", total=100, warmup=10)
    assert lin(0) == 0 and lin(5) == 0.5 and lin(10) == 1.0 and math.isclose(lin(55), 0.5) and lin(100) == 0
    bert = Schedule("bert", total=100, warmup=10)
    assert math.isclose(bert(5), 0.5) and math.isclose(bert(55), 0.5) and bert(100) == 0
    pad = Schedule("paddle", total=100, warmup=10)
    assert math.isclose(pad(10), 0.9)  # the drop at the warm-up boundary (§0.3 ⚠)
    inv = Schedule("inverse_sqrt", total=100, warmup=4)
    assert inv(4) == 1.0 and math.isclose(inv(16), 0.5)


@pytest.mark.parametrize("kind", ["linear", "bert", "paddle"])
def test_schedule_ends_at_plus_zero_and_never_goes_negative(kind: str) -> None:
    """The bert formula (x-1)/(w-1) gave -0.0 at the last step: the progress line read ``lr -0.00e+00``."""
    for total, warm in ((400, 40), (7, 3), (100, 0)):
        sched = Schedule(kind, total=total, warmup=warm)
        values = [sched(step) for step in range(total + 3)]  # past the end too
        assert all(v >= 0 and math.copysign(1.0, v) == 1.0 for v in values), values
        assert values[total] == 0.0
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.5e-4)
    lambda_lr = torch.optim.lr_scheduler.LambdaLR(opt, Schedule(kind, total=400, warmup=40))
    for _ in range(400):
        opt.step()
        lambda_lr.step()
    assert f"{lambda_lr.get_last_lr()[0]:.2e}" == "0.00e+00"


def test_example_indices_are_sharded_and_stateless() -> None:
    a = example_indices(10, 3, 0, 2, 2, 0)
    b = example_indices(10, 3, 0, 2, 2, 1)
    assert len(set(a) | set(b)) == 4 and a == example_indices(10, 3, 0, 2, 2, 0)
    epoch0 = sum((example_indices(10, 3, g, 2, 1, 0) for g in range(5)), [])
    assert sorted(epoch0) == list(range(10))


# ---------------------------------------------------------------- trainer on a toy regression
def toy_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 16), torch.nn.Dropout(0.2), torch.nn.ReLU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 1)
    )


def toy_config(**kw) -> TrainConfig:
    base = dict(steps=12, batch_size=8, grad_accum=2, lr=1e-2, warmup=2, save_every=4, progress=False, log_every=1)
    return TrainConfig(**{**base, **kw})


def test_training_reduces_loss_and_is_seeded(tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        model = toy_model()
        res = Trainer(toy_config(steps=30, optimizer="bertadam", schedule="bert"), tmp_path / name).fit(
            model, toy_data(), toy_collate, toy_loss
        )
        runs.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert res.losses[-1][1] < res.losses[0][1] / 2 and res.examples_per_s > 0
    assert torch.equal(runs[0], runs[1])
    assert (tmp_path / "a" / "checkpoints" / "step-30" / "model.safetensors").is_file()


KILLED_RUN = """
import os, signal, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import torch
torch.set_num_threads(1)  # the reference trains at 1 thread too: float sums depend on the thread count
from test_training import toy_model, toy_data, toy_collate, toy_loss, toy_config
from systems.training import Trainer
def die(step, loss):
    if step == 6:
        os.kill(os.getpid(), signal.SIGKILL)
Trainer(toy_config(), {work!r}, on_step=die).fit(toy_model(), toy_data(), toy_collate, toy_loss)
"""


def test_resume_after_kill_equals_uninterrupted_run(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the killed run: bitwise equality needs the same reduction order
    try:
        _resume_after_kill(tmp_path)
    finally:
        torch.set_num_threads(before)


def _resume_after_kill(tmp_path: Path) -> None:
    ref = toy_model()
    Trainer(toy_config(), tmp_path / "ref").fit(ref, toy_data(), toy_collate, toy_loss)
    work = tmp_path / "killed"
    script = KILLED_RUN.format(root=str(ROOT), tests=str(ROOT / "tests"), work=str(work))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert sorted(p.name for p in (work / "checkpoints").glob("step-*")) == ["step-4"]
    resumed = toy_model()
    res = Trainer(toy_config(), work).fit(resumed, toy_data(), toy_collate, toy_loss)
    assert res.resumed_from == 4 and res.steps == 12
    for p, q in zip(resumed.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)


DDP_WORKER = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import torch
from accelerate import PartialState
from test_training import toy_model, toy_data, toy_collate, toy_loss, toy_config
from systems.training import Trainer
model = toy_model()
Trainer(toy_config(steps=6, save_every=0), Path({work!r})).fit(model, toy_data(), toy_collate, toy_loss)
state = PartialState()
assert state.num_processes == 2 and state.distributed_type.name == "MULTI_CPU", state.distributed_type
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
torch.save(flat, Path({work!r}) / f"params-rank{{state.process_index}}.pt")
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_process_ddp_on_cpu_ends_with_identical_parameters(tmp_path: Path) -> None:
    """The real ``accelerate launch`` with 2 CPU processes (gloo); both ranks end identical."""
    script = tmp_path / "worker.py"
    script.write_text(DDP_WORKER.format(root=str(ROOT), tests=str(ROOT / "tests"), work=str(tmp_path)))
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--main_process_port",
        str(_free_port()),
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(script),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    p0 = torch.load(tmp_path / "params-rank0.pt")
    p1 = torch.load(tmp_path / "params-rank1.pt")
    assert torch.equal(p0, p1)
    assert not torch.equal(p0, torch.cat([p.detach().flatten() for p in toy_model().parameters()]))
