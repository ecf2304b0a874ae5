"""The speed policy: precision resolution, compiled blocks, length buckets, padding to a multiple.

Speed itself is measured by ``benchmarks/bench_training.py``; these tests check that the policy
changes nothing it should not: bucketing keeps the epoch a seeded permutation, compiled training
matches eager, bf16 tracks fp32, resume stays exact, and a bf16-trained NAR model decodes alike
in fp32 and bf16.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from toy_training import qg_examples, toy_collate, toy_data, toy_loss  # noqa: E402

from bench.api.precision import compile_units, compiled, resolve_precision  # noqa: E402
from systems.training import TrainConfig, Trainer  # noqa: E402
from systems.training.batching import BatchOrder, pad_length  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- batching
def test_pad_length_rounds_up() -> None:
    assert [pad_length(n, 8) for n in (1, 8, 9, 17)] == [8, 8, 16, 24]
    assert pad_length(13, 1) == 13 and pad_length(13, 0) == 13


def _lengths(n: int) -> list[int]:
    rng = random.Random(5)
    return [rng.randint(4, 120) for _ in range(n)]


def test_bucketing_sees_every_example_once_per_epoch_in_a_seeded_order() -> None:
    n, micro, world = 960, 8, 2
    lengths = _lengths(n)
    order = BatchOrder(n, seed=3, span=micro * world, lengths=lengths, pool=8)
    steps = n // (micro * world)
    for epoch in range(2):
        seen = [
            i
            for g in range(epoch * steps, (epoch + 1) * steps)
            for r in range(world)
            for i in order.indices(g, micro, r)
        ]
        assert sorted(seen) == list(range(n)), "each example exactly once per epoch"
    again = BatchOrder(n, seed=3, span=micro * world, lengths=lengths, pool=8)
    assert [again.indices(g, micro, 0) for g in range(10)] == [order.indices(g, micro, 0) for g in range(10)]
    other = BatchOrder(n, seed=4, span=micro * world, lengths=lengths, pool=8)
    assert [other.indices(g, micro, 0) for g in range(10)] != [order.indices(g, micro, 0) for g in range(10)]
    assert order.epoch(0) != order.epoch(1)


def test_bucketing_cuts_padding() -> None:
    n, span = 4096, 32
    lengths = _lengths(n)

    def padded(order: BatchOrder) -> int:
        return sum(span * max(lengths[i] for i in order.indices(g, span, 0)) for g in range(n // span))

    plain, bucketed = BatchOrder(n, 0, span), BatchOrder(n, 0, span, lengths, pool=32)
    assert not plain.bucketed and bucketed.bucketed
    real = sum(lengths)
    # uniform lengths 4..120: random batches pad almost everything to ~117; buckets to within a few tokens
    assert padded(plain) > 1.7 * real and padded(bucketed) < 1.1 * real


def test_bucketing_needs_one_length_per_example() -> None:
    with pytest.raises(ValueError, match="3 lengths for 4"):
        BatchOrder(4, 0, 2, [1, 2, 3], pool=2)


# ---------------------------------------------------------------- precision policy
def test_precision_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.api import precision

    monkeypatch.setattr(precision, "native_bf16", lambda device="cpu": False)
    auto = resolve_precision("auto")
    assert auto.effective == "fp32" and "no native bf16" in auto.notice
    assert resolve_precision("bf16").effective == "bf16" and "emulated" in resolve_precision("bf16").notice
    assert resolve_precision("fp16").effective == "fp32"  # grad-scaled fp16 is a GPU mode
    assert resolve_precision("no").effective == "fp32" and resolve_precision("no").notice == ""
    monkeypatch.setattr(precision, "native_bf16", lambda device="cpu": True)
    assert resolve_precision("auto") == precision.Precision("auto", "bf16")
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("half")


def test_native_bf16_reads_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.api import precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert not precision.native_bf16("cpu")
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512f", "amx_bf16", "amx_tile"}))
    assert precision.native_bf16("cpu")


# ---------------------------------------------------------------- a toy with a compile unit
class Block(torch.nn.Module):
    COMPILE_UNIT = True

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.ln = torch.nn.Linear(4, 16), torch.nn.Linear(16, 4), torch.nn.LayerNorm(4)

    def forward(self, x):
        return self.ln(x + self.b(torch.nn.functional.gelu(self.a(x))))


def block_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(Block(), Block(), torch.nn.Linear(4, 1))


def policy_config(**kw) -> TrainConfig:
    base = dict(
        steps=12,
        batch_size=8,
        lr=1e-2,
        warmup=2,
        save_every=4,
        progress=False,
        log_every=1,
        compile=True,
        bucket_pool=2,
    )
    return TrainConfig(**{**base, **kw})


def toy_lengths() -> list[int]:
    return [int(abs(x[0]) * 10) for x, _ in toy_data()]


def test_compiled_units_are_restored_after_training(tmp_path: Path) -> None:
    model = block_model()
    assert len(compile_units(model)) == 2
    with compiled(model) as n:
        assert n == 2 and all("forward" in m.__dict__ for m in compile_units(model))
    assert all("forward" not in m.__dict__ for m in compile_units(model))
    res = Trainer(policy_config(), tmp_path).fit(model, toy_data(), toy_collate, toy_loss, lengths=toy_lengths())
    assert res.compiled and res.bucketed and res.precision == "fp32" and res.threads == torch.get_num_threads()
    assert all("forward" not in m.__dict__ for m in compile_units(model)), "decoding must run eager"
    assert (tmp_path / "step_times.json").is_file()


def test_compiled_training_matches_eager(tmp_path: Path) -> None:
    """Same batches, same dropout-free model: inductor's fused kernels change only the rounding."""
    params = []
    for name, comp in (("eager", False), ("compiled", True)):
        model = block_model()
        Trainer(policy_config(compile=comp), tmp_path / name).fit(
            model, toy_data(), toy_collate, toy_loss, lengths=toy_lengths()
        )
        params.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    torch.testing.assert_close(params[0], params[1], rtol=1e-4, atol=1e-5)


