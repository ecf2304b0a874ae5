"""Peak memory of one system's decode, measured so that one system's peak cannot hide another's.

GPU: ``torch.cuda.reset_peak_memory_stats`` right before a system's pass and ``max_memory_allocated``
right after: exact, per system, no sampling. CPU: a sampler thread reads this process's resident set
(``/proc/self/statm``) every millisecond during the pass, after ``gc.collect`` and glibc's ``malloc_trim``
returned the previous system's freed heap to the OS; the figure is the peak *above* the resident set read
just before, i.e. what this system's decode itself added. Why a sampler and not a process per system:
the timed systems are built (paper-size models, several GB) in this process; a forked child inherits
every model in its resident set and torch's thread pools do not survive ``fork`` reliably, and a fresh
process per system would build each model again. The pass runs outside the clock: a sampler on the clock
would take a core from the timed decode on a small machine.
"""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class PeakMemory:
    """Peak of one system's decode pass: ``peak_bytes`` above ``base_bytes`` (CPU: resident set; GPU: allocated)."""

    device: str
    method: str
    base_bytes: int
    peak_bytes: int
    samples: int

    @property
    def added_bytes(self) -> int:
        return max(0, self.peak_bytes - self.base_bytes)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "added_bytes": self.added_bytes}


def rss_bytes(statm: Path = Path("/proc/self/statm")) -> int:
    """This process's resident set in bytes (Linux ``statm``: size resident shared ..., in pages)."""
    return int(statm.read_text().split()[1]) * PAGE


def trim_heap() -> None:
    """Collect garbage and hand freed heap back to the OS (glibc only; a no-op elsewhere)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def cpu_peak(run: Callable[[], object], read: Callable[[], int] = rss_bytes, interval_s: float = 0.001) -> PeakMemory:
    """Run ``run`` once with a sampler thread reading ``read`` every ``interval_s``; see the module docstring."""
    trim_heap()
    base = read()
    peak, count, stop = [base], [0], threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], read())
            count[0] += 1
            time.sleep(interval_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        run()
    finally:
        stop.set()
        thread.join()
    peak[0] = max(peak[0], read())
    return PeakMemory("cpu", "rss sampler (1 ms) after malloc_trim, above the rss before the pass", base, peak[0],
                      count[0] + 1)


def cuda_peak(run: Callable[[], object], device: str = "cuda") -> PeakMemory:
    """``max_memory_allocated`` over ``run``, its peak counter reset first (this system's pass only)."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = int(torch.cuda.memory_allocated(device))
    run()
    torch.cuda.synchronize()
    return PeakMemory("cuda", "torch.cuda.max_memory_allocated, reset per system", base,
                      int(torch.cuda.max_memory_allocated(device)), 1)


def peak_memory(run: Callable[[], object], device: str) -> PeakMemory:
    return cuda_peak(run) if device == "cuda" else cpu_peak(run)


def model_size(system: object, workdir: Path | None) -> dict[str, object]:
    """Parameters × bytes of the modules the system decodes with, and its checkpoint files on disk (weights
    only: ``*.pt``, ``*.bin``, ``*.safetensors``, ``*.pdparams`` under its workdir)."""
    from bench.api.system import System

    assert isinstance(system, System)
    own = system.weights_footprint()
    params = sum(int(p.numel()) for m in system.models() for p in m.parameters())
    nbytes = sum(int(p.numel()) * int(p.element_size()) for m in system.models() for p in m.parameters())
    if own is not None:  # weights outside torch: the system counts them and says how
        params, nbytes = int(own["parameters"]), int(own["parameter_bytes"])
    files = [] if workdir is None or not workdir.is_dir() else [
        p for p in workdir.rglob("*") if p.is_file() and p.suffix in (".pt", ".bin", ".safetensors", ".pdparams")
    ]
    none = "no checkpoint on disk (weights built in memory)"
    disk: int | str = sum(p.stat().st_size for p in files) if files else none
    note = {"parameter_bytes_note": str(own["parameter_bytes_note"])} if own and own.get("parameter_bytes_note") else {}
    return {"parameters": params, "parameter_bytes": nbytes, "checkpoint_bytes": disk, **note}


__all__ = ["PeakMemory", "cpu_peak", "cuda_peak", "model_size", "peak_memory", "rss_bytes", "trim_heap"]
