"""Batched equals single (#48): a system's greedy or length-forced output for an item must not depend on the
batch it was decoded in. Padding masks and NAR length prediction are the known ways to break it (fairseq
#427): a padded row that attends to padding, or a length head that reads it, changes with its neighbours.

Every registered system, on its smoke model: the outputs of ``decode_one`` (B = 1) and of one
``decode_batch`` over eight items of different lengths (B = 8) must be identical, free and length-forced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toy_training import qg_examples

from bench.api.system import System
from bench.api.types import Example, TaskInfo
from bench.env.device import fit_on
from systems import SYSTEMS, build

pytestmark = pytest.mark.usefixtures("one_torch_thread")
B = 8


@pytest.fixture(scope="module")
def task() -> TaskInfo:
    return TaskInfo("squad_qg", qg_examples(64, 0), qg_examples(16, 1), 464, 48)


def _overrides(name: str, system: System) -> dict[str, Any]:
    """Smoke presets, two updates (agreement, not learning, is under test); fairseq: untrained weights (its
    smoke training is a fairseq-train process), which decode only length-forced."""
    if name.startswith("fairseq_"):
        return {"weights": "random"}
    return {"steps": 2} if system.needs_training else {}


def _items(task: TaskInfo) -> list[Example]:
    """Eight items whose sources differ in length, so the batch pads (a batch of equal lengths proves nothing)."""
    items = sorted(task.dev, key=lambda ex: len(ex.source.split()))
    picked = items[:: max(1, len(items) // B)][:B]
    assert len({len(ex.source.split()) for ex in picked}) > 1
    return picked


@pytest.mark.parametrize("name", SYSTEMS.names())
def test_outputs_do_not_depend_on_the_batch(name: str, task: TaskInfo, tmp_path: Path) -> None:
    if name.startswith("fairseq_"):
        pytest.importorskip("fairseq", reason="fairseq baselines need `make fairseq`")
    system = build(name, "smoke", _overrides(name, build(name, "smoke")))
    fit_on(system, task, tmp_path / name, "cpu")
    items = _items(task)
    if not (name.startswith("fairseq_")):
        single = [system.decode_one(ex) for ex in items]
        assert system.decode_batch(items) == single, f"{name}: free outputs at B={B} differ from B=1"
    if system.supports_forced_length:
        lengths = [3 + (i * 5) % 11 for i in range(len(items))]  # each item its own forced length
        single = [system.decode_one(ex, forced_length=n) for ex, n in zip(items, lengths, strict=True)]
        batched = system.decode_batch(items, forced_lengths=lengths)
        assert batched == single, f"{name}: length-forced outputs at B={B} differ from B=1"


def test_the_default_loops_and_checks_its_lengths() -> None:
    from fake_systems import DecodeOnly

    class Echo(DecodeOnly):
        supports_forced_length = True

        def decode_one(self, example: Example, forced_length: int | None = None) -> str:
            return example.source if forced_length is None else " ".join(["x"] * forced_length)

    echo, items = Echo(), [Example("a", "one two", "t"), Example("b", "three", "t")]
    assert not echo.batched_decode
    assert echo.decode_batch(items) == ["one two", "three"]
    assert echo.decode_batch(items, forced_lengths=[1, 2]) == ["x", "x x"]
    with pytest.raises(ValueError, match="one per item"):
        echo.decode_batch(items, forced_lengths=[1])


def test_the_ar_transformer_forces_each_row_in_one_generator_call(task: TaskInfo, tmp_path: Path) -> None:
    """The AR baseline's length-forced batch is one fairseq generator call with a length per row (the sweep's
    throughput is of a real batched decode), not the per-item loop; each row still matches its B = 1 output."""
    pytest.importorskip("fairseq", reason="fairseq baselines need `make fairseq`")
    system = build("fairseq_transformer", "smoke", {"weights": "random"})
    fit_on(system, task, tmp_path / "ar", "cpu")
    assert system.batched_decode
    items = _items(task)
    lengths = [2 + (i * 7) % 13 for i in range(len(items))]
    single = [system.decode_one(ex, forced_length=n) for ex, n in zip(items, lengths, strict=True)]

    def no_loop(*_a: object, **_k: object) -> str:
        raise AssertionError("decode_batch fell back to one decode_one per item")

    system.decode_one = no_loop  # type: ignore[method-assign]
    assert system.decode_batch(items, forced_lengths=lengths) == single
