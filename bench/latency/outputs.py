"""Outputs produced while timing, checked against the quality run's outputs.

A fast system that decodes differently when timed (another beam, a shortcut path in
``decode_one``) would report a speed its quality numbers never had; hashing both sides catches it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def text_sha256(lines: Sequence[str]) -> str:
    """sha256 of newline-joined outputs (one per line), the same convention as output files."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class OutputCheck:
    """Result of comparing timed outputs with a reference (quality-run) output list."""

    timed_sha256: str  # over the distinct timed items, in example-index order
    reference_sha256: str | None
    match: bool | None  # None: nothing to compare against (or length-forced mode)
    n_compared: int
    n_mismatched: int
    first_mismatch: dict[str, str] | None = None
    nondeterministic: list[str] = field(default_factory=list)  # example ids with differing repeats

    def to_json(self) -> dict[str, object]:
        return {
            "timed_sha256": self.timed_sha256,
            "reference_sha256": self.reference_sha256,
            "match": self.match,
            "n_compared": self.n_compared,
            "n_mismatched": self.n_mismatched,
            "first_mismatch": self.first_mismatch,
            "nondeterministic": list(self.nondeterministic),
        }


def check_outputs(
    item_indices: Sequence[int],
    outputs: Sequence[str],
    example_ids: Sequence[str],
    reference: Sequence[str] | None,
) -> OutputCheck:
    """Hash the timed outputs and compare each distinct item with ``reference[index]``.

    ``reference`` is indexed like the example list given to the meter (the quality run's outputs in
    split order). Items timed more than once must give the same text each time.
    """
    if len(item_indices) != len(outputs):
        raise ValueError(f"{len(outputs)} outputs for {len(item_indices)} timed items.")
    first: dict[int, str] = {}
    nondet: list[str] = []
    for idx, out in zip(item_indices, outputs, strict=True):
        if idx not in first:
            first[idx] = out
        elif first[idx] != out and example_ids[idx] not in nondet:
            nondet.append(example_ids[idx])
    order = sorted(first)
    timed_hash = text_sha256([first[i] for i in order])
    if reference is None:
        return OutputCheck(timed_hash, None, None, 0, 0, None, nondet)
    if len(reference) != len(example_ids):
        raise ValueError(
            f"Reference outputs have {len(reference)} lines but the meter was given {len(example_ids)} "
            "examples; pass the quality run's outputs for exactly the same split, in split order."
        )
    ref_hash = text_sha256([reference[i] for i in order])
    mismatched = [i for i in order if first[i] != reference[i]]
    first_mm = None
    if mismatched:
        i = mismatched[0]
        first_mm = {"id": example_ids[i], "timed": first[i], "quality_run": reference[i]}
    return OutputCheck(
        timed_hash, ref_hash, not mismatched and not nondet, len(order), len(mismatched), first_mm, nondet
    )


def reference_for(
    name: str, reference_outputs: Mapping[str, Sequence[str]] | None
) -> Sequence[str] | None:
    return None if reference_outputs is None else reference_outputs.get(name)
