"""The measured training speed policy on the trainer's side: what ``precision=auto`` trains with, and why.

``auto`` is resolved by timing (:mod:`bench.api.speed_policy`): once per machine and shape class, a few training
steps of eager fp32, compiled fp32, eager bf16 and compiled bf16 (bf16 only where native; compiled only where the
run's ``compile`` allows it) on the run's own model and seeded batches, paired and interleaved. The figures are
cached (:mod:`bench.api.speed_cache`), so a later run of the same shapes on the same machine decides at once.

An explicit ``precision`` (``fp32``, ``bf16``, ``fp16``) wins as set, with ``compile`` as set; when cached figures
say that setting is slower than what the probe would choose, one line says so. ``$BENCH_TRAIN_POLICY`` set to a
candidate (``fp32``, ``fp32+compile``, ``bf16``, ``bf16+compile``) fixes what ``auto`` means without probing (the
test suite sets ``fp32``, so no test spends seconds timing); ``measure`` or unset probes.

The probe leaves the run as it found it: it trains a throwaway optimizer at learning rate 0, restores the model's
state and the RNG afterwards, and only then does the run's own first step happen, so resume stays exact.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bench.api.errors import UserError
from bench.api.precision import Precision, autocast, compile_units, native_bf16, resolve_precision
from bench.api.speed_policy import (
    CANDIDATES,
    DEFAULT,
    Choice,
    Figures,
    allowed,
    candidate,
    decide,
    measure,
    setting,
    slower_than_choice,
    summary,
)
from systems.training.batching import BatchOrder, pad_length

#: fixes what ``precision=auto`` trains with, without probing: ``measure`` (the default) or a candidate
ENV = "BENCH_TRAIN_POLICY"
#: seconds of timed steps the probe aims at (it runs at least 3 paired rounds, at most 8)
PROBE_BUDGET_S = 6.0
#: the probe's clock (tests put a fake one here)
CLOCK: Callable[[], float] = time.perf_counter
_LEGACY = {"no": "fp32"}


@dataclass(frozen=True)
class Policy:
    """What a fit trains with (precision, compile) and the record of why (``TrainResult.policy``)."""

    precision: Precision
    compile: bool
    record: dict[str, Any] = field(default_factory=dict)
    notice: str = ""


def env_choice() -> str | None:
    """The candidate ``$BENCH_TRAIN_POLICY`` fixes ``auto`` to, None to measure; a bad value is one line."""
    value = os.environ.get(ENV, "").strip()
    if value in ("", "measure"):
        return None
    if value not in CANDIDATES:
        raise UserError(f"${ENV}={value!r}: set it to measure (the default) or one of {', '.join(CANDIDATES)}")
    return value


def probe_batches(order: BatchOrder, micro: int, rank: int, lengths: Sequence[int] | None,
                  look: int = 32, n: int = 2) -> list[list[int]]:
    """The example indices of ``n`` micro-batches of typical length among the run's first ``look``: with length
    buckets the first batches may be the shortest or the longest, and a probe on those would misjudge."""
    first = [order.indices(g, micro, rank) for g in range(look)]
    if lengths is None:
        return first[:n]
    ranked = sorted(first, key=lambda idx: max(lengths[i] for i in idx))
    picks = sorted({round((k + 1) * (len(ranked) - 1) / (n + 1)) for k in range(n)})
    return [ranked[p] for p in picks]


def shape_class(model: nn.Module, micro: int, lengths: Sequence[int] | None, bucketed: bool) -> str:
    """What a probe's figures hold for: the model (class, parameter count), micro-batch, longest example (to 32)."""
    kind = type(model)
    n_params = sum(p.numel() for p in model.parameters())
    longest = f"longest {pad_length(max(lengths), 32)}" if lengths else "lengths unknown"
    return (f"{kind.__module__}.{kind.__qualname__}|{n_params} params|micro-batch {micro}|{longest}|"
            f"{'buckets' if bucketed else 'no buckets'}")


