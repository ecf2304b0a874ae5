"""The meter's clock: ``perf_counter_ns`` bracketed by device synchronisation.

torch is imported only when a GPU sync is requested, so timing a pure-Python system (or importing
:mod:`bench`) never pays for it. The canaries that tell whether the machine held still while the
clock ran are in :mod:`bench.latency.canary`.
"""

from __future__ import annotations

from typing import Any


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
