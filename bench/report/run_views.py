"""Views over every record rather than a paper table: each run under every recipe, and the run list.

Split from :mod:`bench.report.views` (which joins paper tables with records): these two list records
as they are, so they share nothing with the table layout but the :class:`TableView` they fill.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.report.cells import distinct_cell, fmt_num
from bench.report.ranking import Headline, headline, metric_label
from bench.report.views import METRIC_ORDER, TableView


def _metric_keys(records: Sequence[dict]) -> list[str]:
    keys = {k for r in records for s in r["scores"].values() for k in s["metrics"]}
    return [k for k in METRIC_ORDER if k in keys] + sorted(keys - set(METRIC_ORDER))


def _run_sort_key(rec: dict) -> tuple:
    s = rec["spec"]
    return (s["task"], s["split"], s["system"], s["budget"], rec["run_id"])


def build_protocol_view(records: Sequence[dict]) -> TableView:
    """Every recorded run under every recipe it was scored with, plus the spread between recipes."""
    recs = sorted(records, key=_run_sort_key)
    keys = _metric_keys(recs)
    header = ["Run", "System", "Task/split", "Budget", "Recipe"] + keys + ["Signature"]
    rows: list[list[str]] = []
    for rec in recs:
        s = rec["spec"]
        base = [rec["run_id"], s["system"], f"{s['task']}/{s['split']}", s["budget"]]
        for recipe in sorted(rec["scores"]):
            sc = rec["scores"][recipe]
            vals = [fmt_num(sc["metrics"][k]) if k in sc["metrics"] else "" for k in keys]
            rows.append(base + [recipe] + vals + [sc["signature"]])
        if len(rec["scores"]) > 1:
            spread = []
            for k in keys:
                got = [sc["metrics"][k] for sc in rec["scores"].values() if k in sc["metrics"]]
                spread.append(fmt_num(max(got) - min(got)) if len(got) > 1 else "")
            rows.append(base + ["spread (max − min)"] + spread + [""])
    preamble = [
        "The same outputs of each recorded run under every recipe it was scored with (metrics ×100, "
        "2 decimals). The spread row is how far the choice of evaluation script alone moves each metric.",
        "Rebuild with `bench table`; to add a recipe, re-score the stored outputs (`bench score`).",
    ]
    if not recs:
        preamble.append("No complete run records yet.")
    return TableView(
        key="protocol-sensitivity",
        title="Every run under every recipe",
        preamble=preamble,
        header=header,
        rows=rows,
    )


def headline_cell(rec: dict, records: Sequence[dict], heads: dict[str, Headline | None]) -> str:
    """The run's number on its task's leaderboard: ``BLEU-4 23.31 (mist-quora)``; "" when it has none (``heads``
    caches each task's :func:`bench.report.ranking.headline`)."""
    task = rec["spec"]["task"]
    if task not in heads:
        heads[task] = headline(task, [r for r in records if r["spec"]["task"] == task])
    head = heads[task]
    value = head.value(rec) if head is not None else None
    if head is None or value is None:
        return ""
    return f"{metric_label(head.metric)} {fmt_num(value)} ({head.recipe})"


def drop_empty_columns(header: list[str], rows: list[list[str]], keep: int = 1) -> tuple[list[str], list[list[str]]]:
    """``header`` and ``rows`` without the columns no row fills (the first ``keep`` always stay): an always-empty
    column only takes width (a phone's most of all)."""
    filled = [i for i in range(len(header)) if i < keep or any(row[i] for row in rows)]
    return [header[i] for i in filled], [[row[i] for i in filled] for row in rows]


def build_runs_view(records: Sequence[dict]) -> TableView:
    """One line per recorded run: identity, its headline score (the one its task's leaderboard ranks by), size,
    speed and where it ran."""
    heads: dict[str, Headline | None] = {}
    header = [
        "Run",
        "System",
        "Headline score",
        "Family",
        "Backbone",
        "Task/split",
        "Budget",
        "Examples",
        "Distinct outputs",
        "Speedup",
        "p50 ms",
        "Device",
        "Latency valid",
    ]
    rows = []
    for rec in sorted(records, key=_run_sort_key):
        s = rec["spec"]
        info = rec.get("system") or {}
        data = rec.get("data") or {}
        lat = rec.get("latency") or {}
        stats = lat.get("stats") or {}
        n = data.get("n_examples")
        rows.append(
            [
                rec["run_id"],
                s["system"],
                headline_cell(rec, records, heads),
                str(info.get("family", "")),
                str(info.get("backbone", "")),
                f"{s['task']}/{s['split']}",
                s["budget"],
                ("" if n is None else str(n)) + (" (partial)" if data.get("partial") else ""),
                distinct_cell(rec),
                f"{fmt_num(lat['speedup_mean'])}×" if lat.get("speedup_mean") is not None else "",
                fmt_num(stats["p50_ms"]) if isinstance(stats.get("p50_ms"), (int, float)) else "",
                str(lat.get("device", "")),
                ("yes" if lat.get("valid", True) else "no") if lat else "",
            ]
        )
    kept, rows = drop_empty_columns(header, rows, keep=3)
    dropped = [h for h in header if h not in kept]
    return TableView(
        key="runs",
        title="Recorded runs",
        preamble=["Every complete record under `results/`. Headline score: the number its task's leaderboard "
                  "ranks by (×100; its recipe in parentheses; `bench show RUN_ID` gives its CI)."
                  + (f" Left out, as no run fills them: {', '.join(dropped)}." if dropped else "")],
        header=kept,
        rows=rows,
    )


