"""bench.env.threads.set_threads (every --threads) and bench.env.counts.at_least (every count option's wording)."""

from __future__ import annotations

import os

import pytest

from bench.api.errors import UserError
from bench.api.threads import THREAD_VARS
from bench.env.counts import CountError, at_least
from bench.env.threads import set_threads


def test_at_least_names_the_option_its_value_and_the_range() -> None:
    at_least("--n", None, 1)  # not given: nothing to check
    at_least("--n", 1, 1)
    with pytest.raises(CountError, match=r"^-n -1: n must be ≥ 0 \(got -1\)$") as err:
        at_least("-n", -1, 0)
    assert isinstance(err.value, UserError) and isinstance(err.value, ValueError)

    class Mine(UserError):
        pass

    with pytest.raises(Mine, match=r"^--jobs 0: jobs must be ≥ 1 \(got 0\)$"):
        at_least("--jobs", 0, 1, error=Mine)


def test_set_threads_pins_torch_and_the_pools_of_later_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    try:
        set_threads(1)
        assert torch.get_num_threads() == 1
        assert all(os.environ[var] == "1" for var in THREAD_VARS)
    finally:
        torch.set_num_threads(before)


def test_set_threads_refuses_a_count_below_one_naming_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(CountError, match=r"^--threads-per-job 0: threads-per-job must be ≥ 1 \(got 0\)$"):
        set_threads(0, "--threads-per-job")
    assert not any(var in os.environ for var in THREAD_VARS)
