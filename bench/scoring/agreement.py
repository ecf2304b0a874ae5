"""How often two systems wrote the very same output: the check that a re-implementation of a decoder (a
converted model, another runtime) decodes what the original does, which score deltas alone cannot show
(two different outputs can score the same)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def identical_outputs(hyps_a: Sequence[str], hyps_b: Sequence[str], first: int = 200) -> dict[str, Any]:
    """Items whose two outputs are byte-identical, over all items and over the first ``first`` (the
    CTranslate2 check of #50 reads the first 200 test items); the first differing item is named."""
    if len(hyps_a) != len(hyps_b):
        raise ValueError(f"identical_outputs: {len(hyps_a)} outputs against {len(hyps_b)}; compare the same items.")
    same = [x == y for x, y in zip(hyps_a, hyps_b, strict=True)]
    head = same[: max(0, first)]
    diff = next((i for i, s in enumerate(same) if not s), None)
    return {"n": len(same), "same": sum(same), "rate": sum(same) / len(same) if same else None,
            "first": {"n": len(head), "same": sum(head), "rate": sum(head) / len(head) if head else None},
            "first_difference": None if diff is None else {"index": diff, "a": hyps_a[diff], "b": hyps_b[diff]}}


def identical_line(agree: dict[str, Any]) -> str:
    """One line for the terminal: all items, then the first N."""
    def part(d: dict[str, Any]) -> str:
        rate = "" if d["rate"] is None else f" ({100 * d['rate']:.1f} %)"
        return f"{d['same']:,}/{d['n']:,}{rate}"

    return f"identical outputs: {part(agree)}; first {agree['first']['n']:,}: {part(agree['first'])}"


__all__ = ["identical_line", "identical_outputs"]
