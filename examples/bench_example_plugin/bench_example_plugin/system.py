"""``lead_words``: the first L words of the source, L learned as the median training target length.

Small enough to read in a minute, but a real system under the contract: ``fit`` learns from the
training split and is resumable (it keeps what it learned in the workdir), ``decode`` and
``decode_one`` agree, ``describe`` states every setting, and overrides are checked.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.api import Example, System, SystemInfo, TaskInfo, check_budget

SETTINGS = {"lowercase": False, "max_words": 64}


class LeadWords(System):
    def __init__(self, budget: str, settings: Mapping[str, Any]) -> None:
        self.budget = budget
        self.settings = dict(settings)
        self.length: int | None = None

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="lead_words",
            family="reference",
            iterations=1,
            citation="bench example plugin",
            budget=self.budget,
            config={**self.settings, **({"learned_length": self.length} if self.length is not None else {})},
        )

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        state = workdir / "lead_words.json"
        if state.is_file():  # resumable: a second fit in the same workdir reads what the first learned
            self.length = int(json.loads(state.read_text())["length"])
            return
        if not task.train:
            raise ValueError(f"lead_words needs a training split to learn its output length ({task.name} has none)")
        self.length = int(statistics.median(len(ex.target.split()) for ex in task.train))
        state.write_text(json.dumps({"length": self.length}))

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        if self.length is None:
            raise RuntimeError("lead_words: call fit before decoding")
        words = example.source.split()[: min(self.length, int(self.settings["max_words"]))]
        text = " ".join(words)
        return text.lower() if self.settings["lowercase"] else text


def make(budget: str, overrides: Mapping[str, Any]) -> LeadWords:
    """The registered factory: ``make(budget, overrides) -> System``."""
    check_budget(budget)
    unknown = sorted(set(overrides) - set(SETTINGS) - {"seed"})
    if unknown:
        raise ValueError(f"Unknown override(s) {unknown} for lead_words; known: {', '.join(SETTINGS)}")
    settings = {**SETTINGS, **{k: v for k, v in overrides.items() if k != "seed"}}
    if not isinstance(settings["lowercase"], bool) or not isinstance(settings["max_words"], int):
        raise ValueError("lead_words: lowercase takes true/false, max_words an integer")
    return LeadWords(budget, settings)
