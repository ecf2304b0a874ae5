"""Where a number was measured: the hardware and software a run record stores next to its results.

Speedups only mean something on stated hardware, so every run record and every latency report
carries this dict. Keys in :data:`VOLATILE_KEYS` (clocks, load) are expected to move during a run;
the others identify the environment and must be equal before and after a measurement.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

VOLATILE_KEYS = frozenset({"timestamp", "loadavg", "cpu_mhz", "gpu_clocks_mhz", "gpu_temperature_c"})
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES")


def environment_fingerprint(include_torch: bool = True) -> dict[str, Any]:
    """Describe this machine and process; never raises because of a missing tool.

    ``include_torch=False`` skips importing torch (≈1 s) for callers that only need the host.
    """
    fp: dict[str, Any] = {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpu": cpu_model(),
        "cpu_logical_cores": os.cpu_count(),
        "cpu_affinity": _affinity(),
        "cpu_mhz": _cpu_mhz(),
        "cpu_governor": _read_first("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "loadavg": loadavg(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "numpy": _version("numpy"),
        "thread_env": {k: os.environ[k] for k in _THREAD_ENV if k in os.environ},
    }
    if include_torch and importlib.util.find_spec("torch") is not None:
        fp.update(_torch_info())
    else:
        fp["torch"] = None
    fp.update(_nvidia_smi())
    return fp


def identity_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Human-readable differences in the non-volatile keys (empty when the environment held)."""
    changes = []
    for key in sorted(set(before) | set(after)):
        if key in VOLATILE_KEYS:
            continue
        if before.get(key) != after.get(key):
            changes.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}")
    return changes


def device_label(fp: dict[str, Any], device: str) -> str:
    """Short name of the timing device for signatures: the GPU on cuda, else the CPU model."""
    if device == "cuda" and fp.get("gpu"):
        return str(fp["gpu"])
    return str(fp.get("cpu") or "unknown-cpu")


def cpu_model() -> str:
    """CPU model from /proc/cpuinfo (Linux), falling back to :func:`platform.processor`."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _affinity() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _cpu_mhz() -> float | None:
    khz = _read_first("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
    if khz and khz.isdigit():
        return int(khz) / 1000.0
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def loadavg() -> list[float] | None:
    """1/5/15-minute load average (None where the OS has none): wall times on a busy box read higher."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _read_first(path: str) -> str | None:
    try:
        return Path(path).read_text().strip() or None
    except OSError:
        return None


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    mod = sys.modules.get(module) or __import__(module)
    return str(getattr(mod, "__version__", "unknown"))


def _torch_info() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "torch_default_dtype": str(torch.get_default_dtype()).replace("torch.", ""),
        "torch_matmul_precision": torch.get_float32_matmul_precision(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # AVX2 | AVX512 | ...: bf16 speed differs
        "torch_deterministic": torch.are_deterministic_algorithms_enabled(),
        "torch_cuda": torch.version.cuda,
        "gpu": None,
        "gpu_count": 0,
    }
    if torch.cuda.is_available():
        info["gpu_count"] = torch.cuda.device_count()
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cudnn"] = torch.backends.cudnn.version()
        info["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    return info


def _nvidia_smi() -> dict[str, Any]:
    """Driver, clocks and temperature of GPU 0 when ``nvidia-smi`` exists (else nothing)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    fields = "driver_version,name,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,persistence_mode"
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"gpu_driver": None}
    parts = [p.strip() for p in out.split(",")]
    if len(parts) != 7:
        return {"gpu_driver": None, "nvidia_smi_raw": out}
    driver, name, sm, mem, max_sm, temp, persist = parts
    return {
        "gpu_driver": driver,
        "gpu_name_smi": name,
        "gpu_clocks_mhz": {"sm": _num(sm), "mem": _num(mem)},
        "gpu_max_sm_mhz": _num(max_sm),
        "gpu_temperature_c": _num(temp),
        "gpu_persistence_mode": persist,
    }


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
