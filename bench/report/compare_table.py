"""What ``bench compare`` prints for one recipe: a, b, Δ = a − b with its interval, and both p-values.

Why a separate, pure module: the numbers come from :func:`bench.scoring.compare` (whose JSON
``--json`` prints unchanged, with ``delta`` = a − b as here); this only turns them into rows, with the sign
the header states, so the tests check the cells without a terminal.
"""

from __future__ import annotations

from typing import Any

from bench.report.ranking import ALPHA, metric_label

HEADER = ("metric", "a", "b", "Δ (a − b)", "95% CI of Δ", "p_bootstrap", "p_AR")


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}" if value >= 0.001 else "<0.001"
    return text + (" *" if value < ALPHA else "")


def compare_rows(result: dict[str, Any]) -> list[list[str]]:
    """One row per metric of a :func:`bench.scoring.compare` result (scores ×100, 2 decimals)."""
    rows = []
    for metric, m in result["metrics"].items():
        ci = m.get("ci95_a_minus_b")
        rows.append([
            metric_label(metric),
            f"{m['a']:.2f}",
            f"{m['b']:.2f}",
            f"{m['a'] - m['b']:+.2f}",
            f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "–",
            _p(m.get("p_bootstrap")),
            _p(m.get("p_ar")),
        ])
    return rows


def caption(result: dict[str, Any], name_a: str, name_b: str) -> str:
    """The title line of one recipe's table: which runs are a and b, and over how many items."""
    return f"recipe {result['recipe']}: a = {name_a}, b = {name_b}; {result['n_items']:,} paired items"


FOOTNOTE = (f"* p < {ALPHA}. Δ is a − b (so is the JSON's `delta`); the CI is of a − b over the paired "
            "bootstrap's resamples (1,000 by default); p_bootstrap: paired bootstrap, p_AR: approximate "
            "randomisation (sacreBLEU's tests).")
