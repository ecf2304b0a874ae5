"""A system that does nothing, so the latency meter can time its own overhead.

Whatever the meter reports for ``null`` is the cost of the timing window itself (clock reads, the
call, the sync); it must stay far below the fastest real system's latency for speeds to be trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo
from bench.api.types import Example, TaskInfo


class NullSystem(System):
    """Returns a fixed string for every input; no training, no work."""

    supports_forced_length = True
    latency_probe = True  # the meter exempts it from the minimum timed duration

    def __init__(self, output: str = "", budget: str = "smoke") -> None:
        self.output = output
        self.budget = budget
        self.last_iterations = 0

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="null",
            family="reference",
            iterations=0,
            citation="none (meter-overhead probe)",
            backbone="none",
            budget=self.budget,
            config={"output": self.output},
        )

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        """Nothing to learn."""

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.output] * len(examples)

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        return self.output


def null(budget: str = "smoke", overrides: Mapping[str, Any] | None = None) -> NullSystem:
    """Registry factory: ``overrides`` may set ``output`` (default: the empty string)."""
    return NullSystem(output=str((overrides or {}).get("output", "")), budget=budget)
