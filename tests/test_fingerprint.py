"""The environment fingerprint stored in every run record and latency report."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import bench.env.fingerprint as fpmod
from bench.env.fingerprint import device_label, environment_fingerprint, identity_changes


def test_fingerprint_describes_this_machine():
    fp = environment_fingerprint()
    json.dumps(fp)  # must be storable in a run record as is
    assert fp["cpu"] and fp["cpu"] != "unknown"
    assert fp["cpu_logical_cores"] >= 1
    assert fp["python"] == ".".join(map(str, sys.version_info[:3]))
    import numpy
    import torch

    assert fp["numpy"] == numpy.__version__
    assert fp["torch"] == torch.__version__ and fp["torch_threads"] == torch.get_num_threads()
    assert fp["gpu"] == (torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)


def test_fingerprint_is_stable_and_changes_are_reported():
    a, b = environment_fingerprint(), environment_fingerprint()
    assert identity_changes(a, b) == []
    b = dict(b, torch_threads=(a["torch_threads"] or 1) + 1, loadavg=[9.9, 9.9, 9.9], cpu_mhz=1.0)
    changes = identity_changes(a, b)
    assert len(changes) == 1 and changes[0].startswith("torch_threads:")


def test_without_torch_does_not_import_it():
    code = ("import sys, json; from bench.env.fingerprint import environment_fingerprint as f; "
            "fp = f(include_torch=False); print(json.dumps([fp['torch'], 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [None, False]


def test_nvidia_smi_is_parsed(monkeypatch):
    line = "550.54.15, NVIDIA H100 80GB HBM3, 1980, 2619, 1980, 34, Enabled\n"
    monkeypatch.setattr(fpmod.shutil, "which", lambda exe: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(fpmod.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout=line))
    info = fpmod._nvidia_smi()
    assert info["gpu_driver"] == "550.54.15" and info["gpu_name_smi"] == "NVIDIA H100 80GB HBM3"
    assert info["gpu_clocks_mhz"] == {"sm": 1980.0, "mem": 2619.0} and info["gpu_temperature_c"] == 34.0
    monkeypatch.setattr(fpmod.shutil, "which", lambda exe: None)
    assert fpmod._nvidia_smi() == {}


def test_device_label():
    assert device_label({"cpu": "Xeon", "gpu": "H100"}, "cuda") == "H100"
    assert device_label({"cpu": "Xeon", "gpu": "H100"}, "cpu") == "Xeon"
    assert device_label({}, "cpu") == "unknown-cpu"


class FakeNVML:
    """The few NVML calls gpu_state makes, with the values of an idle H200 (and a field it will not give)."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, fail_init=None):
        self.fail_init, self.handles, self.shutdown = fail_init, [], 0

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError(self.fail_init)

    def nvmlShutdown(self):
        self.shutdown += 1

    def nvmlDeviceGetHandleByIndex(self, i):
        self.handles.append(i)
        return f"h{i}"

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.handles.append(uuid)
        return uuid

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"  # older bindings return bytes

    def nvmlSystemGetDriverVersion(self):
        return "580.95.05"

    def nvmlDeviceGetClockInfo(self, h, which):
        return {1: 345, 2: 3201}[which]

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return {1: 1980, 2: 3201}[which]

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 31

    def nvmlDeviceGetPowerUsage(self, h):
        raise RuntimeError("Not Supported")

    def nvmlDeviceGetPerformanceState(self, h):
        return 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x1 | 0x20  # idle, software thermal slowdown


def test_gpu_state_reads_nvml_and_names_what_it_could_not(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nv = FakeNVML()
    st = fpmod.gpu_state(loader=lambda: (nv, ""))
    assert st["source"] == "nvml" and st["name"] == "NVIDIA H200" and st["driver"] == "580.95.05"
    assert (st["sm_mhz"], st["mem_mhz"], st["max_sm_mhz"], st["temperature_c"]) == (345, 3201, 1980, 31)
    assert st["pstate"] == "P0" and st["clock_event_reasons"] == ["gpu_idle", "sw_thermal_slowdown"]
    assert st["power_w"] is None and st["unreadable"] == {"power_w": "Not Supported"}
    assert nv.handles == [0] and nv.shutdown == 1
    json.dumps(st)
    text = fpmod.describe_gpu_state(st)
    assert text == ("NVIDIA H200, driver 580.95.05, SM 345 MHz, mem 3201 MHz, 31 °C, "
                    "clocks held down by sw_thermal_slowdown")
    assert fpmod.describe_gpu_state(st, with_name=False).startswith("driver 580.95.05, SM 345 MHz")


def test_gpu_state_follows_cuda_visible_devices(monkeypatch):
    nv = FakeNVML()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert fpmod.gpu_state(loader=lambda: (nv, ""))["index"] == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8d2f")
    assert fpmod.gpu_state(loader=lambda: (nv, ""))["index"] == "GPU-8d2f" and nv.handles == [3, "GPU-8d2f"]


def test_gpu_state_unreadable_says_why():
    st = fpmod.gpu_state(loader=lambda: (FakeNVML(fail_init="Driver Not Loaded"), ""))
    assert st == {"source": "unreadable", "reason": "NVML did not start: Driver Not Loaded"}
    assert fpmod.describe_gpu_state(st) == "state unreadable (NVML did not start: Driver Not Loaded)"
    none = fpmod.gpu_state(loader=lambda: (None, "nvidia-ml-py is not installed"), smi=lambda: {})
    assert none["source"] == "unreadable" and none["reason"].startswith("nvidia-ml-py is not installed, and nvidia-smi")
    smi = {"gpu_driver": "550.54.15", "gpu_name_smi": "NVIDIA H100", "gpu_clocks_mhz": {"sm": 1980.0, "mem": 2619.0},
           "gpu_max_sm_mhz": 1980.0, "gpu_temperature_c": 34.0}
    via_smi = fpmod.gpu_state(loader=lambda: (None, "not installed"), smi=lambda: smi)
    assert via_smi["source"] == "nvidia-smi" and via_smi["sm_mhz"] == 1980.0 and via_smi["name"] == "NVIDIA H100"


def test_gpu_state_is_in_the_fingerprint_only_where_a_gpu_is_visible():
    fp = environment_fingerprint()
    assert ("gpu_state" in fp) == bool(fp.get("gpu") or fp.get("gpu_driver") is not None or "gpu_name_smi" in fp)
    a = dict(fp, gpu_state={"source": "nvml", "sm_mhz": 345})
    b = dict(fp, gpu_state={"source": "nvml", "sm_mhz": 1980})
    assert identity_changes(a, b) == []  # clocks move during a run; that alone changes nothing
