"""The meter's clock: ``perf_counter_ns`` bracketed by device synchronisation, plus the canary.

torch is imported only when a GPU sync is requested or the canary runs with torch, so timing a
pure-Python system (or importing :mod:`bench`) never pays for it.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def resolve_device(device: str | None) -> str:
    """``"cuda"`` when asked for or (auto) when torch sees a GPU; otherwise ``"cpu"``."""
    if device in ("cpu", "cuda"):
        if device == "cuda" and not _cuda_available():
            raise RuntimeError(
                "Latency device 'cuda' was requested but torch.cuda.is_available() is False. "
                "Run on a GPU machine or pass device='cpu'."
            )
        return device
    if device is not None:
        raise ValueError(f"Unknown latency device {device!r}; use 'cpu', 'cuda' or None (auto).")
    return "cuda" if _cuda_available() else "cpu"


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


@dataclass(frozen=True)
class CanaryResult:
    """Median time of the fixed workload in one round; drift across rounds exposes contention."""

    round_index: int
    median_ms: float


class Canary:
    """A fixed matrix product chain timed once per round.

    Its cost never changes, so if its median moves between rounds something else is competing for
    the machine (another job, frequency scaling) and the round's numbers are suspect.
    """

    def __init__(self, device: str, size: int = 128, chain: int = 4, repeats: int = 5) -> None:
        self.device, self.size, self.chain, self.repeats = device, size, chain, repeats
        self._run: Callable[[], None] | None = None
        self.backend = ""

    def _build(self) -> Callable[[], None]:
        if importlib.util.find_spec("torch") is not None:
            import torch

            gen = torch.Generator().manual_seed(1234)
            a = torch.randn(self.size, self.size, generator=gen).to(self.device)
            sync = torch.cuda.synchronize if self.device == "cuda" else (lambda: None)
            self.backend = f"torch-{self.device}"

            def run_torch() -> None:
                x = a
                for _ in range(self.chain):
                    x = (x @ a) * (1.0 / self.size)
                sync()

            return run_torch
        import numpy as np

        a_np = np.random.default_rng(1234).standard_normal((self.size, self.size)).astype(np.float32)
        self.backend = "numpy-cpu"

        def run_numpy() -> None:
            x = a_np
            for _ in range(self.chain):
                x = (x @ a_np) * (1.0 / self.size)

        return run_numpy

    def measure(self, round_index: int) -> CanaryResult:
        if self._run is None:
            self._run = self._build()
            self._run()  # first call allocates / loads kernels; never count it
        times = []
        for _ in range(self.repeats):
            t0 = time.perf_counter_ns()
            self._run()
            times.append(time.perf_counter_ns() - t0)
        times.sort()
        return CanaryResult(round_index, times[len(times) // 2] / 1e6)


def canary_drift(results: list[CanaryResult]) -> float:
    """How much slower than its fastest round the canary ran in its slow rounds.

    ``(q90 - min) / min`` over the per-round medians: with few rounds q90 is close to the max, so
    any disturbed round counts; in a long run one stray blip among many rounds does not condemn
    the whole measurement, but contention lasting over a tenth of the rounds does. 0 for < 2 rounds.
    """
    if len(results) < 2:
        return 0.0
    import numpy as np

    values = np.array([r.median_ms for r in results])
    low = float(values.min())
    return (float(np.percentile(values, 90)) - low) / low
