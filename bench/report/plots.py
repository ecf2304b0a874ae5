"""Speed–quality Pareto plots per task and the iterations curve of the table the papers mark (MIST Table 6).

Each plot is made from a plain-data dict that is also written as a JSON sidecar next to the PNG;
``bench table --check`` compares the sidecars (PNG bytes depend on the matplotlib/freetype build).
matplotlib is imported only when drawing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.papers import Table, all_tables, get_table, leading_number, load_paper, parse_table_ref
from bench.papers.matching import DEFAULT_BUDGETS, matched_values, reported_points

FALLBACK_METRICS = ("bleu4", "rouge2", "rougeL")
#: the smallest text in a plot (point labels, legends), in points: 7.5 pt is 10 px at the 100 dpi the PNGs are
#: drawn at, and the pages show a plot at its natural size on a phone (scrolling in its box), never shrunk to 6 px
SMALL_PT = 7.5
RC = {
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlesize": 10,
    "lines.linewidth": 1.2,
    "svg.hashsalt": "bench",
    "path.simplify": False,
    "text.parse_math": False,  # a label is data: a system name with two $ is not TeX (nor a crash)
}


#: the largest magnitude a plotted number may have (scores are 0-100, speed-ups and losses far below): past it
#: matplotlib cannot lay out an axis (a calibration score of 1e308 was a traceback in its tick locator)
PLOTTABLE = 1e9


class Unplottable(UserError, ValueError):
    """A number a plot would draw that is not finite or is absurdly large; the message names the record (a path
    under the results folder, made whole by :meth:`at`), the field and the fix."""

    def __init__(self, rel: str, what: str, value: Any, results_dir: Path | str = "results") -> None:
        self.rel, self.what, self.value = rel, what, value
        super().__init__(f"{Path(results_dir) / rel}: {what} is {value!r}, which no plot can draw (not a finite "
                         f"number within ±{PLOTTABLE:g}). Fix: correct that record, or delete it, and run "
                         "`bench table` again.")

    def at(self, results_dir: Path | str) -> Unplottable:
        """The same error naming the record inside ``results_dir``."""
        return Unplottable(self.rel, self.what, self.value, results_dir)


class _NotPlottable(ValueError):
    pass


def _r(x: float) -> float:
    """``x`` rounded for a sidecar; not a finite number within :data:`PLOTTABLE` raises (the caller names it)."""
    try:
        value = float(x)
    except (TypeError, ValueError, OverflowError):
        raise _NotPlottable(x) from None
    if not math.isfinite(value) or abs(value) > PLOTTABLE:
        raise _NotPlottable(x)
    return round(value, 6)


def frontier(points: Sequence[dict]) -> list[str]:
    """Labels of the points no other point beats on both speedup and quality (higher is better)."""
    best: list[str] = []
    top = float("-inf")
    for p in sorted(points, key=lambda p: (-p["x"], -p["y"], p["label"])):
        if p["y"] > top:
            best.append(p["label"])
            top = p["y"]
    return best


def published_pareto() -> dict[str, tuple[Table, str, str]]:
    """task -> (table, quality group, metric) whose published points its plot overlays: the groups the papers'
    YAML marks ``pareto:`` (one per task)."""
    found: dict[str, tuple[Table, str, str]] = {}
    for table in all_tables():
        for group in table.quality_groups():
            if group.pareto and group.task:
                if group.task in found:
                    raise ValueError(f"{table.ref} and {found[group.task][0].ref} both mark a pareto group for "
                                     f"{group.task}; mark one")
                found[group.task] = (table, group.id, group.pareto)
    return found


def pareto_tasks(records: Sequence[dict]) -> list[str]:
    timed = {r["spec"]["task"] for r in records if (r.get("latency") or {}).get("speedup_mean") is not None}
    return sorted(set(published_pareto()) | timed)


def pareto_data(task: str, records: Sequence[dict]) -> dict[str, Any]:
    """Published points (if a paper table marks a group of the task ``pareto:``) and our timed runs for one task."""
    paper_pts: list[dict] = []
    source = None
    published = published_pareto()
    if task in published:
        table, gid, metric = published[task]
        recipe = table.group(gid).recipe
        source = table.ref
        paper_pts = [
            {"label": lab, "x": _r(x), "y": _r(y)} for lab, x, y in reported_points(table, gid, metric)
        ]
    else:
        recipe, metric = None, None
    runs, omitted = [], []
    for rec in sorted((r for r in records if r["spec"]["task"] == task and r.get("kind") != "external"),
                      key=lambda r: r["run_id"]):  # submissions have no speed to plot
        rec_recipe = recipe or sorted(rec["scores"])[0]
        rec_metric = metric or next(
            (m for m in FALLBACK_METRICS if m in rec["scores"][rec_recipe]["metrics"]), None
        )
        lat = rec.get("latency") or {}
        sc = rec["scores"].get(rec_recipe)
        if lat.get("speedup_mean") is None:
            omitted.append({"run_id": rec["run_id"], "reason": "no measured speedup"})
        elif sc is None or rec_metric is None or rec_metric not in sc["metrics"]:
            omitted.append({"run_id": rec["run_id"], "reason": f"not scored with recipe {rec_recipe}"})
        else:
            try:
                x, y = _r(lat["speedup_mean"]), _r(sc["metrics"][rec_metric])
            except _NotPlottable as exc:
                raise Unplottable(f"{rec['run_id']}.json", f"its speed-up or {rec_metric}", exc.args[0]) from None
            runs.append(
                {
                    "label": f"{rec['spec']['system']} ({rec['spec']['budget']})",
                    "run_id": rec["run_id"],
                    "x": x,
                    "y": y,
                    "device": str(lat.get("device", "")),
                }
            )
            recipe, metric = recipe or rec_recipe, metric or rec_metric
    return {
        "kind": "pareto",
        "task": task,
        "metric": metric,
        "recipe": recipe,
        "paper_source": source,
        "x_label": "speedup over the AR baseline (×, batch 1)",
        "paper": paper_pts,
        "runs": runs,
        "frontier_paper": frontier(paper_pts),
        "frontier_runs": frontier(runs),
        "omitted": omitted,
    }


def iterations_table() -> Table | None:
    """The table the papers' YAML marks ``plot: iterations`` (MIST Table 6), if any."""
    return next((t for t in all_tables() if t.plot == "iterations"), None)


