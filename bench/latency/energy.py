"""Energy of a decode where the machine lets us read it: RAPL on CPUs, NVML's energy counter on GPUs.

Each counter says what it covers, since the figures are not comparable across them: RAPL's package
domains cover the CPU sockets (cores, caches, uncore; not DRAM, not the rest of the board), NVML's
total-energy counter the whole GPU board (Volta and newer; not the host). A window of at least
``min_window_s`` is timed (the batch list repeated until reached: both counters update every few ms and a
short window is mostly quantisation), and the idle power measured just before is subtracted, so J/sentence
is the energy the decode added. Anything that cannot be read gives ``"unreadable: <reason>"``, never a 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

POWERCAP = Path("/sys/class/powercap")


class EnergyUnreadable(RuntimeError):
    """The counter cannot be read on this machine; the message is the reason recorded."""


class Counter(Protocol):
    covers: str

    def read(self) -> list[int]:
        """Raw cumulative readings, one per domain, in the counter's unit."""
        ...

    def joules(self, before: list[int], after: list[int]) -> float:
        """Energy between two readings, wraparound handled."""
        ...


class Rapl:
    """The package domains under ``root`` (``intel-rapl:N``, in microjoules; each wraps at ``max_energy_range_uj``)."""

    covers = "CPU package(s) (RAPL package domains: cores, caches, uncore; not DRAM or the rest of the board)"

    def __init__(self, root: Path = POWERCAP) -> None:
        domains = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1) if root.is_dir() else []
        if not domains:
            raise EnergyUnreadable(f"no RAPL package domain under {root} (not an Intel/AMD RAPL machine, or a VM)")
        self.files = [d / "energy_uj" for d in domains]
        try:
            self.ranges = [int((d / "max_energy_range_uj").read_text()) for d in domains]
            self.read()
        except (OSError, ValueError) as err:  # energy_uj is root-only on kernels since 5.10 (CVE-2020-8694)
            raise EnergyUnreadable(f"{type(err).__name__} reading {domains[0]}: {err}") from err

    def read(self) -> list[int]:
        return [int(f.read_text()) for f in self.files]

    def joules(self, before: list[int], after: list[int]) -> float:
        total = 0
        for b, a, top in zip(before, after, self.ranges, strict=True):
            total += a - b if a >= b else a + top + 1 - b  # the counter wrapped once
        return total / 1e6


class Nvml:
    """NVML's total-energy counter of one GPU (millijoules since the driver loaded; 64-bit, does not wrap)."""

    covers = "GPU board (NVML total energy; not the host CPU or memory)"

    def __init__(self, index: int = 0, nvml: Any = None) -> None:
        try:
            if nvml is None:
                import pynvml as nvml  # type: ignore[no-redef]
            nvml.nvmlInit()
            self.nvml, self.handle = nvml, nvml.nvmlDeviceGetHandleByIndex(index)
            self.read()
        except Exception as err:  # ImportError, NVMLError_NotSupported (pre-Volta), no driver
            raise EnergyUnreadable(f"{type(err).__name__}: {err}".rstrip(": ")) from err

    def read(self) -> list[int]:
        return [int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))]

    def joules(self, before: list[int], after: list[int]) -> float:
        return (after[0] - before[0]) / 1e3


def open_counter(device: str, root: Path = POWERCAP, nvml: Any = None) -> Counter:
    """The counter for ``device`` ("cpu" | "cuda[:N]"); raises :class:`EnergyUnreadable` with the reason."""
    if device.startswith("cuda"):
        return Nvml(int(device.split(":")[1]) if ":" in device else 0, nvml)
    return Rapl(root)


def measure_energy(
    run: Callable[[], int], counter: Counter | str, min_window_s: float = 10.0, idle_s: float = 2.0,
    clock: Callable[[], float] = time.perf_counter, sleep: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Idle power over ``idle_s``, then ``run`` (returns the sentences it decoded) repeated until the window
    reaches ``min_window_s``; J/sentence after subtracting the idle power. ``counter`` as a string is the
    reason it could not be opened, recorded as ``"unreadable: <reason>"``."""
    if isinstance(counter, str):
        return {"status": f"unreadable: {counter}"}
    rest = sleep or (lambda: time.sleep(idle_s))
    t0, e0 = clock(), counter.read()
    rest()
    t1, e1 = clock(), counter.read()
    idle_w = counter.joules(e0, e1) / (t1 - t0) if t1 > t0 else 0.0
    sentences, repeats = 0, 0
    while True:
        sentences += run()
        repeats += 1
        if clock() - t1 >= min_window_s:
            break
    t2, e2 = clock(), counter.read()
    window, gross = t2 - t1, counter.joules(e1, e2)
    net = gross - idle_w * window
    return {
        "status": "measured", "covers": counter.covers, "window_s": window, "repeats": repeats, "sentences": sentences,
        "idle_w": idle_w, "joules": gross, "joules_above_idle": net,
        "j_per_sentence": net / sentences if sentences else None,
    }


__all__ = ["Counter", "EnergyUnreadable", "Nvml", "Rapl", "measure_energy", "open_counter"]