class StepProbe:
    """One training step of a candidate on the run's model and probe batches, timed by :func:`measure`."""

    def __init__(self, model: nn.Module, make_batches: Callable[[], Sequence[Any]],
                 loss_fn: Callable[[nn.Module, Any], torch.Tensor], device: str,
                 make_optimizer: Callable[[], torch.optim.Optimizer], max_grad_norm: float, shape: str) -> None:
        self.model, self.make_batches, self.loss_fn, self.device = model, make_batches, loss_fn, device
        self.make_optimizer, self.max_grad_norm, self.shape = make_optimizer, max_grad_norm, shape
        self.batches: list[Any] = []
        self._compiled: dict[nn.Module, Any] = {}
        self._opt: torch.optim.Optimizer | None = None

    def _set_compiled(self, on: bool) -> None:
        for m, fn in self._compiled.items():
            if on:
                m.forward = fn  # the same swap bench.api.precision.compiled makes for training
            else:
                m.__dict__.pop("forward", None)

    def step(self, name: str, i: int) -> None:
        precision, comp = setting(name)
        self._set_compiled(comp)
        batch = self.batches[i % len(self.batches)]
        with autocast(Precision(precision, precision), self.device):
            loss = self.loss_fn(self.model, batch)
        loss.backward()
        if self.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        assert self._opt is not None
        self._opt.step()
        self._opt.zero_grad(set_to_none=True)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(torch.device(self.device))

    def run(self, candidates: Sequence[str], skipped: dict[str, str], clock: Callable[[], float] | None = None,
            budget_s: float = PROBE_BUDGET_S) -> Figures:
        """Measure ``candidates``; the model's state, its eager forwards and the RNG are as before afterwards."""
        model = self.model
        self.batches = list(self.make_batches())
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if any(setting(c)[1] for c in candidates):
            self._compiled = {m: torch.compile(m.forward, dynamic=True) for m in compile_units(model)}
        cuda = [torch.device(self.device).index or 0] if self.device.startswith("cuda") else []
        warm = {c: len(self.batches) + (1 if setting(c)[1] else 0) for c in candidates}
        was_training = model.training
        model.train()
        try:
            with torch.random.fork_rng(devices=cuda):
                self._opt = self.make_optimizer()
                return measure(candidates, self.step, warm_steps=warm, clock=clock or CLOCK, budget_s=budget_s,
                               skipped=skipped)
        finally:
            self._set_compiled(False)
            self._opt, self.batches = None, []
            model.load_state_dict(state)
            model.zero_grad(set_to_none=True)
            model.train(was_training)


def _say(line: str) -> None:
    print(f"[bench] {line}", file=sys.stderr, flush=True)


def _shown(path: str) -> str:
    """A cache file as a record shows it: relative to the checkout when inside it (records travel between machines)."""
    from bench.api.paths import repo_root

    try:
        return str(Path(path).resolve().relative_to(repo_root()))
    except (ValueError, OSError):
        return path


def _probe_record(source: str, choice: Choice, figures: Figures, probe: StepProbe, key: dict[str, Any],
                  created: str, path: str) -> dict[str, Any]:
    return {"source": source, "chosen": choice.name, "why": choice.why,
            "probe": {"shape_class": probe.shape, "key": key, "created": created, "file": _shown(path) if path else "",
                      "figures": figures.to_json(),
                      "speedups": {c: [round(s.point, 4), round(s.low, 4), round(s.high, 4)]
                                   for c, s in choice.speedups.items()},
                      "summary": summary(figures, choice)}}


def resolve(cfg_precision: str, cfg_compile: bool, device: str, probe: StepProbe | None, *, training: bool = True,
            say: Callable[[str], None] = _say, cache_root: Path | None = None) -> Policy:
    """The precision and compile a fit trains with, and the record of why.

    ``probe`` is None where no probe can run (several processes); ``training`` False when nothing is left to
    train (a finished run resumed), where cached figures are used but nothing is timed."""
    fixed = env_choice()
    if _LEGACY.get(cfg_precision, cfg_precision) != "auto":
        return _explicit(cfg_precision, cfg_compile, device, probe if fixed is None else None, cache_root)
    if fixed is not None:
        precision, comp = setting(fixed)
        comp = comp and cfg_compile
        prec = resolve_precision(precision, device)
        return Policy(Precision(cfg_precision, prec.effective, prec.notice), comp,
                      {"source": "env", "chosen": candidate(precision, comp), "why": f"${ENV}={fixed}",
                       "notice": prec.notice}, prec.notice)
    return _measured(cfg_precision, cfg_compile, device, probe, training, say, cache_root)


