"""Optimisers and LR schedules of docs/systems.md §0.3: HF AdamW + linear, BertAdam, Paddle, inverse_sqrt."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn


def no_decay(name: str) -> bool:
    """BERT convention: no weight decay on biases and LayerNorm parameters."""
    return name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay: list[nn.Parameter] = []
    plain: list[nn.Parameter] = []
    seen: set[int] = set()
    for name, p in model.named_parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (plain if no_decay(name) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


class BertAdam(torch.optim.Optimizer):
    """pytorch_pretrained_bert's Adam: no bias correction, decoupled decay, per-tensor grad clipping.

    Kept for fidelity with unilm-v1 and CopyBERT: the clip norm applies to **each tensor separately**
    (not the global norm), and the decay term ``wd·p`` is added to the Adam update before ``lr``.
    The LR schedule is applied outside (a LambdaLR), not inside as in the original.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
        max_grad_norm: float = 1.0,
    ) -> None:
        if lr < 0:
            raise ValueError(f"BertAdam: invalid lr {lr}")
        super().__init__(
            params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "max_grad_norm": max_grad_norm}
        )

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                if group["max_grad_norm"] > 0:
                    torch.nn.utils.clip_grad_norm_(p, group["max_grad_norm"])
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(b1).add_(grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
                update = m / (v.sqrt() + group["eps"])
                if group["weight_decay"] > 0:
                    update = update + group["weight_decay"] * p
                p.add_(update, alpha=-group["lr"])
                state["step"] += 1
        return loss


def build_optimizer(
    name: str,
    model: nn.Module,
    lr: float,
    weight_decay: float = 0.01,
    eps: float | None = None,
    betas: tuple[float, float] = (0.9, 0.999),
    max_grad_norm: float = 1.0,
) -> torch.optim.Optimizer:
    """``adamw`` (HF/torch AdamW, eps 1e-8) or ``bertadam`` (eps 1e-6, per-tensor clip inside)."""
    groups = param_groups(model, weight_decay)
    if name == "adamw":
        # one fused kernel per step on a GPU (the multi-tensor loop launches hundreds): same update rule
        fused = {"fused": True} if all(p.is_cuda for g in groups for p in g["params"]) else {}
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=1e-8 if eps is None else eps, **fused)
    if name == "bertadam":
        return BertAdam(groups, lr=lr, betas=betas, eps=1e-6 if eps is None else eps, max_grad_norm=max_grad_norm)
    raise ValueError(f"Unknown optimizer '{name}'; choose adamw or bertadam")


class Schedule:
    """An LR multiplier as a picklable object, so LambdaLR's state dict stores it as plain numbers."""

    def __init__(self, kind: str, total: int, warmup: int, warmup_init: float = 0.0) -> None:
        known = ("linear", "bert", "paddle", "inverse_sqrt", "constant")
        if kind not in known:
            raise ValueError(f"Unknown schedule '{kind}'; choose one of {known}")
        self.kind, self.total, self.warmup, self.warmup_init = kind, max(total, 1), max(warmup, 0), warmup_init

    def __call__(self, step: int) -> float:
        """The multiplier, never negative and never ``-0.0`` (which a progress line shows as ``lr -0.00e+00``)."""
        value = self._value(step)
        return value if value > 0.0 else 0.0

    def _value(self, step: int) -> float:
        total, warm = self.total, self.warmup
        if self.kind == "constant":
            return 1.0
        if self.kind == "linear":  # HF get_linear_schedule_with_warmup
            if step < warm:
                return step / max(1, warm)
            return max(0.0, (total - step) / max(1, total - warm))
        if self.kind == "bert":  # pytorch_pretrained_bert warmup_linear on progress x
            x, w = step / total, warm / total
            if w > 0 and x < w:
                return x / w
            return (1.0 - x) / (1.0 - w) if w < 1 else 0.0  # == (x-1)/(w-1), but +0.0 (not -0.0) at x = 1
        if self.kind == "paddle":  # ERNIE-GEN: no renormalisation after warm-up (§0.3 ⚠)
            if step < warm:
                return step / max(1, warm)
            return max(0.0, 1.0 - step / total)
        # inverse_sqrt (fairseq): linear from warmup_init (a multiplier) to 1, then sqrt(warm/step)
        if step < warm:
            return self.warmup_init + (1.0 - self.warmup_init) * step / warm
        return math.sqrt(max(warm, 1) / max(step, 1))


def build_scheduler(
    optimizer: torch.optim.Optimizer, kind: str, total: int, warmup: int
) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, Schedule(kind, total, warmup))
