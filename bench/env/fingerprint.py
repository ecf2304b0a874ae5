"""Where a number was measured: the hardware and software a run record stores next to its results.

Speedups only mean something on stated hardware, so every run record and every latency report
carries this dict. Keys in :data:`VOLATILE_KEYS` (clocks, load) are expected to move during a run;
the others identify the environment and must be equal before and after a measurement.

Where a GPU is visible the dict also holds ``gpu_state`` (:func:`gpu_state`): name, driver, SM and
memory clocks, temperature, read through NVML (``nvidia-ml-py``, the ``gpu`` extra, imported only
here and only then), else ``nvidia-smi``; when neither can read it the state says why, and nothing raises.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

VOLATILE_KEYS = frozenset({"timestamp", "loadavg", "cpu_mhz", "gpu_clocks_mhz", "gpu_temperature_c", "gpu_state"})
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
    smi = _nvidia_smi()
    fp.update(smi)
    if fp.get("gpu") or smi:
        state = gpu_state(smi=lambda: smi)
        fp["gpu_state"] = state
        if state.get("driver") and not fp.get("gpu_driver"):
            fp["gpu_driver"] = state["driver"]
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


# NVML's clock-event (throttle) reason bits, as in nvml.h: why the SM clock is below its maximum.
_CLOCK_EVENTS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}


def gpu_state(
    loader: Callable[[], tuple[Any, str]] | None = None,
    smi: Callable[[], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The timing GPU's name, driver, clocks (MHz) and temperature now; never raises.

    ``{"source": "nvml" | "nvidia-smi", "name", "driver", "sm_mhz", "mem_mhz", ...}``, with
    ``"unreadable": {field: reason}`` for fields the driver would not give, or
    ``{"source": "unreadable", "reason": ...}`` when nothing could be read. Clocks and temperature
    are why two GPU timings differ on the same card, so a latency record keeps them before and after.
    ``loader`` (returns the NVML module or None and why) and ``smi`` are for tests.
    """
    nvml, why = (loader or _import_nvml)()
    if nvml is not None:
        return _nvml_state(nvml)
    info = (smi or _nvidia_smi)()
    if info.get("gpu_driver"):
        clocks = info.get("gpu_clocks_mhz") or {}
        return {
            "source": "nvidia-smi", "index": 0, "name": info.get("gpu_name_smi"), "driver": info["gpu_driver"],
            "sm_mhz": clocks.get("sm"), "mem_mhz": clocks.get("mem"), "max_sm_mhz": info.get("gpu_max_sm_mhz"),
            "temperature_c": info.get("gpu_temperature_c"),
        }
    return {"source": "unreadable", "reason": f"{why}, and nvidia-smi gave nothing (not on PATH or it failed)"}


def describe_gpu_state(state: dict[str, Any], with_name: bool = True) -> str:
    """``NVIDIA H200, driver 580.65, SM 1980 MHz, mem 3201 MHz, 34 °C`` (or why it is unreadable)."""
    if state.get("source") == "unreadable":
        return f"state unreadable ({state.get('reason')})"
    parts = [str(state.get("name") or "GPU")] if with_name else []
    parts.append(f"driver {state.get('driver') or '?'}")
    for key, fmt in (("sm_mhz", "SM {:g} MHz"), ("mem_mhz", "mem {:g} MHz"), ("temperature_c", "{:g} °C")):
        if isinstance(state.get(key), int | float):
            parts.append(fmt.format(state[key]))
    events = [e for e in state.get("clock_event_reasons") or [] if e != "gpu_idle"]
    if events:
        parts.append("clocks held down by " + "/".join(events))
    return ", ".join(parts)


def _import_nvml() -> tuple[Any, str]:
    if importlib.util.find_spec("pynvml") is None:
        return None, "nvidia-ml-py is not installed (pip install -e '.[gpu]')"
    try:
        import pynvml
    except Exception as exc:  # a broken install must not stop a measurement
        return None, f"pynvml failed to import: {exc}"
    return pynvml, ""


def _visible_index() -> int | str:
    """NVML numbers every GPU on the machine; CUDA_VISIBLE_DEVICES says which one torch calls cuda:0."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    return int(first) if first.isdigit() else first


def _nvml_state(nv: Any) -> dict[str, Any]:
    try:
        nv.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return {"source": "unreadable", "reason": f"NVML did not start: {exc or type(exc).__name__}"}
    try:
        which = _visible_index()
        try:
            handle = (nv.nvmlDeviceGetHandleByIndex(which) if isinstance(which, int)
                      else nv.nvmlDeviceGetHandleByUUID(which))
        except Exception as exc:
            return {"source": "unreadable", "reason": f"NVML has no GPU {which!r}: {exc or type(exc).__name__}"}
        out: dict[str, Any] = {"source": "nvml", "index": which}
        unreadable: dict[str, str] = {}

        def read(key: str, fn: Callable[[], Any]) -> None:
            try:
                out[key] = fn()
            except Exception as exc:  # one field the driver will not give must not lose the others
                out[key] = None
                unreadable[key] = str(exc) or type(exc).__name__

        read("name", lambda: _text(nv.nvmlDeviceGetName(handle)))
        read("driver", lambda: _text(nv.nvmlSystemGetDriverVersion()))
        read("sm_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM))
        read("mem_mhz", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM))
        read("max_sm_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_SM))
        read("max_mem_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(handle, nv.NVML_CLOCK_MEM))
        read("temperature_c", lambda: nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU))
        read("power_w", lambda: nv.nvmlDeviceGetPowerUsage(handle) / 1000.0)
        read("pstate", lambda: f"P{nv.nvmlDeviceGetPerformanceState(handle)}")
        read("clock_event_reasons", lambda: _clock_events(nv, handle))
        if unreadable:
            out["unreadable"] = unreadable
        return out
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:
            pass


def _clock_events(nv: Any, handle: Any) -> list[str]:
    # renamed from ...ClocksThrottleReasons in newer NVML; either gives the same bit mask
    fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    mask = int(fn(handle))
    return [name for bit, name in _CLOCK_EVENTS.items() if mask & bit]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