KILLED_RUN = """
import os, signal, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from test_training_policy import block_model, toy_data, toy_collate, toy_loss, policy_config, toy_lengths
from systems.training import Trainer
def die(step, loss):
    if step == 6:
        os.kill(os.getpid(), signal.SIGKILL)
model = block_model()
Trainer(policy_config(), {work!r}, on_step=die).fit(model, toy_data(), toy_collate, toy_loss, lengths=toy_lengths())
"""


def test_resume_after_kill_is_exact_under_the_policy(tmp_path: Path) -> None:
    """Compiled blocks + length buckets: a run killed after checkpoint 4 resumes bit for bit."""
    ref = block_model()
    Trainer(policy_config(), tmp_path / "ref").fit(ref, toy_data(), toy_collate, toy_loss, lengths=toy_lengths())
    work = tmp_path / "killed"
    script = KILLED_RUN.format(root=str(ROOT), tests=str(ROOT / "tests"), work=str(work))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    resumed = block_model()
    res = Trainer(policy_config(), work).fit(resumed, toy_data(), toy_collate, toy_loss, lengths=toy_lengths())
    assert res.resumed_from == 4 and res.steps == 12
    for p, q in zip(resumed.parameters(), ref.parameters(), strict=True):
        assert torch.equal(p, q)


# ---------------------------------------------------------------- bf16 on a real family (NAR, smoke size)


@pytest.fixture(scope="module")
def nar_runs(tmp_path_factory: pytest.TempPathFactory):
    """encoder_minilm_l6 at smoke size, 30 updates on one fixed batch sequence, fp32 and bf16."""
    from bench.api.types import TaskInfo
    from systems import build

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    task = TaskInfo("squad_qg", qg_examples(256, 0), qg_examples(16, 1), 464, 48)
    runs = {}
    for precision in ("fp32", "bf16"):
        system = build("encoder_minilm_l6", "smoke", {"precision": precision, "steps": 30, "save_every": 0})
        system.fit(task, tmp_path_factory.mktemp(f"nar_{precision}"))
        runs[precision] = system
    yield runs, task
    torch.set_num_threads(before)


def test_bf16_training_tracks_fp32(nar_runs) -> None:
    """bf16 keeps 8 mantissa bits (relative rounding 2^-9 = 0.2 % per matmul input); the master
    weights, optimizer and loss stay fp32, so over 30 updates the loss drifts by rounding only.
    2 % is ten times one rounding step and far below what a broken cast (a loss computed in bf16,
    bf16 master weights) produces. Compared on the mean of the last three logged losses so one
    batch's noise does not decide."""
    runs, _ = nar_runs
    assert runs["bf16"].train_result["precision"] == "bf16" and runs["fp32"].train_result["precision"] == "fp32"
    losses = {k: [loss for _, loss in r.train_result["losses"]] for k, r in runs.items()}
    assert len(losses["fp32"]) == 3  # logged at 10, 20, 30
    fp32, bf16 = (sum(v) / len(v) for v in (losses["fp32"], losses["bf16"]))
    assert abs(bf16 - fp32) / fp32 < 0.02, losses


def test_bf16_model_decodes_alike_in_fp32_and_bf16(nar_runs) -> None:
    from bench.api.precision import Precision, autocast

    runs, task = nar_runs
    system = runs["bf16"]
    examples = qg_examples(64, 7)
    fp32 = system.decode(examples)
    with autocast(Precision("bf16", "bf16")):
        bf16 = system.decode(examples)
    same = sum(a == b for a, b in zip(fp32, bf16, strict=True)) / len(fp32)
    assert same >= 0.95, [(a, b) for a, b in zip(fp32, bf16, strict=True) if a != b][:5]


def test_latency_signature_names_a_non_fp32_precision() -> None:
    from bench.latency.report import Settings, latency_signature

    base = dict(
        n=10,
        rounds=2,
        warmup_items=1,
        warmup_s=0.0,
        min_items=1,
        min_duration_s=0.0,
        max_duration_s=None,
        max_items=None,
        seed=0,
        length_forced=False,
        device="cpu",
        sync="none",
        canary_tolerance=0.25,
    )
    fp = {"torch": "2.13.0+cpu", "torch_threads": 2}
    assert "prec:" not in latency_signature(Settings(**base), "cpu", fp)  # fp32: the signature of old records
    assert "|prec:bf16|" in latency_signature(Settings(**base, precision="bf16"), "cpu", fp)
