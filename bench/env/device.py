"""Where a run's models live: one policy, resolved once by the harness and handed to every system.

Why one place: a speed column is only right when every timed model and every input sit on the same
device. When each family picked its own device (fairseq by ``torch.cuda.is_available()``, the NAR
family by where ``fit`` built its model, the trainer by accelerate's default), one GPU run timed
fairseq on ``cuda:0`` and the NAR rows on the CPU and printed 1.27x for a real 8.8x. Now the CLI
resolves ``--device`` here, the harness calls :meth:`bench.api.system.System.place`, and nothing else
chooses.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bench.api.errors import UserError

#: what ``--device`` accepts
DEVICE_HELP = "auto (cuda when torch sees a GPU, else cpu), cpu, cuda or cuda:N"
_CUDA = re.compile(r"^cuda(?::(\d+))?$")


class DeviceError(UserError, ValueError):
    """A device that this machine does not have, or a name that is not a device."""


def resolve_device(requested: str | None = "auto") -> str:
    """The concrete device for ``requested``: ``cpu`` or ``cuda:N``.

    ``auto`` (or None) is ``cuda`` when torch sees a GPU. A bare ``cuda`` is this process's GPU: the
    one ``accelerate launch`` gives it (``LOCAL_RANK``), else ``cuda:0``. Asking for a GPU that is not
    there is a one-line error, never a silent CPU run.
    """
    name = (requested or "auto").strip().lower()
    if name == "cpu":
        return "cpu"
    if name == "auto":
        return _default_cuda() if _cuda_count() > 0 else "cpu"
    match = _CUDA.match(name)
    if match is None:
        raise DeviceError(f"--device {requested!r} is not a device; use {DEVICE_HELP}.")
    count = _cuda_count()
    if count == 0:
        raise DeviceError(
            f"--device {requested} asks for a GPU, but torch sees none (torch.cuda.is_available() is False); "
            "run on a GPU machine with a CUDA build of torch, or use --device cpu."
        )
    if match.group(1) is None:
        return _default_cuda()
    index = int(match.group(1))
    if index >= count:
        raise DeviceError(f"--device {requested}: torch sees {count} GPU(s) (cuda:0..cuda:{count - 1}).")
    return f"cuda:{index}"


def is_cuda(device: str) -> bool:
    return str(device).startswith("cuda")


def _default_cuda() -> str:
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0') or 0)}"


def activate(device: str) -> None:
    """Make a ``cuda:N`` device this process's current GPU: the meter's synchronize, its canaries and
    any library default then use the run's GPU, not ``cuda:0``. Nothing for the CPU."""
    if is_cuda(device):
        import torch

        torch.cuda.set_device(torch.device(device))


def _cuda_count() -> int:
    """GPUs torch can use; 0 without torch or a CUDA build (imported only when a device is asked for)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def fit_on(system: Any, task: Any, workdir: Path, device: str) -> None:
    """Place ``system`` on ``device``, fit it there, and place it again: the one order every harness
    path (``bench run``, ``bench latency``) uses, so a model that ``fit`` builds or loads (on the CPU,
    from a checkpoint) joins the run's device before anything decodes or is timed."""
    system.place(device)
    system.fit(task, workdir)
    system.place(device)
