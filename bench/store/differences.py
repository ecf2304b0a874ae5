"""A number a file under results/ states that its own inputs do not give back (``bench table --check --deep``).

Why a type of its own: the score, p-value and latency checks live in three layers, and one report lists
them all; each names the file (or record), the field, the stored value and the recomputed one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: how far a recomputed number may be from the stored one (scores ×100, p-values, ms, ratios): far below
#: any printed digit, far above the last-bit noise of a sum taken in another order on another machine
REL_TOL = 1e-9
ABS_TOL = 1e-9


@dataclass(frozen=True)
class Difference:
    """``where`` (a record or file) states ``stored`` for ``field``; its inputs give ``recomputed``."""

    where: str
    field: str
    stored: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.where}: {self.field}: stored {_show(self.stored)}, recomputed {_show(self.recomputed)}"


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def same_number(stored: Any, recomputed: Any) -> bool:
    """Equal within :data:`REL_TOL`/:data:`ABS_TOL`; a non-number stored where a number belongs is never equal."""
    if recomputed is None or stored is None:
        return stored is None and recomputed is None
    if any(isinstance(x, bool) or not isinstance(x, int | float) for x in (stored, recomputed)):
        return False
    if not math.isfinite(stored) or not math.isfinite(recomputed):
        return stored == recomputed or (math.isnan(stored) and math.isnan(recomputed))
    return math.isclose(stored, recomputed, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def compare_numbers(where: str, field: str, stored: Any, recomputed: Any) -> list[Difference]:
    """[] when ``stored`` is ``recomputed`` (numbers, or lists of numbers, element by element)."""
    if isinstance(recomputed, list | tuple):
        ok = isinstance(stored, list | tuple) and len(stored) == len(recomputed) and all(
            same_number(s, r) for s, r in zip(stored, recomputed, strict=True))
        return [] if ok else [Difference(where, field, stored, list(recomputed))]
    return [] if same_number(stored, recomputed) else [Difference(where, field, stored, recomputed)]


def compare_tree(where: str, stored: Any, recomputed: Any, field: str = "", skip: frozenset[str] = frozenset()
                 ) -> list[Difference]:
    """Every leaf of two JSON values compared (numbers within tolerance, anything else equal); ``skip``: keys
    that are not claims (a creation time)."""
    if isinstance(recomputed, dict) and isinstance(stored, dict):
        out: list[Difference] = []
        for key in sorted(set(stored) | set(recomputed), key=str):
            if key in skip:
                continue
            out += compare_tree(where, stored.get(key), recomputed.get(key), f"{field}.{key}" if field else str(key),
                                skip)
        return out
    if isinstance(recomputed, list) and isinstance(stored, list) and len(stored) == len(recomputed):
        return [d for i, (s, r) in enumerate(zip(stored, recomputed, strict=True))
                for d in compare_tree(where, s, r, f"{field}[{i}]", skip)]
    if isinstance(recomputed, int | float) and not isinstance(recomputed, bool):
        return compare_numbers(where, field, stored, recomputed)
    return [] if stored == recomputed else [Difference(where, field, stored, recomputed)]
