"""Rank clusters from all pairs of runs: WMT's rule, with Holm's correction over the boundaries it draws.

Why all pairs and not neighbours: chaining neighbours (WMT before 2019, this board before) puts a run
in the cluster above whenever it is close to the last run of that cluster, so a cluster's first and
last runs may differ significantly and a boundary says nothing about runs further apart. Here, as in
WMT's human rankings since 2019, a boundary between positions k and k+1 is drawn only when *every* run
at or above k differs significantly from *every* run below it. So a run's cluster is a statement about
all runs: anything in a higher cluster beats it, anything in a lower one it beats.

Why a correction: one boundary is a claim about several pairs (an intersection–union test: its p is
the largest p of the pairs it separates, no correction needed within it), but a board draws up to
n − 1 boundaries, and each one is a claim a reader may quote. Holm–Bonferroni over those n − 1
boundary p-values keeps the chance of any false boundary on a board at most ``alpha``; it is
uniformly more powerful than Bonferroni and needs no assumption about how the tests depend.

Pure and deterministic: the caller gives the runs' order and a p-value per pair (by index), so
``bench table`` (from stored outputs) and ``bench table --check --deep`` (from stored pairs) form
clusters with this one function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: significance level of the whole board's family of boundaries (family-wise, after Holm)
ALPHA = 0.05


@dataclass(frozen=True)
class Boundary:
    """The line that may separate position ``k`` (0-based) from ``k + 1``."""

    k: int
    p: float  # the largest p over the pairs (a, b), a <= k < b: the boundary's intersection–union p
    p_holm: float  # after Holm–Bonferroni over every boundary of the group
    drawn: bool  # p_holm < alpha: the runs above beat the runs below


@dataclass(frozen=True)
class Clustering:
    """Clusters as (first, last) 0-based positions, best first, and every boundary considered."""

    spans: tuple[tuple[int, int], ...]
    boundaries: tuple[Boundary, ...]

    def span_of(self, i: int) -> tuple[int, int]:
        return next(s for s in self.spans if s[0] <= i <= s[1])


def holm(pvalues: list[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order (step-down, monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: (pvalues[i], i))
    out = [1.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * pvalues[i]))
        out[i] = running
    return out


def form_clusters(n: int, p: Callable[[int, int], float], alpha: float = ALPHA) -> Clustering:
    """Cluster ``n`` runs sorted best first, given ``p(a, b)`` (a < b) for every pair.

    Boundary k's p is ``max p(a, b)`` over a <= k < b; the boundaries Holm rejects at ``alpha`` are
    drawn. n(n − 1)/2 pair tests, each asked once."""
    if n <= 0:
        return Clustering((), ())
    pairs = {(a, b): p(a, b) for a in range(n) for b in range(a + 1, n)}
    raw = [max(pairs[a, b] for a in range(k + 1) for b in range(k + 1, n)) for k in range(n - 1)]
    adjusted = holm(raw)
    boundaries = tuple(Boundary(k, raw[k], adjusted[k], adjusted[k] < alpha) for k in range(n - 1))
    spans: list[tuple[int, int]] = []
    start = 0
    for b in boundaries:
        if b.drawn:
            spans.append((start, b.k))
            start = b.k + 1
    spans.append((start, n - 1))
    return Clustering(tuple(spans), boundaries)
