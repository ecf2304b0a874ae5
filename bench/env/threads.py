"""How many threads this process computes with: one function, for `bench run --threads`, `bench calibrate
--threads` and the inline launcher's `--threads-per-job`."""

from __future__ import annotations

import os

from bench.env.counts import at_least

#: the thread pools of libraries started later in this process or its children (e.g. fairseq-train)
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def set_threads(n: int, option: str = "--threads") -> None:
    """Pin torch, and the OpenMP/MKL pools of anything started later, to ``n`` threads (recorded in each
    run's environment). ``option`` names the count in the refusal of ``n`` < 1."""
    at_least(option, n, 1)
    for var in THREAD_VARS:
        os.environ[var] = str(n)
    import torch

    torch.set_num_threads(n)
