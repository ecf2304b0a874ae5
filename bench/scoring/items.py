"""What a score's "items" are, said only where a recipe groups examples (#47: "946 scored of 2,000" was never
explained; #58: the QG wording printed under Quora and XSum scores too)."""

from __future__ import annotations

from collections.abc import Sequence

#: a recipe whose signature has a ``key:`` field scores one item per distinct key; one without scores one item per
#: example, which needs no note
ITEMS_NOTE = ("items: the units a recipe scores: one per distinct key (the signature's key: field), where the "
              "examples that share it are scored together against all their references, so there are fewer items "
              "than examples decoded.")


def items_note(signatures: Sequence[str]) -> str | None:
    """The note where some recipe groups by a key (QG by sentence or paragraph, Quora by source), else None."""
    return ITEMS_NOTE if any("|key:" in s for s in signatures) else None
