"""Where a training speed probe's figures are kept: once per machine and shape class, under the cache folder.

The key is what decides which candidate trains fastest: the CPU model and its flags, the torch version (its
kernels and compiler), the thread count and the device; a change to any of them is another file, so it
re-probes. A file is written atomically and checked on read (its key must be this machine's, its figures whole);
a file that fails is reported in one line and probed again, never trusted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

from bench.api.paths import cache_root
from bench.api.speed_policy import Figures

#: bump when the probe's method changes: figures measured the old way are probed again
PROBE_VERSION = 1
SCHEMA = 1
FOLDER = "speed_policy"


def cpu_model() -> str:
    """The CPU's ``model name`` with its family/model/stepping numbers (VMs often name every CPU alike)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the first processor's block is enough
                name, _, value = line.partition(":")
                fields.setdefault(name.strip(), value.strip())
    except OSError:
        import platform

        return platform.processor() or platform.machine() or "unknown"
    ids = ", ".join(f"{k} {fields[k]}" for k in ("cpu family", "model", "stepping") if k in fields)
    return f"{fields.get('model name', 'unknown')} ({ids})" if ids else fields.get("model name", "unknown")


def machine_key(device: str = "cpu") -> dict[str, Any]:
    """What the choice depends on, as stored in (and checked against) each cache file."""
    import torch

    from bench.api.precision import cpu_flags

    flags = sorted(cpu_flags())
    gpu = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None
    return {
        "cpu": cpu_model(),
        "flags_sha256": hashlib.sha256(" ".join(flags).encode()).hexdigest(),
        "bf16_flags": [f for f in flags if f in ("amx_bf16", "avx512_bf16")],
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": gpu or "cpu",
        "probe": PROBE_VERSION,
    }


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def cache_file(key: dict[str, Any], shape_class: str, root: Path | None = None) -> Path:
    """``<cache>/speed_policy/<key hash>--<shape class hash>.json``: one file per machine key and shape class,
    so two runs probing different shapes at once never overwrite each other's figures."""
    return (root or cache_root()) / FOLDER / f"{_digest(key)[:16]}--{_digest(shape_class)[:12]}.json"


def load(key: dict[str, Any], shape_class: str, root: Path | None = None) -> tuple[Figures | None, str, str]:
    """(figures, created, problem): the cached figures for this key and shape class, when their file is whole and
    is this machine's; else None and, for a file that exists but fails a check, one line saying why."""
    path = cache_file(key, shape_class, root)
    if not path.is_file():
        return None, "", ""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            raise ValueError(f"schema is not {SCHEMA}")
        if obj.get("key") != key:
            raise ValueError("its key is not this machine's")
        if obj.get("shape_class") != shape_class:
            raise ValueError("its shape class is not this run's")
        created = obj.get("created")
        if not isinstance(created, str):
            raise ValueError("created is not a timestamp")
        return Figures.from_json(obj.get("figures")), created, ""
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, "", f"{path}: not used ({exc}); probing again"


def save(key: dict[str, Any], shape_class: str, figures: Figures, root: Path | None = None) -> tuple[Path, str]:
    """Write the figures atomically; returns the file and its ``created`` stamp (OSError passes to the caller)."""
    from bench.api.atomic import write_json_atomic

    path = cache_file(key, shape_class, root)
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_json_atomic(path, {"schema": SCHEMA, "key": key, "shape_class": shape_class, "created": created,
                             "figures": figures.to_json()})
    return path, created
