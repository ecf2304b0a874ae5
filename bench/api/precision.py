"""One precision and compile policy for every trainer and batch decoder.

Why a policy and not a flag: bf16 is 1.4-1.9x faster on CPUs with AMX / avx512_bf16 and on
Ampere+ GPUs, but on a CPU without native bf16 (AVX2 only) PyTorch emulates it and a training
step is about 13x *slower* (measured: MiniLM-L6, batch 32 x 80, 6.1 s fp32 vs 135 s bf16 on a
2-core AMD EPYC). :func:`resolve_precision` maps ``auto`` by the hardware: bf16 where it is native, fp32
elsewhere, with a one-line notice; decoding (``bench latency --precision auto``) uses that. *Training* resolves
``auto`` by measuring instead (:mod:`bench.api.speed_policy`, :mod:`systems.training.speed_probe`): native bf16 is
not always faster either (an Intel Xeon with avx512_bf16 and no AMX trained bf16 + compile at 0.56-0.73x of eager
fp32, issue #59). An explicit ``bf16`` is honoured (with a notice when emulated) so tests and ablations can force it.

Master weights and optimizer state stay fp32 (autocast only casts matmul inputs) and losses are
computed in fp32 by the loss functions, so a bf16 run differs from fp32 by rounding only.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
_LEGACY = {"no": "fp32", "bf16": "bf16", "fp16": "fp16"}  # accelerate's mixed_precision names


@dataclass(frozen=True)
class Precision:
    """What a run asked for, what it gets on this machine, and why (``notice`` is empty when equal)."""

    requested: str
    effective: str  # fp32 | bf16 | fp16
    notice: str = ""

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.effective)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU feature flags of ``/proc/cpuinfo`` (empty where there is none, e.g. macOS)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def native_bf16(device: str = "cpu") -> bool:
    """True where bf16 matrix work runs in hardware (AMX or avx512_bf16 on CPU; bf16 on the GPU)."""
    if device.startswith("cuda"):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    flags = cpu_flags()
    if "amx_bf16" in flags or "avx512_bf16" in flags:
        return True
    mkldnn = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(mkldnn()) if mkldnn is not None and not flags else False


def resolve_precision(requested: str, device: str = "cpu") -> Precision:
    """Map a budget's ``precision`` (or a legacy ``mixed_precision`` value) to what this machine runs."""
    req = _LEGACY.get(requested, requested)
    if req not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)} (got {requested!r})")
    cuda = device.startswith("cuda")
    if req == "auto":
        if native_bf16(device):
            return Precision(requested, "bf16")
        where = "this GPU" if cuda else f"this CPU ({torch.backends.cpu.get_cpu_capability()})"
        return Precision(requested, "fp32", f"precision auto: {where} has no native bf16, training in fp32")
    if req == "fp16" and not cuda:
        return Precision(requested, "fp32", "precision fp16 needs a GPU (grad scaler); running fp32 on CPU")
    if req == "bf16" and not native_bf16(device):
        return Precision(requested, "bf16", "precision bf16 is emulated on this machine and much slower than fp32")
    return Precision(requested, req)


def autocast(precision: Precision, device: str = "cpu") -> contextlib.AbstractContextManager[None]:
    """``torch.autocast`` for a resolved precision (a null context for fp32)."""
    dtype = precision.autocast_dtype
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cuda" if device.startswith("cuda") else "cpu", dtype=dtype)


def compile_units(model: nn.Module) -> list[nn.Module]:
    """The submodules worth compiling: those whose class sets ``COMPILE_UNIT = True`` (transformer
    blocks and output heads). Compiling blocks rather than a family's whole step works for every
    family's loss code (which calls model methods, not just ``forward``) and keeps graph breaks out."""
    return [m for m in model.modules() if getattr(type(m), "COMPILE_UNIT", False)]


@contextlib.contextmanager
def compiled(model: nn.Module, enabled: bool = True) -> Iterator[int]:
    """Compile the model's units for the duration (dynamic shapes: length buckets do not recompile)
    and restore their eager ``forward`` afterwards, so decoding (batch 1, KV caches) stays eager.
    Yields the number of compiled units."""
    units = compile_units(model) if enabled else []
    for m in units:
        m.forward = torch.compile(m.forward, dynamic=True)  # instance attribute shadows the method
    try:
        yield len(units)
    finally:
        for m in units:
            if "forward" in m.__dict__:
                del m.forward