def iterations_name(table: Table) -> str:
    """The file stem of ``table``'s iterations plot (``mist-table6-iterations``)."""
    return f"{table.paper}-table{table.id}-iterations"


def iterations_caption(table: Table) -> str:
    return f"{load_paper(table.paper).short} Table {table.id}: {table.title}"


def iterations_data(records: Sequence[dict], budget: str | None, table: Table) -> dict[str, Any]:
    """Metric per number of decoding iterations, published and reproduced, for ``table``."""
    budgets = (budget,) if budget else DEFAULT_BUDGETS
    panels: list[dict[str, Any]] = []
    for g in table.quality_groups():
        col = g.columns[0]
        series: dict[str, list[dict]] = {}
        got_by_row = matched_values(records, table, g, col.metric, budgets) if col.metric else {}
        for row in table.rows:
            it = leading_number(row.reported.get("iter"))
            val = leading_number(row.reported.get(col.id))
            if it is not None and val is not None:
                series.setdefault(f"{row.label} (paper)", []).append({"x": _r(it), "y": _r(val)})
            got = got_by_row.get(row.id)
            if it is not None and got is not None:
                try:
                    point = {"x": _r(it), "y": _r(got[0])}
                except _NotPlottable as exc:
                    raise Unplottable("", f"the {col.metric} of the run matched to {table.ref} row {row.id}",
                                      exc.args[0]) from None
                series.setdefault(f"{row.label} ({got[1]})", []).append(point)
        panels.append(
            {
                "group": g.id,
                "title": col.label,
                "task": g.task,
                "recipe": g.recipe,
                "series": [
                    {"name": k, "points": sorted(v, key=lambda p: p["x"])} for k, v in sorted(series.items())
                ],
            }
        )
    return {"kind": "iterations", "source": table.ref, "x_label": "decoding iterations", "panels": panels}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def draw_pareto(data: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(7.5, 5.0))
        for key, style, name in (
            (
                "paper",
                dict(marker="o", facecolors="none", edgecolors="tab:gray"),
                f"published ({data['paper_source']}, V100)",
            ),
            ("runs", dict(marker="s", color="tab:blue"), "our runs"),
        ):
            pts = data[key]
            if not pts:
                continue
            ax.scatter([p["x"] for p in pts], [p["y"] for p in pts], label=name, **style)
            for p in pts:
                ax.annotate(
                    p["label"], (p["x"], p["y"]), textcoords="offset points", xytext=(3, 3), fontsize=SMALL_PT
                )
            front = [p for p in sorted(pts, key=lambda p: p["x"]) if p["label"] in data[f"frontier_{key}"]]
            if len(front) > 1:
                ax.plot(
                    [p["x"] for p in front],
                    [p["y"] for p in front],
                    linestyle="--",
                    color="tab:gray" if key == "paper" else "tab:blue",
                )
        ax.set_xlabel(data["x_label"])
        ax.set_ylabel(f"{data['metric'] or 'quality'} (recipe {data['recipe'] or '?'})")
        ax.set_title(f"Speed–quality trade-off: {data['task']}")
        if data["paper"] or data["runs"]:
            ax.legend(loc="lower left")
        else:
            ax.text(0.5, 0.5, "no points yet", ha="center", transform=ax.transAxes)
        fig.tight_layout()
        fig.savefig(path, format="png", metadata={"Software": None})
        plt.close(fig)


