"""The meter's clock: ``perf_counter_ns`` bracketed by device synchronisation.

torch is imported only when a GPU sync is requested, so timing a pure-Python system (or importing
:mod:`bench`) never pays for it. The canaries that tell whether the machine held still while the
clock ran are in :mod:`bench.latency.canary`.
"""

from __future__ import annotations

import importlib.util
from typing import Any


def resolve_device(device: str | None) -> str:
    """The meter's kind of device, ``"cuda"`` or ``"cpu"``, for ``device`` (None: auto) under the
    harness's one policy (:func:`bench.device.resolve_device`); the harness makes a concrete
    ``cuda:N`` the current GPU (:func:`bench.device.activate`), so a bare synchronize waits on it."""
    if device is None and not _cuda_available():
        return "cpu"  # auto without torch or a GPU: pure-Python systems never import torch here
    from bench.device import resolve_device as resolve

    return "cuda" if resolve(device).startswith("cuda") else "cpu"


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


class Synchronizer:
    """Waits for queued device work so the host clock brackets everything an item launched.

    On GPU it also records CUDA events around each item: event time is measured on the device and
    serves as a cross-check that the host-side window really contains the item's kernels.
    """

    def __init__(self, device: str) -> None:
        self.device = device
        self._torch: Any = None
        if device == "cuda":
            import torch

            self._torch = torch

    @property
    def name(self) -> str:
        return "cuda" if self.device == "cuda" else "none"

    def sync(self) -> None:
        if self._torch is not None:
            self._torch.cuda.synchronize()

    def events(self) -> tuple[Any, Any] | None:
        """A fresh (start, end) CUDA event pair, or None on CPU."""
        if self._torch is None:
            return None
        ev = self._torch.cuda.Event
        return ev(enable_timing=True), ev(enable_timing=True)
