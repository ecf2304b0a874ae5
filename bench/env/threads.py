"""How many threads this process computes with: one function, for `bench run --threads`, `bench calibrate
--threads` and the inline launcher's `--threads-per-job`."""

from __future__ import annotations

from bench.api import threads
from bench.env.counts import at_least


def set_threads(n: int, option: str = "--threads") -> None:
    """Pin torch, and the OpenMP/MKL pools of anything started later, to ``n`` threads (recorded in each
    run's environment). ``option`` names the count in the refusal of ``n`` < 1."""
    at_least(option, n, 1)
    threads.set_threads(n)