def draw_iterations(data: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    with plt.rc_context(RC):
        fig, axes = plt.subplots(1, len(data["panels"]), figsize=(4.0 * len(data["panels"]), 3.6))
        for ax, panel in zip(list(axes), data["panels"], strict=True):
            for s in panel["series"]:
                dashed = not s["name"].endswith("(paper)")
                ax.plot(
                    [p["x"] for p in s["points"]],
                    [p["y"] for p in s["points"]],
                    marker="o",
                    linestyle="--" if dashed else "-",
                    label=s["name"],
                )
            ax.set_title(panel["title"])
            ax.set_xlabel(data["x_label"])
            ax.set_xticks(sorted({p["x"] for s in panel["series"] for p in s["points"]}))
            ax.legend(fontsize=SMALL_PT)
        fig.suptitle(iterations_caption(get_table(*parse_table_ref(data["source"]))))
        fig.tight_layout()
        fig.savefig(path, format="png", metadata={"Software": None})
        plt.close(fig)


def calibration_data(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary's sweeps (bench.workflows.calibrate) as lines of dev score vs updates, one per learning rate and
    setting (the overrides that set a sweep apart from the rest, e.g. a decoding setting). A number no plot can
    draw is :class:`Unplottable`, naming the summary's file (``calibration/<system>--<task>--<budget>.json``)."""
    rel = f"calibration/{summary.get('system')}--{summary.get('task')}--{summary.get('budget')}.json"
    try:
        return _calibration_data(summary)
    except _NotPlottable as exc:
        raise Unplottable(rel, "a point's score, updates or dev loss", exc.args[0]) from None


def _calibration_data(summary: dict[str, Any]) -> dict[str, Any]:
    from bench.workflows.calibrate import point_setting

    series: dict[tuple[float, str], list[dict[str, Any]]] = {}
    pick = summary.get("pick")
    pick_xy = None
    for pt in summary["points"]:
        if pt["score"] is None:
            continue
        _r(pt["updates"]), _r(pt["lr"])
        series.setdefault((pt["lr"], point_setting(pt, summary)), []).append(
            {"x": pt["updates"], "y": _r(pt["score"]), "degenerate": bool(pt["degenerate"])}
        )
        if pick and pt["run_id"] == pick.get("run_id"):
            pick_xy = {"x": pt["updates"], "y": _r(pt["score"])}
    return {
        "title": f"{summary['system']} on {summary['task']} ({summary['budget']}): calibration",
        "x_label": "updates",
        "y_label": f"dev {summary['metric']} ({summary['recipe']}, first {summary['dev_examples']} {summary['split']})",
        "series": [
            {"name": f"lr {lr:g}" + (f" · {setting}" if setting else ""), "points": sorted(pts, key=lambda p: p["x"])}
            for (lr, setting), pts in sorted(series.items())
        ],
        "pick": dict(pick, **pick_xy) if pick and pick_xy else pick,
        "loss_series": _loss_series(summary),
    }


def _loss_series(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """One dev-loss line per trained model: points that decode one model (a decoding sweep) share its
    curve, drawn once and named by what those points have in common."""
    from bench.workflows.calibrate import point_settings

    groups: dict[tuple, list[dict[str, Any]]] = {}
    for pt in summary["points"]:
        curve = pt.get("dev_loss_curve")
        if curve:
            groups.setdefault(tuple(tuple(p) for p in curve), []).append(pt)
    series = []
    for curve, pts in groups.items():
        settings = [set(point_settings(p, summary)) for p in pts]
        common = sorted(set.intersection(*settings))
        first = pts[0]
        name = f"lr {first['lr']:g} · {first['updates']} updates" + (f" · {', '.join(common)}" if common else "")
        series.append({"name": name, "points": [{"x": int(_r(u)), "y": _r(loss)} for u, loss in curve]})
    return sorted(series, key=lambda s: s["name"])


def draw_calibration(data: dict[str, Any], path: Path) -> None:
    """Learning curves of a sweep; hollow markers are degenerate points, the star is the pick; beside
    them, each trained model's dev loss (where a plateau shows)."""
    plt = _pyplot()
    losses = data.get("loss_series") or []
    with plt.rc_context(RC):
        if losses:
            fig, (ax, loss_ax) = plt.subplots(1, 2, figsize=(9.0, 3.6))
            for s in losses:
                loss_ax.plot([p["x"] for p in s["points"]], [p["y"] for p in s["points"]], label=s["name"])
            loss_ax.set_title("dev loss of each trained model")
            loss_ax.set_xlabel(data["x_label"])
            loss_ax.set_ylabel("dev loss")
            loss_ax.legend(fontsize=SMALL_PT)
        else:
            fig, ax = plt.subplots(figsize=(5.0, 3.6))
        for s in data["series"]:
            xs, ys = [p["x"] for p in s["points"]], [p["y"] for p in s["points"]]
            (line,) = ax.plot(xs, ys, marker="o", label=s["name"])
            bad = [p for p in s["points"] if p["degenerate"]]
            if bad:
                ax.scatter([p["x"] for p in bad], [p["y"] for p in bad], s=60, facecolors="white",
                           edgecolors=line.get_color(), zorder=3)
        pick = data.get("pick")
        if pick and "y" in pick:
            ax.scatter([pick["x"]], [pick["y"]], marker="*", s=160, color="black", zorder=4, label="pick")
        ax.set_title(data["title"])
        ax.set_xlabel(data["x_label"])
        ax.set_ylabel(data["y_label"], fontsize=8)
        ax.legend(fontsize=SMALL_PT)
        fig.tight_layout()
        fig.savefig(path, format="png", metadata={"Software": None})
        plt.close(fig)
