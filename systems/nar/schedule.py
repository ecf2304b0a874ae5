"""Mask-Predict's linear-decay re-masking schedule (Ghazvininejad et al., 2019; §4.9)."""

from __future__ import annotations


def remask_count(length: int, iterations: int, step: int) -> int:
    """Tokens to re-mask before refinement ``step`` (1..k-1): floor(T * (k - t) / k)."""
    if not 1 <= step < iterations:
        raise ValueError(f"step must be in 1..{iterations - 1}, got {step}")
    return (length * (iterations - step)) // iterations


def remask_schedule(length: int, iterations: int) -> list[int]:
    """All re-mask counts of a k-iteration decode; T=10, k=3 -> [6, 3]."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    return [remask_count(length, iterations, t) for t in range(1, iterations)]