def _explicit(cfg_precision: str, cfg_compile: bool, device: str, probe: StepProbe | None,
              cache_root: Path | None) -> Policy:
    """A setting given explicitly trains as given; cached figures (never a new probe) say when it is slower."""
    from bench.api import speed_cache

    prec = resolve_precision(cfg_precision, device)
    name = candidate(prec.effective, cfg_compile)
    record: dict[str, Any] = {"source": "explicit", "chosen": name,
                              "why": f"set explicitly: precision={cfg_precision}, compile={cfg_compile}"}
    notice = ""
    if probe is not None and name in CANDIDATES:
        key = speed_cache.machine_key(device)
        figures, created, _ = speed_cache.load(key, probe.shape, cache_root)
        if figures is not None:
            choice = decide(figures, allowed(True, native_bf16(device)))
            slow = slower_than_choice(figures, name, choice)
            record = {**_probe_record("explicit", choice, figures, probe, key, created,
                                      str(speed_cache.cache_file(key, probe.shape, cache_root))),
                      "chosen": name, "why": record["why"], "policy_would_choose": choice.name}
            if slow is not None:
                notice = (f"precision={cfg_precision} compile={str(cfg_compile).lower()} as set: the speed probe "
                          f"measured {name} at {slow} the speed of {choice.name} on this machine; kept as asked")
    return Policy(prec, cfg_compile, {**record, "notice": notice}, notice)


def _default(cfg_precision: str, why: str) -> Policy:
    return Policy(Precision(cfg_precision, "fp32"), False, {"source": "default", "chosen": DEFAULT, "why": why,
                                                            "notice": ""})


def _measured(cfg_precision: str, cfg_compile: bool, device: str, probe: StepProbe | None, training: bool,
              say: Callable[[str], None], cache_root: Path | None) -> Policy:
    """``auto``: the fastest candidate that wins clearly, by this machine's cached figures or a probe now."""
    from bench.api import speed_cache

    native = native_bf16(device)
    names = allowed(cfg_compile, native)
    if len(names) == 1:
        return _default(cfg_precision, "eager fp32 is the only candidate: compile is off and bf16 is not native here")
    if probe is None:
        return _default(cfg_precision, "several processes train and the probe runs in single-process training only")
    key = speed_cache.machine_key(device)
    figures, created, problem = speed_cache.load(key, probe.shape, cache_root)
    if problem:
        say(problem)
    path = str(speed_cache.cache_file(key, probe.shape, cache_root))
    source = "cache"
    if figures is not None and not set(names) <= set(figures.rounds):
        figures = None  # cached by a run that allowed fewer candidates than this one
    if figures is None:
        if not training:
            return _default(cfg_precision, "nothing left to train: not probed")
        minutes = "; compiling takes minutes on a small CPU" if any(setting(c)[1] for c in names) else ""
        say(f"training speed probe: timing {', '.join(names)} at this run's shapes (once per machine and shape "
            f"class, then cached{minutes}) ...")
        skipped = {} if native else {c: "bf16 is not native here (no amx_bf16, no avx512_bf16)" for c in CANDIDATES
                                     if setting(c)[0] == "bf16" and (cfg_compile or not setting(c)[1])}
        figures = probe.run(names, skipped)
        source = "probe"
        try:
            saved, created = speed_cache.save(key, probe.shape, figures, cache_root)
            path = str(saved)
        except OSError as exc:
            say(f"training speed probe: figures not cached ({exc}); the next run probes again")
            path, created = "", ""
    choice = decide(figures, names)
    precision, comp = setting(choice.name)
    say(f"training policy: {choice.name} ({source}): {choice.why}")
    return Policy(Precision(cfg_precision, precision), comp,
                  {**_probe_record(source, choice, figures, probe, key, created, path), "notice": ""})
