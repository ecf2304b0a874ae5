"""A minimal :class:`bench.api.system.System` for tests that need only ``decode_one`` (meter, tables).

Fakes subclass the real contract, so a test cannot pass with an object the harness would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.api.system import System, SystemInfo
from bench.api.types import Example, TaskInfo


class DecodeOnly(System):
    """Implements everything but ``decode_one``; describes itself as an untrained AR test system."""

    needs_training = False

    def describe(self) -> SystemInfo:
        return SystemInfo(name=type(self).__name__, family="AR", iterations="n", citation="test fake")

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        return None

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]
