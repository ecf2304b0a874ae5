"""The decode compute types (``--set compute_type=...``): how a trained fp32 model is run when it decodes.

Why: the AR baseline a practitioner deploys runs CTranslate2 at int8 (``fairseq_transformer_ct2``); a NAR system
set against it in eager fp32 would be an unoptimized side against an optimized one (issue #60, Helcl et al. 2022).
Every NAR and semi-NAR family takes the same setting, with the same name as CTranslate2's
(:data:`systems.presets.COMPUTE_TYPES`):

- ``float32`` (default): the model as trained, untouched (the behaviour before the setting existed, bit for bit).
- ``int8`` (CPU): every ``nn.Linear`` becomes an :class:`Int8Linear`: weights int8 per output channel, activations
  quantized dynamically **per token** (each row of the input gets its own scale), int32 accumulation
  (``torch._int_mm``), as CTranslate2's int8 does. Per token, not per tensor: PyTorch's
  ``torch.ao.quantization.quantize_dynamic`` scales the activations by the whole input tensor's range, so a row's
  output depends on the other rows of its batch and on their padding, and batched decoding would no longer equal
  batch-1 decoding (tests/test_batched_single.py; docs/systems.md "Optimized decoding" has the measurements).
- ``float16`` / ``bfloat16`` (GPU): each decode call runs under ``torch.autocast`` (weights stay fp32, matmuls in
  half precision). Built and unit-tested on a CPU only: not yet run on a GPU.

Applied after the model is trained or loaded and placed (:meth:`DecodeCompute.prepare`: the family's ``place`` and
each decode call prepare it, idempotently), to the in-memory model only: training never sees it and no
checkpoint is written from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from systems.presets import COMPUTE_TYPES, check_compute_type

#: the device kinds each compute type runs on (int8's kernels are CPU ones; half precision is for a GPU)
RUNS_ON = {"float32": ("cpu", "cuda"), "int8": ("cpu",), "float16": ("cuda",), "bfloat16": ("cuda",)}


def check_device(compute_type: str, device: str, label: str) -> None:
    """Refuse, in one line, a compute type the device cannot run (int8 on a GPU, half precision on a CPU)."""
    kind = str(device).partition(":")[0]
    if kind not in RUNS_ON[compute_type]:
        fits = [c for c in COMPUTE_TYPES if kind in RUNS_ON[c]]
        raise ValueError(f"{label}: compute_type={compute_type} runs on {' or '.join(RUNS_ON[compute_type])}, not on "
                         f"{device}; there choose {' or '.join(fits)} (--set compute_type=...)")


class Int8Linear(nn.Module):
    """``y = x Wᵀ + b`` with W int8 (symmetric, one scale per output channel) and x quantized when called,
    symmetric int8 with one scale per row (token), the products summed in int32 (``torch._int_mm``).

    Each output row depends on its own input row only, exactly (integer sums are exact and the scaling is
    elementwise), so a batch decodes as its rows do one by one."""

    weight_int8: Tensor  # [out, in] int8
    weight_scale: Tensor  # [out] float32
    bias: Tensor | None

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        weight = weight.detach().float()
        self.in_features, self.out_features = int(weight.shape[1]), int(weight.shape[0])
        scale = weight.abs().amax(dim=1).clamp_min(1e-12) / 127.0
        self.register_buffer("weight_int8", torch.round(weight / scale[:, None]).clamp_(-127, 127).to(torch.int8))
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", None if bias is None else bias.detach().float().clone())

    @classmethod
    def from_float(cls, linear: nn.Linear) -> Int8Linear:
        return cls(linear.weight, linear.bias).to(linear.weight.device)

    def forward(self, x: Tensor) -> Tensor:
        rows = x.reshape(-1, self.in_features)
        amax = rows.abs().amax(dim=1, keepdim=True).clamp_min_(1e-12) if rows.shape[0] else rows[:, :1]
        quantized = (rows * (127.0 / amax)).round_().to(torch.int8)
        out = torch._int_mm(quantized, self.weight_int8.t()).float()
        out.mul_(amax / 127.0).mul_(self.weight_scale)
        if self.bias is not None:
            out.add_(self.bias)
        return out.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 (per-token activations)"


def quantize_linears(model: nn.Module) -> int:
    """Replace every ``nn.Linear`` of ``model`` in place by an :class:`Int8Linear`; returns how many were replaced.
    Exactly ``nn.Linear``, not subclasses (a subclass may compute something else); an ``Int8Linear`` stays."""
    count = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                setattr(parent, name, Int8Linear.from_float(child))
                count += 1
    return count


def int8_footprint(models: Any) -> dict[str, Any] | None:
    """``weights_footprint()`` of models with :class:`Int8Linear` layers, whose int8 weights are buffers that a
    count of ``parameters()`` would miss: every parameter plus each int8 layer's weight, scales and bias, at the
    width each is stored in. None where no layer is int8 (the harness counts the parameters itself)."""
    params = nbytes = 0
    quantized = False
    for model in models:
        for p in model.parameters():
            params += int(p.numel())
            nbytes += int(p.numel()) * int(p.element_size())
        for m in model.modules():
            if isinstance(m, Int8Linear):
                quantized = True
                for t in (m.weight_int8, m.bias):
                    if t is not None:
                        params += int(t.numel())
                        nbytes += int(t.numel()) * int(t.element_size())
                nbytes += int(m.weight_scale.numel()) * int(m.weight_scale.element_size())
    if not quantized:
        return None
    return {"parameters": params, "parameter_bytes": nbytes,
            "parameter_bytes_note": "compute_type=int8: Linear weights 1 byte each (+ one fp32 scale per output "
                                    "channel), biases, embeddings and norms 4 bytes"}


class DecodeCompute:
    """One system's compute type: :meth:`prepare` its model once it is trained/loaded and placed (idempotent),
    :meth:`context` around each decode call."""

    def __init__(self, compute_type: str, label: str, before_int8: Callable[[Any], None] | None = None) -> None:
        self.compute_type = check_compute_type(compute_type, label)
        self.label = label
        #: what a family does to its model before the Linear layers are replaced (fold a head's separate bias
        #: into its Linear, turn off a fused attention path that reads the Linear weights itself)
        self.before_int8 = before_int8
        self._prepared: list[Any] = []  # the models already quantized (by identity; a list keeps them alive)
        self.quantized_linears = 0

    def check(self, device: str) -> None:
        check_device(self.compute_type, device, self.label)

    def prepare(self, model: Any, device: str) -> Any:
        """``model`` ready to decode at this compute type on ``device`` (int8: its Linear layers replaced, once)."""
        self.check(device)
        if self.compute_type != "int8" or model is None or any(m is model for m in self._prepared):
            return model
        if self.before_int8 is not None:
            self.before_int8(model)
        count = quantize_linears(model)
        if count == 0:
            raise ValueError(f"{self.label}: compute_type=int8 found no nn.Linear layer to quantize in its model")
        self.quantized_linears = count
        self._prepared.append(model)
        return model

    def context(self, device: str) -> contextlib.AbstractContextManager[Any]:
        """Around a decode call: ``torch.autocast`` for float16/bfloat16 (on the GPU), else nothing."""
        if self.compute_type not in ("float16", "bfloat16"):
            return contextlib.nullcontext()
        self.check(device)
        dtype = torch.float16 if self.compute_type == "float16" else torch.bfloat16
        return torch.autocast(str(device).partition(":")[0], dtype=dtype)
