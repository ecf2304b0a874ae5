"""Cell text of the rendered tables: fixed number formats (so ``--check`` can compare text exactly)
and the quality / speed cells with their budget label and degeneracy flag."""

from __future__ import annotations

from typing import Any

from bench.papers import leading_number
from bench.papers.matching import Match, is_partial
from bench.scoring.output_stats import degeneracy

RECIPE_MARK = "‡"


# --- number formatting (fixed, so --check can compare text exactly) ----------------------------
def fmt_num(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def fmt_delta(x: float, digits: int = 2, unit: str = "") -> str:
    text = f"{abs(x):.{digits}f}"
    if float(text) == 0.0:
        return f"±{text}{unit}"
    return f"{'+' if x > 0 else '−'}{text}{unit}"


def fmt_iterations(x: Any) -> str:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return str(int(x)) if float(x).is_integer() else fmt_num(float(x))
    return str(x)


# --- cells --------------------------------------------------------------------------------------
def _budget_label(m: Match) -> str:
    return f"({m.budget}, partial)" if is_partial(m.record) else f"({m.budget})"


DEGENERATE_MARK = "⚠ degenerate"


def degenerate_flag(rec: dict) -> str:
    """A visible flag after a run's number when its outputs are degenerate (bench.scoring.output_stats)."""
    return f" {DEGENERATE_MARK}" if degeneracy(rec.get("output_stats")) else ""


def quality_cell(reported: str, m: Match, recipe: str, metric: str) -> str:
    value = m.record["scores"][recipe]["metrics"].get(metric)
    rep = reported or "–"
    if value is None:
        return f"{rep} / no {metric} {_budget_label(m)}"
    ref = leading_number(reported)
    delta = fmt_delta(value - ref) if ref is not None else "n/a"
    return f"{rep} / {fmt_num(value)} {_budget_label(m)}{degenerate_flag(m.record)} / {delta}"


def latency_cell(reported: str, m: Match, metric: str) -> str:
    rep = reported or "–"
    lat = m.record.get("latency")
    if not lat:
        return f"{rep} / not timed {_budget_label(m)}"
    invalid = "" if lat.get("valid", True) else " INVALID"
    if metric == "speedup":
        value = lat.get("speedup_mean")
        if value is None:
            return f"{rep} / no baseline {_budget_label(m)}{invalid}"
        ref = leading_number(reported)
        delta = fmt_delta(value - ref, unit="×") if ref is not None else "n/a"
        return f"{rep} / {fmt_num(value)}× {_budget_label(m)}{invalid} / {delta}"
    stats = lat.get("stats") or {}
    iters = stats.get("mean_iterations")
    if iters is None:
        iters = (m.record.get("system") or {}).get("iterations", "?")
    ref = leading_number(reported)
    shown = fmt_iterations(iters)
    if ref is not None and isinstance(iters, (int, float)) and not isinstance(iters, bool):
        digits = 0 if float(iters).is_integer() and ref.is_integer() else 2
        delta = fmt_delta(float(iters) - ref, digits)
    else:
        delta = "n/a"
    return f"{rep} / {shown} {_budget_label(m)}{invalid} / {delta}"


def distinct_cell(rec: dict) -> str:
    stats = rec.get("output_stats")
    if not stats or not stats.get("n"):
        return ""
    return f"{stats['distinct_ratio']:.1%} (refs {stats['reference_distinct_ratio']:.1%}){degenerate_flag(rec)}"
