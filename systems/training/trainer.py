"""A small trainer on HF accelerate (CPU, one GPU, multi-GPU/multi-CPU DDP via ``accelerate launch``).

Resume is exact: the data order is a pure function of (seed, step, rank), collate randomness comes
from a ``random.Random`` seeded the same way, and the torch RNG (dropout) is saved with each
checkpoint, so a run killed after checkpoint N and resumed equals an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from systems.training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from systems.training.optim import build_optimizer, build_scheduler

T = TypeVar("T")
Collate = Callable[[list[Any], random.Random], Any]
LossFn = Callable[[nn.Module, Any], Tensor]


@dataclass
class TrainConfig:
    """Optimisation settings; a budget preset fills these from the paper or the CPU sizing."""

    steps: int
    batch_size: int  # examples per optimizer update, over all processes and accumulation steps
    grad_accum: int = 1
    lr: float = 5e-5
    warmup: float = 0.1  # a fraction of ``steps`` when < 1, else a number of steps
    schedule: str = "linear"  # linear | bert | paddle | inverse_sqrt | constant
    optimizer: str = "adamw"  # adamw | bertadam
    weight_decay: float = 0.01
    eps: float | None = None
    max_grad_norm: float = 1.0
    mixed_precision: str = "no"  # no | bf16 | fp16 (fp16 on GPU only)
    save_every: int = 0  # 0: only the final checkpoint
    keep_checkpoints: int = 2
    seed: int = 42
    log_every: int = 10
    progress: bool = True

    @property
    def warmup_steps(self) -> int:
        return int(self.warmup * self.steps) if self.warmup < 1 else int(self.warmup)


@dataclass
class TrainResult:
    steps: int
    examples: int
    seconds: float
    examples_per_s: float
    resumed_from: int = 0
    losses: list[tuple[int, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def example_indices(n: int, seed: int, micro_index: int, micro: int, world: int, rank: int) -> list[int]:
    """Indices of the examples of global micro-batch ``micro_index`` on ``rank``.

    The stream is an endless sequence of seeded permutations (epoch e uses seed+e), cut into
    global micro-batches of ``world*micro`` (incomplete tails dropped), so it depends on nothing
    but its arguments and a resumed run reads exactly what an uninterrupted one would.
    """
    span = world * micro
    usable = (n // span) * span
    if usable == 0:
        raise ValueError(f"{n} training examples cannot fill one global micro-batch of {span}")
    start = micro_index * span + rank * micro
    out, perm_epoch, perm = [], -1, None
    for pos in range(start, start + micro):
        epoch, off = divmod(pos, usable)
        if epoch != perm_epoch:
            perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
            perm_epoch = epoch
        out.append(perm[off])
    return out


class Trainer:
    """Runs ``cfg.steps`` optimizer updates of ``loss_fn(model, collate(examples, rng))``."""

    def __init__(self, cfg: TrainConfig, workdir: Path, on_step: Callable[[int, float], None] | None = None):
        self.cfg, self.workdir, self.on_step = cfg, Path(workdir), on_step

    def fit(self, model: nn.Module, dataset: Sequence[Any], collate: Collate, loss_fn: LossFn) -> TrainResult:
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        cfg = self.cfg
        mp = cfg.mixed_precision if torch.cuda.is_available() or cfg.mixed_precision == "bf16" else "no"
        # cpu=True without a GPU: accelerate only detects multi-CPU (gloo) DDP in that mode
        acc = Accelerator(mixed_precision=mp, cpu=not torch.cuda.is_available())
        set_seed(cfg.seed)
        world, rank = acc.num_processes, acc.process_index
        micro, rem = divmod(cfg.batch_size, world * cfg.grad_accum)
        if rem or micro == 0:
            raise ValueError(
                f"batch_size {cfg.batch_size} must be a multiple of processes ({world}) x grad_accum ({cfg.grad_accum})"
            )
        optimizer = build_optimizer(
            cfg.optimizer, model, cfg.lr, cfg.weight_decay, cfg.eps, max_grad_norm=cfg.max_grad_norm
        )
        scheduler = build_scheduler(optimizer, cfg.schedule, cfg.steps, cfg.warmup_steps)
        # the scheduler is stepped by hand: accelerate would step it once per process
        model, optimizer = acc.prepare(model, optimizer)
        ckpt_root = self.workdir / "checkpoints"
        self.workdir.mkdir(parents=True, exist_ok=True)
        start = 0
        last = latest_checkpoint(ckpt_root)
        if last is not None:
            start = load_checkpoint(last, acc.unwrap_model(model), optimizer, scheduler)["step"]
        log = self.workdir / "train_log.jsonl"
        result = TrainResult(steps=start, examples=0, seconds=0.0, examples_per_s=0.0, resumed_from=start)
        bar = _progress(cfg.progress and acc.is_main_process, cfg.steps, start)
        t0 = time.perf_counter()
        model.train()
        with bar:
            for step in range(start, cfg.steps):
                total = 0.0
                for a in range(cfg.grad_accum):
                    g = step * cfg.grad_accum + a
                    idx = example_indices(len(dataset), cfg.seed, g, micro, world, rank)
                    rng = random.Random(cfg.seed * 1_000_003 + g * 7919 + rank)
                    batch = _to_device(collate([dataset[i] for i in idx], rng), acc.device)
                    sync = acc.no_sync(model) if a < cfg.grad_accum - 1 else contextlib.nullcontext()
                    with sync, acc.autocast():
                        loss = loss_fn(model, batch) / cfg.grad_accum
                        acc.backward(loss)
                    total += float(loss.detach())
                if cfg.optimizer != "bertadam" and cfg.max_grad_norm > 0:
                    acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                elif mp == "fp16":
                    acc.unscale_gradients()
                optimizer.step()
                if not acc.optimizer_step_was_skipped:
                    scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                done = step + 1
                lr = scheduler.get_last_lr()[0]
                result.examples += cfg.batch_size
                elapsed = time.perf_counter() - t0
                bar.update(done, total, lr, result.examples / max(elapsed, 1e-9))
                if done % cfg.log_every == 0 or done == cfg.steps:
                    result.losses.append((done, total))
                    if acc.is_main_process:
                        with log.open("a") as fh:
                            fh.write(json.dumps({"step": done, "loss": total, "lr": lr, "elapsed_s": elapsed}) + "\n")
                if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
                    acc.wait_for_everyone()
                    if acc.is_main_process:
                        save_checkpoint(
                            ckpt_root,
                            done,
                            acc.unwrap_model(model),
                            optimizer.optimizer,
                            scheduler,
                            {"seed": cfg.seed, "world": world},
                            keep=cfg.keep_checkpoints,
                        )
                    acc.wait_for_everyone()
                if self.on_step is not None:
                    self.on_step(done, total)
                result.steps = done
        result.seconds = time.perf_counter() - t0
        result.examples_per_s = result.examples / max(result.seconds, 1e-9)
        model.eval()
        self.accelerator = acc
        return result


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


class _progress:
    """A rich progress bar showing loss, lr and examples/s (a no-op when disabled)."""

    def __init__(self, enabled: bool, total: int, start: int) -> None:
        self.enabled, self.total, self.start = enabled, total, start
        self.prog = None

    def __enter__(self) -> _progress:
        if self.enabled and self.start < self.total:  # a finished run that is resumed trains nothing
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.prog = Progress(
                TextColumn("train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("loss {task.fields[loss]:.4f} lr {task.fields[lr]:.2e} {task.fields[eps]:.1f} ex/s"),
                TimeRemainingColumn(),
                transient=False,
            )
            self.prog.__enter__()
            self.task = self.prog.add_task("train", total=self.total, completed=self.start, loss=0.0, lr=0.0, eps=0.0)
        return self

    def update(self, done: int, loss: float, lr: float, eps: float) -> None:
        if self.prog is not None:
            self.prog.update(self.task, completed=done, loss=loss, lr=lr, eps=eps)

    def __exit__(self, *exc: object) -> None:
        if self.prog is not None:
            self.prog.__exit__(*exc)
