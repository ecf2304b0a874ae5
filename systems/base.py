"""The contract every system adapter implements, and the budgets that size its runs.

``bench`` reaches systems only through :data:`systems.SYSTEMS`; an entry is a factory
``factory(budget: str, overrides: Mapping[str, Any]) -> System``. Named variants (``mist_unilm``,
``encoder_bert``...) are presets over one class, like fairseq's ``register_model_architecture``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from bench.data.types import Example

Budget = Literal["smoke", "cpu", "paper"]
BUDGETS: tuple[str, ...] = ("smoke", "cpu", "paper")
Family = Literal["AR", "NAR", "semi-NAR", "reference"]


@dataclass(frozen=True)
class SystemInfo:
    """What a system is, stored in every run record next to its numbers."""

    name: str
    family: Family
    iterations: int | str  # decoder passes per output (1 for NAR, "adaptive", "n" for AR)
    citation: str
    backbone: str = "none"
    budget: str = "smoke"
    config: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TaskInfo:
    """The parts of a task a system needs to train: name, train/dev splits, max lengths."""

    name: str
    train: Sequence[Example]
    dev: Sequence[Example]
    max_source_len: int
    max_target_len: int


@runtime_checkable
class System(Protocol):
    """A text generator the harness can train, decode with, and time.

    ``fit`` must be resumable from ``workdir`` (a killed run continues from its last checkpoint).
    ``decode`` is batched for quality runs; ``decode_one`` is batch size 1 for the latency meter,
    which owns the clock: adapters never time themselves. Both must produce the same text for the
    same example.
    """

    def describe(self) -> SystemInfo: ...

    def fit(self, task: TaskInfo, workdir: Path) -> None: ...

    def decode(self, examples: Sequence[Example]) -> list[str]: ...

    def decode_one(self, example: Example) -> str: ...


SystemFactory = Callable[[str, Mapping[str, Any]], System]


def check_budget(budget: str) -> str:
    if budget not in BUDGETS:
        raise ValueError(f"Unknown budget '{budget}'. Choose one of: {', '.join(BUDGETS)}.")
    return budget
