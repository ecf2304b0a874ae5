"""Shared test hygiene."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# A training run at precision=auto times its candidates before its first step (systems.training.speed_probe):
# seconds each, and compile time. Tests fix the policy instead (their subprocesses inherit it); the policy's own
# tests unset it and drive the probe with a fake clock.
os.environ.setdefault("BENCH_TRAIN_POLICY", "fp32")
# where runs land without --results-dir (bench.api.paths.workspace_dir): a folder of this test session, never the
# checkout's .cache/results (and never results/); each xdist worker imports this file and gets its own
os.environ["BENCH_RESULTS"] = tempfile.mkdtemp(prefix="bench-workspace-")


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


@pytest.fixture
def quora_hypotheses(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(data dir, a, b): two hypothesis files over the first 40 Quora test questions, ``a`` each whole question
    lowercased, ``b`` its first three words, so ``a`` beats ``b`` under any recipe. Skips without the data."""
    data = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    if not data.is_dir():
        pytest.skip(f"data dir {data} not found")
    from bench.data import load_split

    first = load_split("quora", "test", data_dir=data).examples[:40]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(ex.source.lower() + "\n" for ex in first))
    b.write_text("".join(" ".join(ex.source.lower().split()[:3]) + "\n" for ex in first))
    return data, a, b

