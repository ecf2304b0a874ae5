"""A second device on a CPU-only machine, so CI catches a tensor left on the wrong device.

Why not the ``meta`` device: decoding needs real numbers (``argmax``, lengths, ``.tolist()``), and
loading a checkpoint into a meta model is a silent no-op. Here a model placed on :data:`DEVICE`
(``cpu:1``) holds :class:`OnDevice` tensors: wrappers that report ``cpu:1`` while computing on their
real CPU data. Every op that mixes them with an ordinary host tensor of one or more dimensions is
recorded as a violation — the op that raises "Expected all tensors to be on the same device" on a
GPU. As on CUDA, 0-dim host tensors (scalars) may mix, and ``copy_`` may cross devices.

Under :class:`DeviceCheck`:
- ``tensor.to(DEVICE)``, ``.cuda()``, ``module.to(DEVICE)`` and factory calls with
  ``device=DEVICE`` (``torch.tensor``, ``arange``, ``zeros``...) produce :class:`OnDevice` tensors;
- ``.cpu()`` / ``.to("cpu")`` give the plain host tensor back;
- ``.numpy()`` of a device tensor is a violation too (it fails on a GPU).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("cpu", 1)
ROOT = Path(__file__).resolve().parents[1]
#: ops that may take a host tensor beside a device one on CUDA too
CROSS_DEVICE_OK = {torch.ops.aten.copy_.default, torch.ops.aten._to_copy.default}
#: Tensor methods that must see the real storage (safetensors, pickling)
#: advanced indexing takes host index tensors on CUDA too (``x[torch.tensor(ids)]``, ``x[idx] = v``)
HOST_INDEX_OK = {torch.ops.aten.index.Tensor, torch.ops.aten.index_put_.default, torch.ops.aten.index_put.default,
                 torch.ops.aten._index_put_impl_.default}
#: composite ops whose CPU decomposition builds tensors on ``query.device`` in C++, where a CPU-backed
#: device cannot be told apart from the host: their arguments are checked, their insides are not
OPAQUE_COMPOSITES = ("scaled_dot_product_attention",)
STORAGE_METHODS = ("tolist", "untyped_storage", "data_ptr", "_typed_storage", "storage", "__reduce_ex__")


@dataclass
class Violation:
    op: str
    host_shapes: list[tuple[int, ...]]
    where: str  # the innermost frame in the project (systems/, bench/), else the innermost frame

    def __str__(self) -> str:
        return f"{self.op} mixed a host tensor {self.host_shapes} with {DEVICE} tensors at {self.where}"


@dataclass
class Record:
    violations: list[Violation] = field(default_factory=list)
    device_ops: int = 0  # ops that ran on the check's device: proof that the check saw the model

    def add(self, op: str, host: list[tuple[int, ...]]) -> None:
        self.violations.append(Violation(op, host, _project_frame()))


_RECORD: Record | None = None


def _project_frame() -> str:
    """The innermost three frames of the project's own code (not this module), innermost first."""
    frames = traceback.extract_stack()[:-3]
    ours = [
        f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}"
        for f in reversed(frames)
        if ROOT in Path(f.filename).parents and Path(f.filename).name != "device_check.py"
        and "site-packages" not in Path(f.filename).parts and ".venv" not in Path(f.filename).parts
    ]
    return " <- ".join(ours[:3]) or f"{frames[-1].filename}:{frames[-1].lineno}"


def _on_device(dev: Any) -> bool:
    if dev is None or isinstance(dev, bool | int | torch.dtype):
        return False
    try:
        return torch.device(dev) == DEVICE
    except (RuntimeError, TypeError):
        return False


class OnDevice(torch.Tensor):
    """A tensor on :data:`DEVICE`: reports that device, computes on its CPU ``elem``."""

    elem: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> OnDevice:
        out = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=DEVICE, requires_grad=elem.requires_grad,
        )
        out.elem = elem
        return out

    def __repr__(self) -> str:  # type: ignore[override]
        return f"OnDevice({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        host: list[tuple[int, ...]] = []

        def unwrap(x: Any) -> Any:
            if isinstance(x, OnDevice):
                return x.elem
            if isinstance(x, torch.Tensor) and x.dim() > 0:
                host.append(tuple(x.shape))
            return x

        if func in HOST_INDEX_OK:  # x[host_idx] on a GPU tensor is allowed: check all but the indices
            plain_args = (unwrap(args[0]), [x.elem if isinstance(x, OnDevice) else x for x in args[1]],
                          *tree_map(unwrap, tuple(args[2:])))
            plain_kwargs = tree_map(unwrap, kwargs)
        else:
            plain_args, plain_kwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
        if _RECORD is not None:
            _RECORD.device_ops += 1
            if host and func not in CROSS_DEVICE_OK:
                _RECORD.add(str(func), host)
        to_host = False
        if "device" in plain_kwargs and plain_kwargs["device"] is not None:
            if _on_device(plain_kwargs["device"]):
                plain_kwargs["device"] = torch.device("cpu")
            elif torch.device(plain_kwargs["device"]).type == "cpu":
                to_host = True
        out = func(*plain_args, **plain_kwargs)
        if to_host:
            return out
        return tree_map(lambda t: OnDevice(t) if type(t) is torch.Tensor else t, out)


