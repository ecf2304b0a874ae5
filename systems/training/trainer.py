"""A small trainer on HF accelerate (CPU, one GPU, multi-GPU/multi-CPU DDP via ``accelerate launch``).

Resume is exact: the data order is a pure function of (seed, step, rank), collate randomness comes
from a ``random.Random`` seeded the same way, and the torch RNG (dropout) is saved with each
checkpoint, so a run killed after checkpoint N and resumed equals an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from bench.api.precision import autocast, compiled
from systems.training.batching import BatchOrder
from systems.training.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from systems.training.optim import build_optimizer, build_scheduler
from systems.training.speed_probe import Policy, StepProbe, probe_batches, resolve, shape_class

T = TypeVar("T")
#: dev examples a family scores at each checkpoint for the record's training curve (the first ones)
DEV_CURVE_EXAMPLES = 256
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
    #: auto | fp32 | bf16 | fp16 (GPU). auto: measured once per machine and shape class (systems.training.speed_probe)
    precision: str = "fp32"
    #: torch.compile the model's blocks and heads while training; under precision=auto: the probe may compile
    compile: bool = False
    bucket_pool: int = 0  # > 1: length-bucketed batches, sorted within pools of this many batches
    save_every: int = 0  # 0: only the final checkpoint
    keep_checkpoints: int = 2
    seed: int = 42
    log_every: int = 10
    progress: bool = True
    #: where to train: the system's placed device (the harness's choice, never the trainer's); under
    #: ``accelerate launch`` with several processes a bare ``cuda`` device is each process's own GPU
    device: str = "cpu"

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
    precision: str = "fp32"  # what ran (the config says what was asked for)
    compiled: bool = False
    threads: int = 1
    bucketed: bool = False
    #: how precision and compile were chosen (systems.training.speed_probe): source, chosen, why, the probe's figures
    policy: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def train_config(family_cfg: Any, **explicit: Any) -> TrainConfig:
    """The trainer's settings from a family's config: every :class:`TrainConfig` field the family config
    has under the same name, then ``explicit`` (what the family computes: steps from epochs, a per-task
    learning rate, its schedule). One mapping for every family, so a knob added to :class:`TrainConfig`
    reaches each family that names it without another copied field list."""
    from dataclasses import fields

    own = {f.name: getattr(family_cfg, f.name) for f in fields(family_cfg)}
    taken = {f.name: own[f.name] for f in fields(TrainConfig) if f.name in own}
    return TrainConfig(**{**taken, **explicit})


def example_indices(n: int, seed: int, micro_index: int, micro: int, world: int, rank: int) -> list[int]:
    """Indices of the examples of global micro-batch ``micro_index`` on ``rank`` (no bucketing).

    The stream is an endless sequence of seeded permutations (epoch e uses seed+e), cut into
    global micro-batches of ``world*micro`` (incomplete tails dropped), so it depends on nothing
    but its arguments and a resumed run reads exactly what an uninterrupted one would.
    """
    return BatchOrder(n, seed, world * micro).indices(micro_index, micro, rank)


class Trainer:
    """Runs ``cfg.steps`` optimizer updates of ``loss_fn(model, collate(examples, rng))``."""

    def __init__(self, cfg: TrainConfig, workdir: Path, on_step: Callable[[int, float], None] | None = None):
        self.cfg, self.workdir, self.on_step = cfg, Path(workdir), on_step

    def fit(
        self,
        model: nn.Module,
        dataset: Sequence[Any],
        collate: Collate,
        loss_fn: LossFn,
        lengths: Sequence[int] | None = None,
        dev: Sequence[Any] | None = None,
    ) -> TrainResult:
        """Train; ``lengths`` (one per example, e.g. source + target tokens) enables length buckets
        when ``cfg.bucket_pool > 1``; ``dev`` examples are scored with ``loss_fn`` at every
        checkpoint (``dev_log.jsonl``), so the record shows whether the run had converged."""
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        cfg = self.cfg
        # Placement is the harness's: accelerate places nothing (device_placement=False); it only runs
        # DDP when launched with several processes, each on its own GPU. cpu=True for a CPU device:
        # accelerate only detects multi-CPU (gloo) DDP in that mode.
        on_cuda = torch.device(cfg.device).type == "cuda"
        acc = Accelerator(cpu=not on_cuda, device_placement=False)
        device = acc.device if on_cuda and acc.num_processes > 1 else torch.device(cfg.device)
        model.to(device)
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
        order = BatchOrder(len(dataset), cfg.seed, world * micro, lengths, cfg.bucket_pool)
        # the scheduler is stepped by hand: accelerate would step it once per process
        model, optimizer = acc.prepare(model, optimizer)
        ckpt_root = self.workdir / "checkpoints"
        self.workdir.mkdir(parents=True, exist_ok=True)
        start = 0
        last = latest_checkpoint(ckpt_root)
        if last is not None:
            start = load_checkpoint(last, acc.unwrap_model(model), optimizer, scheduler)["step"]
            if acc.is_main_process:  # a rerun after a kill must say it continues, not start over silently
                said = (f"resuming at step {start} of {cfg.steps} from checkpoint {last}" if start < cfg.steps
                        else f"trained already: checkpoint {last} is step {start} of {cfg.steps}; nothing to train")
                print(f"[fit] {said}", file=sys.stderr)
        # Precision is applied here, not by accelerate: its state is a per-process singleton, so one
        # process (a benchmark, a test) could not train fp32 and then bf16. bf16 needs only autocast;
        # fp16 (CUDA) adds a grad scaler. precision=auto is timed here, on this model and these batches.
        policy = self._policy(acc.unwrap_model(model), dataset, collate, loss_fn, lengths, order, micro, rank,
                              world, device, training=start < cfg.steps)
        prec, compile_on = policy.precision, policy.compile
        if policy.notice and acc.is_main_process:
            print(f"[bench] {policy.notice}", file=sys.stderr)
        scaler = torch.amp.GradScaler("cuda") if prec.effective == "fp16" else None
        log = self.workdir / "train_log.jsonl"
        result = TrainResult(
            steps=start,
            examples=0,
            seconds=0.0,
            examples_per_s=0.0,
            resumed_from=start,
            precision=prec.effective,
            compiled=compile_on,
            threads=torch.get_num_threads(),
            bucketed=order.bucketed,
            policy=policy.record,
        )
        bar = _progress(cfg.progress and acc.is_main_process, cfg.steps, start)
        t0 = time.perf_counter()
        elapsed_at: list[tuple[int, float]] = []  # (step, seconds since start): benchmarks read step times
        model.train()
        with bar, compiled(acc.unwrap_model(model), compile_on and start < cfg.steps):
            for step in range(start, cfg.steps):
                total = 0.0
                for a in range(cfg.grad_accum):
                    g = step * cfg.grad_accum + a
                    idx = order.indices(g, micro, rank)
                    rng = random.Random(cfg.seed * 1_000_003 + g * 7919 + rank)
                    batch = _to_device(collate([dataset[i] for i in idx], rng), device)
                    sync = acc.no_sync(model) if a < cfg.grad_accum - 1 else contextlib.nullcontext()
                    with sync:
                        with autocast(prec, str(device)):
                            loss = loss_fn(model, batch) / cfg.grad_accum
                        if scaler is not None:
                            scaler.scale(loss).backward()
                        else:
                            acc.backward(loss)
                    total += float(loss.detach())
                if scaler is not None:
                    scaler.unscale_(optimizer)
                if cfg.optimizer != "bertadam" and cfg.max_grad_norm > 0:
                    acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                if scaler is not None:
                    scale = scaler.get_scale()
                    scaler.step(optimizer)
                    scaler.update()
                    skipped = scaler.get_scale() < scale  # inf/nan gradients: the update was skipped
                else:
                    optimizer.step()
                    skipped = False
                if not skipped:
                    scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                done = step + 1
                lr = scheduler.get_last_lr()[0]
                result.examples += cfg.batch_size
                elapsed = time.perf_counter() - t0
                elapsed_at.append((done, round(elapsed, 4)))
                bar.update(done, total, float(lr), result.examples / max(elapsed, 1e-9))
                if done % cfg.log_every == 0 or done == cfg.steps:
                    result.losses.append((done, total))
                    if acc.is_main_process:
                        with log.open("a") as fh:
                            fh.write(json.dumps({"step": done, "loss": total, "lr": lr, "elapsed_s": elapsed}) + "\n")
                if (cfg.save_every and done % cfg.save_every == 0) or done == cfg.steps:
                    if dev and acc.is_main_process:
                        dev_loss = evaluate(acc.unwrap_model(model), dev, collate, loss_fn, micro, cfg.seed, device)
                        with (self.workdir / "dev_log.jsonl").open("a") as fh:
                            fh.write(json.dumps({"step": done, "dev_loss": dev_loss}) + "\n")
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
        if acc.is_main_process and elapsed_at:
            (self.workdir / "step_times.json").write_text(json.dumps(elapsed_at))
        model.eval()
        self.accelerator = acc
        return result

    def _policy(self, model: nn.Module, dataset: Sequence[Any], collate: Collate, loss_fn: LossFn,
                lengths: Sequence[int] | None, order: BatchOrder, micro: int, rank: int, world: int,
                device: torch.device, training: bool) -> Policy:
        """The run's precision and compile (:func:`systems.training.speed_probe.resolve`): in a single-process run,
        a probe on this model and two of the run's own seeded batches of typical length."""
        cfg = self.cfg
        probe = None
        if world == 1:

            def make_batches() -> list[Any]:
                picks = probe_batches(order, micro, rank, lengths, look=min(32, max(1, order.usable // order.span)))
                return [_to_device(collate([dataset[i] for i in idx], random.Random(cfg.seed * 1_000_003 + k)), device)
                        for k, idx in enumerate(picks)]

            def make_optimizer() -> torch.optim.Optimizer:  # learning rate 0: the probe never moves a weight
                return build_optimizer(cfg.optimizer, model, 0.0, cfg.weight_decay, cfg.eps,
                                       max_grad_norm=cfg.max_grad_norm)

            clip = cfg.max_grad_norm if cfg.optimizer != "bertadam" else 0.0
            probe = StepProbe(model, make_batches, loss_fn, str(device), make_optimizer, clip,
                              shape_class(model, micro, lengths, order.bucketed))
        return resolve(cfg.precision, cfg.compile, str(device), probe, training=training)


def evaluate(
    model: nn.Module, dev: Sequence[Any], collate: Collate, loss_fn: LossFn, micro: int, seed: int, device: Any
) -> float:
    """Mean ``loss_fn`` over ``dev`` in eval mode, in fixed batches with fixed collate randomness,
    inside a forked RNG so training (and its exact resume) never sees that it ran."""
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        for start in range(0, len(dev), micro):
            items = list(dev[start : start + micro])
            batch = _to_device(collate(items, random.Random(seed * 31 + start)), device)
            total += float(loss_fn(model, batch)) * len(items)
            n += len(items)
    model.train(was_training)
    return round(total / max(n, 1), 6)


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
        self.prog: Any = None

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
