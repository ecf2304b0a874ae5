"""Checkpoints that allow an exact resume after a kill: model, optimizer, scheduler, RNG, step.

Layout: ``<dir>/step-<N>/`` with ``model.safetensors`` (tied weights handled by safetensors'
``save_model``), ``optimizer.pt`` + ``scheduler.pt`` + ``rng.pt`` (read back with
``weights_only=True``) and ``state.json``; a ``COMPLETE`` marker is written last, after an atomic
rename, so a kill mid-save never leaves a checkpoint that looks usable.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bench.api.checkpoints import reading_checkpoint

MARKER = "COMPLETE"


def rng_state() -> dict[str, Any]:
    np_state: Any = np.random.get_state()  # the legacy tuple form
    state = {
        "python": list(random.getstate()[1]),
        "python_pos": random.getstate()[2],
        "numpy_keys": torch.from_numpy(np_state[1].astype(np.int64)),
        "numpy_pos": int(np_state[2]),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    np.random.set_state(("MT19937", state["numpy_keys"].numpy().astype(np.uint32), state["numpy_pos"], 0, 0.0))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    root: Path,
    step: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None,
    scheduler: Any | None,
    extra: dict[str, Any] | None = None,
    keep: int = 2,
) -> Path:
    """Write ``root/step-<step>`` atomically and prune to the newest ``keep`` checkpoints."""
    from safetensors.torch import save_model

    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step}"
    tmp = root / f".tmp-step-{step}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    save_model(model, str(tmp / "model.safetensors"))
    if optimizer is not None:
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    if scheduler is not None:
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save(rng_state(), tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps({"step": step, **(extra or {})}, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    (final / MARKER).write_text("ok\n")
    for old in list_checkpoints(root)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def list_checkpoints(root: Path) -> list[Path]:
    """Complete checkpoints under ``root``, oldest first."""
    if not root.is_dir():
        return []
    found = [p for p in root.glob("step-*") if (p / MARKER).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def latest_checkpoint(root: Path) -> Path | None:
    found = list_checkpoints(root)
    return found[-1] if found else None


def load_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: Any | None = None,
    restore_rng: bool = True,
) -> dict[str, Any]:
    """Load everything saved by :func:`save_checkpoint`; returns ``state.json``."""
    from safetensors.torch import load_model

    if not (path / MARKER).is_file():
        raise FileNotFoundError(f"{path} is not a complete checkpoint (no {MARKER} marker); delete it and resume")
    with reading_checkpoint(path / "model.safetensors"):
        load_model(model, str(path / "model.safetensors"))
    if optimizer is not None and (path / "optimizer.pt").is_file():
        with reading_checkpoint(path / "optimizer.pt"):
            optimizer.load_state_dict(torch.load(path / "optimizer.pt", weights_only=True))
    if scheduler is not None and (path / "scheduler.pt").is_file():
        with reading_checkpoint(path / "scheduler.pt"):
            scheduler.load_state_dict(torch.load(path / "scheduler.pt", weights_only=True))
    if restore_rng:
        with reading_checkpoint(path / "rng.pt"):
            set_rng_state(torch.load(path / "rng.pt", weights_only=True))
    return read_state(path)


def read_state(path: Path) -> dict[str, Any]:
    """A checkpoint's ``state.json`` (its step, ...): a torn or crafted one is :class:`CorruptCheckpoint`."""
    with reading_checkpoint(path / "state.json"):
        state = json.loads((path / "state.json").read_text(encoding="utf-8"))
        if not isinstance(state, dict):
            raise TypeError("not a JSON object")
        return state
