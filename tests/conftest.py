"""Shared test hygiene."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    """A test that pins torch to one thread must not leave the worker that way: later tests compare
    runs bitwise, and float reductions depend on the thread count."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)
