"""Helpers every adapter's presets share: overrides by field name, seeded subsets, factories.

A named variant is a preset over one config dataclass (fairseq's ``register_model_architecture``
idea); these helpers keep the three things every family does with its presets identical.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, TypeVar

C = TypeVar("C")
S = TypeVar("S")
E = TypeVar("E")


def replace_fields(cfg: C, overrides: Mapping[str, Any], label: str, frozen: tuple[str, ...] = ()) -> C:
    """``cfg`` with fields replaced by name; an unknown (or frozen) key is an error listing the known ones."""
    known = {f.name for f in fields(cfg)} - set(frozen)  # type: ignore[arg-type]
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"Unknown override(s) {bad} for {label}; known: {', '.join(sorted(known))}")
    return replace(cfg, **overrides) if overrides else cfg  # type: ignore[type-var]


def seeded_subset(examples: Sequence[E], n: int | None, seed: int) -> list[E]:
    """A fixed, seeded subset in split order (all of it when ``n`` is None or too large), so a
    budget's "N training examples" is the same N examples on every machine."""
    if n is None or n >= len(examples):
        return list(examples)
    idx = sorted(random.Random(seed).sample(range(len(examples)), n))
    return [examples[i] for i in idx]


def variant_factory(make: Callable[[str, str, Mapping[str, Any]], S], variant: str, family: str
                    ) -> Callable[[str, Mapping[str, Any]], S]:
    """The registry entry for one named variant: ``factory(budget, overrides) -> System``."""

    def factory(budget: str, overrides: Mapping[str, Any]) -> S:
        return make(variant, budget, overrides)

    factory.__name__ = variant
    factory.__doc__ = f"Registry factory for the {family} variant '{variant}'."
    return factory
