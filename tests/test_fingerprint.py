"""The environment fingerprint stored in every run record and latency report."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import bench.fingerprint as fpmod
from bench.fingerprint import device_label, environment_fingerprint, identity_changes


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
    code = ("import sys, json; from bench.fingerprint import environment_fingerprint as f; "
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
