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


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Pin torch to one thread for a module (``pytestmark = pytest.mark.usefixtures("one_torch_thread")``):
    tiny models run faster on one thread, CI runs two pytest workers on two cores, and outputs compared
    bitwise (golden decodes) need one fixed thread count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