def _wrap(t: torch.Tensor) -> OnDevice:
    return t if isinstance(t, OnDevice) else OnDevice(t)


def _plain(t: torch.Tensor) -> torch.Tensor:
    return t.elem if isinstance(t, OnDevice) else t


class DeviceCheck(TorchFunctionMode):
    """Moves to :data:`DEVICE` make :class:`OnDevice` tensors; mixed ops are recorded in ``record``."""

    def __init__(self) -> None:
        super().__init__()
        self.record = Record()

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        first = args[0] if args else None
        if isinstance(first, torch.Tensor) and name in ("to", "cuda", "cpu"):
            return self._move(name, first, args[1:], kwargs)
        if isinstance(first, OnDevice) and name in ("new_tensor", "new") and kwargs.get("device") is None:
            return _wrap(getattr(first.elem, name)(*args[1:], **kwargs))  # a new tensor on self's device
        if isinstance(first, OnDevice) and name in STORAGE_METHODS:
            return getattr(first.elem, name)(*args[1:], **kwargs)
        if isinstance(first, OnDevice) and name == "numpy":
            self.record.add("Tensor.numpy", [])
            return first.elem.numpy()
        if name in OPAQUE_COMPOSITES:
            return self._opaque(name, func, args, kwargs)
        if _on_device(kwargs.get("device")):  # a factory call: torch.tensor(..., device=DEVICE), arange...
            kwargs["device"] = torch.device("cpu")
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            return tree_map(lambda t: _wrap(t) if isinstance(t, torch.Tensor) else t, out)
        return func(*args, **kwargs)

    def _opaque(self, name: str, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """Check the call's own arguments, then run it without checking what its C++ decomposition
        builds inside (on a GPU those tensors are made on the query's device)."""
        global _RECORD
        leaves = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        if any(isinstance(x, OnDevice) for x in leaves):
            host = [tuple(x.shape) for x in leaves if not isinstance(x, OnDevice) and x.dim() > 0]
            if host:
                self.record.add(name, host)
        inner, _RECORD = _RECORD, None
        try:
            return func(*args, **kwargs)
        finally:
            _RECORD = inner

    def _move(self, name: str, t: torch.Tensor, rest: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        dtype = None
        if name == "cuda":
            target: Any = DEVICE
        elif name == "cpu":
            target = torch.device("cpu")
        elif rest and isinstance(rest[0], torch.Tensor):
            target, dtype = rest[0].device, rest[0].dtype
        else:
            copy = kwargs.pop("copy", False)
            target, dtype, _non_blocking, _fmt = torch._C._nn._parse_to(*rest, **kwargs)
            if copy:
                t = _wrap(_plain(t).clone()) if isinstance(t, OnDevice) else t.clone()
        base = _plain(t)
        moved = base if dtype is None or dtype == base.dtype else base.to(dtype)
        if target is None:
            target = t.device
        if _on_device(target):
            return t if isinstance(t, OnDevice) and moved is base else OnDevice(moved)
        if torch.device(target).type == "cpu":
            return moved
        raise RuntimeError(f"device check: a move to {target} (only cpu and {DEVICE} exist here)")


class _NoGradInference(torch.no_grad):
    """``torch.inference_mode`` during the check: wrapper tensors cannot be inference tensors."""

    def __init__(self, mode: bool = True) -> None:
        super().__init__()


@contextmanager
def device_check() -> Iterator[Record]:
    """Run the body with :data:`DEVICE` available; the yielded record lists what mixed devices.

    Module conversions overwrite parameters (instead of assigning ``.data``) so that a placed model's
    parameters really become :class:`OnDevice` tensors; ``torch.inference_mode()`` is ``no_grad``.
    """
    global _RECORD
    overwrite = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    inference_mode = torch.inference_mode
    torch.inference_mode = _NoGradInference  # type: ignore[misc,assignment]
    mode = DeviceCheck()
    _RECORD = mode.record
    try:
        with mode:
            yield mode.record
    finally:
        _RECORD = None
        torch.inference_mode = inference_mode  # type: ignore[misc]
        torch.__future__.set_overwrite_module_params_on_conversion(overwrite)
