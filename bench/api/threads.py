"""How many threads this process computes with, set in one place: ``bench run --threads`` (for the whole
process, :func:`set_threads`) and a system's own ``threads`` setting (for its fit and decode,
:func:`using_threads`) both come here, so torch and the OpenMP/MKL pools of child processes always agree."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


def set_threads(n: int) -> None:
    """Pin torch, and the OpenMP/MKL pools of anything started later (fairseq-train), to ``n`` threads."""
    os.environ.update({var: str(n) for var in THREAD_VARS})
    import torch

    torch.set_num_threads(n)


#: the thread pools a child process sizes from its environment
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def using_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch threads and ``n`` OpenMP/MKL threads for any child process it starts, then
    restore both: the one place a system applies its ``threads`` (:class:`FamilyConfig`). None changes nothing.
    Why a system sets it at all: tiny models are fastest on one thread (and immune to a busy machine's OpenMP
    stalls), while the cpu budget uses every core it is given."""
    if not n:
        yield
        return
    import torch

    old, env = torch.get_num_threads(), {var: os.environ.get(var) for var in THREAD_VARS}
    if old != n:
        torch.set_num_threads(n)
    os.environ.update({var: str(n) for var in THREAD_VARS})
    try:
        yield
    finally:
        if torch.get_num_threads() != old:
            torch.set_num_threads(old)
        for var, value in env.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value
