"""The time budget ``scripts/gpu_check.py`` owns: which steps run, and how long each may take.

A lent GPU comes with minutes, and one command is cut at its limit: whatever has not been written by
then is lost. So the check plans against ``--budget-s``. Each step has a weight (its share of the
budget) and a least time it needs. Before a step starts, the time left is shared among the steps
still to come by their weights, so time a quick step did not use flows on to the later ones. A step
whose share is below what it needs is skipped with that reason; one that runs is stopped at its
share. Standard library only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

#: seconds kept back from the budget for writing the last table and exiting
RESERVE_S = 5.0


@dataclass(frozen=True)
class StepSpec:
    """One step of the check: ``group`` is its ``--only`` name, ``weight`` its share of the budget relative
    to the others, ``need_s`` the least time it can finish in (on the device kind it was planned for)."""

    group: str
    name: str
    weight: float
    need_s: float


@dataclass
class Budget:
    """The check's deadline and the share each remaining step gets of the time left."""

    total_s: float
    start: float
    reserve_s: float = RESERVE_S

    @classmethod
    def starting_now(cls, total_s: float) -> Budget:
        return cls(total_s, time.monotonic())

    def left_s(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return max(0.0, self.total_s - self.reserve_s - (now - self.start))

    def share_s(self, step: StepSpec, later: list[StepSpec], now: float | None = None) -> float:
        """``step``'s share of the time left, weighed against the steps after it."""
        weights = step.weight + sum(s.weight for s in later)
        left = self.left_s(now)
        return left if weights <= 0 else left * step.weight / weights

    def skip_reason(self, step: StepSpec, share: float) -> str | None:
        """Why ``step`` cannot run in ``share`` seconds, or None when it fits."""
        if share >= step.need_s:
            return None
        return (f"would not fit: needs about {step.need_s:.0f} s, its share of --budget-s {self.total_s:g} is "
                f"{share:.0f} s (run it alone: --only {step.group})")


def planned_shares(steps: list[StepSpec], total_s: float) -> list[float]:
    """Each step's share if every step before it used all of its own: the plan printed before the check
    starts (what a step really gets is at least this, since earlier steps usually finish early)."""
    budget = Budget(total_s, 0.0)
    left = budget.left_s(0.0)
    weights = sum(s.weight for s in steps) or 1.0
    return [left * s.weight / weights for s in steps]
