"""The fixed workloads behind the canaries: a matrix product chain on the timing device, and a host loop.

Why two: on a GPU, batch-1 decoding is bound by kernel launches, i.e. by the host CPU and the
Python interpreter, as much as by the device. A busy device shows in the matmul chain; a busy host
(another process, a noisy neighbour) shows in the pure-Python loop. Each workload only knows how to
build a runnable of a given ``size``; how big that size is, and how it is timed, is decided in
:mod:`bench.latency.sizing` and :mod:`bench.latency.canary`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any, Protocol

Runnable = Callable[[], None]


class Workload(Protocol):
    """What the canary needs of a workload; tests pass fakes whose cost model is exact."""

    kind: str  # "device" | "host": which canary it feeds (and which one a verdict's reason names)
    backend: str  # e.g. "torch-cuda", "torch-cpu", "numpy-cpu", "python"
    granule: int  # sizes are multiples of this (matrix tiles like multiples of 32)

    def build(self, size: int) -> Runnable:
        """A runnable doing the work at ``size``; it returns only when the work is done (device synced)."""
        ...

    def settle(self) -> None:
        """Wait for queued work outside the timed window (a device sync; a no-op on the host)."""
        ...

    def describe(self, size: int) -> str:
        """The work at ``size``, in words, for records and reasons."""
        ...


class MatmulChain:
    """``chain`` fp32 products of a seeded ``size``×``size`` matrix on ``device`` (torch, else numpy on CPU).

    Large enough (see :mod:`bench.latency.sizing`) it is compute-bound, so its time moves with the
    device's clocks and with other work on the device, not with launch jitter.
    """

    kind = "device"
    granule = 32

    def __init__(self, device: str, chain: int = 4) -> None:
        self.device, self.chain = device, chain
        self._torch: Any = None
        if importlib.util.find_spec("torch") is not None:
            import torch

            self._torch = torch
        elif device != "cpu":
            raise RuntimeError(f"The {device} canary needs torch; only the CPU canary can run on numpy.")
        self.backend = f"torch-{device}" if self._torch is not None else "numpy-cpu"

    def build(self, size: int) -> Runnable:
        chain, scale = self.chain, 1.0 / size
        if self._torch is None:
            import numpy as np

            a_np = np.random.default_rng(1234).standard_normal((size, size)).astype(np.float32)

            def run_numpy() -> None:
                x = a_np
                for _ in range(chain):
                    x = (x @ a_np) * scale

            return run_numpy
        torch = self._torch
        gen = torch.Generator().manual_seed(1234)
        a = torch.randn(size, size, generator=gen).to(self.device)
        settle, device = self.settle, self.device

        def run_torch() -> None:
            # fp32 whatever precision the systems decode in: the workload must not change with --precision
            with torch.autocast(device_type=device, enabled=False):
                x = a
                for _ in range(chain):
                    x = (x @ a) * scale
            settle()

        return run_torch

    def settle(self) -> None:
        if self._torch is not None and self.device == "cuda":
            self._torch.cuda.synchronize()

    def describe(self, size: int) -> str:
        return f"{self.chain} x {size}x{size} fp32 matmul chain ({self.backend})"


class PythonLoop:
    """``size`` iterations of integer arithmetic in the interpreter: host work only, no library call.

    Launch-bound decoding spends its time in the interpreter and the framework's dispatcher; this
    loop slows down exactly when they would (CPU contention, frequency drops on the host).
    """

    kind = "host"
    backend = "python"
    granule = 256

    def build(self, size: int) -> Runnable:
        def run() -> None:
            acc = 0
            for i in range(size):
                acc = (acc + i * i) % 1_000_003

        return run

    def settle(self) -> None:
        return None

    def describe(self, size: int) -> str:
        return f"{size}-iteration Python loop (host)"


__all__ = ["MatmulChain", "PythonLoop", "Runnable", "Workload"]
