"""Regenerate (or check) everything under reports/ from results/ and bench/papers/.

Outputs are deterministic (sorted records, fixed number formats, no timestamps), so
``check=True`` can compare the committed markdown, HTML and plot sidecars byte for byte.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.api.atomic import atomic_path, write_text_atomic
from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR
from bench.api.reading import read_text
from bench.papers import all_tables, get_table, load_paper, normalize_paper
from bench.report import html as html_mod
from bench.report import markdown as md
from bench.report import plots
from bench.report.run_views import build_protocol_view, build_runs_view
from bench.report.views import TableView, build_table_view, table_key
from bench.store.calibration import load_summaries
from bench.store.latency import load_latency_records
from bench.store.orderings import load_orderings
from bench.store.pvalues import PValues, pvalues_file
from bench.store.records import load_records, require_dir

#: Names render_all owns in reports/; anything else there is left alone (and never flagged).
OWNED = re.compile(
    r"^([a-z]+-table\w+\.md|pareto-[\w.-]+\.(png|json)|mist-table6-iterations\.(png|json)"
    r"|calibration-[\w.-]+\.(png|json)|index\.html|leaderboard-[\w.-]+\.html|protocol-sensitivity\.md)$"
)


#: a run id as reports print it: ``<system>--<task>--<split>--<budget>--[s<seed>--]<8 hex>`` (the hex: its spec hash)
RUN_ID = re.compile(r"[\w.+-]+?--[\w]+--[\w-]+?--[a-z]+--(?:s\d+--)?([0-9a-f]{8})(?![\w])")


class ReportDropError(UserError):
    """``bench table`` would delete report files or drop recorded runs that reports/ shows today."""


class ReportCheckError(AssertionError):
    """reports/ differs from what the records produce; the message lists each file and a diff."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__(
            "reports/ is out of date with results/ and bench/papers/ (run `bench table` and commit):\n"
            + "\n".join(self.problems)
        )


def render_table(
    paper: str,
    table: str,
    records: list[dict],
    budget: str | None = None,
    latency_records: Sequence[dict] = (),
    orderings: Sequence[dict] = (),
    calibrations: Sequence[dict] = (),
) -> str:
    """Markdown for one paper table joined with ``records`` and ``latency_records`` (:mod:`bench.report.views`)."""
    t = get_table(normalize_paper(paper), table)
    return md.document([build_table_view(t, records, budget, latency_records, orderings, calibrations)])


def _sidecar(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _plan(
    records: list[dict],
    budget: str | None,
    latency_records: Sequence[dict] = (),
    calibrations: Sequence[dict] = (),
    orderings: Sequence[dict] = (),
    pvalues: Any = None,
) -> tuple[dict[str, str], dict[str, tuple[Callable, dict]]]:
    """Every text file (name -> content) and every PNG (name -> (drawer, data)) to produce; ``pvalues``: the
    leaderboards' stored p-values (:class:`bench.store.pvalues.PValues`)."""
    texts: dict[str, str] = {}
    pngs: dict[str, tuple[Callable, dict]] = {}
    views: list[TableView] = []
    for t in all_tables():
        view = build_table_view(t, records, budget, latency_records, orderings, calibrations)
        views.append(view)
        texts[f"{table_key(t)}.md"] = md.document([view])
    protocol = build_protocol_view(records)
    runs = build_runs_view(records)
    texts["protocol-sensitivity.md"] = md.document([protocol, runs], title="Protocol sensitivity")
    images: list[tuple[str, str]] = []
    for task in plots.pareto_tasks(records):
        data = plots.pareto_data(task, records)
        texts[f"pareto-{task}.json"] = _sidecar(data)
        pngs[f"pareto-{task}.png"] = (plots.draw_pareto, data)
        images.append((f"pareto-{task}.png", f"Speed–quality Pareto plot for {task}"))
    iterations = plots.iterations_table()
    if iterations is not None:
        it, stem = plots.iterations_data(records, budget, iterations), plots.iterations_name(iterations)
        texts[f"{stem}.json"] = _sidecar(it)
        pngs[f"{stem}.png"] = (plots.draw_iterations, it)
        short = load_paper(iterations.paper).short
        images.append((f"{stem}.png", f"{short} Table {iterations.id}: iterative decoding"))
    for cal in calibrations:
        name = f"calibration-{cal['system']}--{cal['task']}--{cal['budget']}"
        data = plots.calibration_data(cal)
        texts[f"{name}.json"] = _sidecar(data)
        pngs[f"{name}.png"] = (plots.draw_calibration, data)
        images.append((f"{name}.png", data["title"]))
    from bench.report import leaderboard

    boards = []
    for task in leaderboard.leaderboard_tasks(records):
        texts[f"leaderboard-{task}.html"] = leaderboard.task_page(task, records, latency_records, pvalues=pvalues)
        boards.append((f"leaderboard-{task}.html", task))
    texts["index.html"] = html_mod.page(views + [protocol, runs], images, leaderboards=boards)
    return texts, pngs


def dropped(out: Path, existing: Collection[str], texts: Mapping[str, str], pngs: Collection[str]) -> list[str]:
    """What writing ``texts`` and ``pngs`` into ``out`` would lose: each owned file it would delete, and
    each run id that reports/ shows today (anywhere: a table, the runs list, a plot's sidecar) and the
    new report set shows nowhere."""
    gone = sorted(set(existing) - set(texts) - set(pngs))
    shown_now = _run_ids(out / name for name in existing if name.endswith((".md", ".json", ".html")))
    shown_after = {m.group(1) for text in texts.values() for m in RUN_ID.finditer(text)}
    runs = sorted(rid for digest, rid in shown_now.items() if digest not in shown_after)
    return [f"file {name}" for name in gone] + [f"run {rid}" for rid in runs]


def _run_ids(paths: Any) -> dict[str, str]:
    """spec hash -> the run id printed with it, over the text of ``paths``."""
    return {m.group(1): m.group(0) for p in paths for m in RUN_ID.finditer(read_text(p, errors="replace"))}


def _refuse_drops(losses: Sequence[str], results_dir: Path | str, reports_dir: Path) -> None:
    """One line naming what a rewrite would lose (a typo'd --results-dir or a --budget filter, most often)."""
    if not losses:
        return
    files, runs = sum(x.startswith("file ") for x in losses), sum(x.startswith("run ") for x in losses)
    what = " and ".join(([f"delete {files} report file(s)"] if files else [])
                        + ([f"drop {runs} recorded run(s)"] if runs else []))
    more = f", +{len(losses) - 3} more" if len(losses) > 3 else ""
    shown = ", ".join(x.split(" ", 1)[1] for x in losses[:3]) + more
    raise ReportDropError(
        f"bench table would {what} that {reports_dir} shows today ({shown}), rendering from {results_dir}; "
        "nothing was written. Check --results-dir and --budget, or pass --prune to drop them on purpose."
    )


def render_all(
    results_dir: Path | str, reports_dir: Path | str, check: bool = False, budget: str | None = None,
    prune: bool = False,
) -> list[Path] | list[str]:
    """Write reports/<paper>-table<N>.md, pareto-<task>.png, mist-table6-iterations.png,
    index.html and protocol-sensitivity.md (plus JSON sidecars of the plotted data).

    With ``check=True`` nothing is written and the result is the list of problems (one string
    per file that is missing, different — with a short diff — or stale); empty means reports/ is
    up to date. Callers that want an exception raise :class:`ReportCheckError` with it.

    A rewrite that would delete report files or drop runs reports/ shows today (:func:`dropped`) is
    refused with :class:`ReportDropError` before anything is written, unless ``prune``: a typo'd
    ``--results-dir`` once rewrote reports/ from no records at all. A missing ``results_dir`` is an error.
    """
    records = load_records(require_dir(results_dir))
    out = Path(reports_dir)
    orderings = load_orderings(results_dir)
    pvalues = PValues(pvalues_file(results_dir))
    texts, pngs = _plan(records, budget, load_latency_records(results_dir), load_summaries(results_dir), orderings,
                        pvalues)
    expected = set(texts) | set(pngs)
    existing = (
        {p.name for p in out.iterdir() if p.is_file() and OWNED.match(p.name)} if out.is_dir() else set()
    )
    if check:
        problems: list[str] = []
        for name in sorted(texts):
            path = out / name
            if not path.is_file():
                problems.append(f"- {path}: missing")
                continue
            have = read_text(path, errors="replace")  # bad bytes are a difference, shown as such
            if have != texts[name]:
                diff = list(
                    difflib.unified_diff(
                        have.splitlines(),
                        texts[name].splitlines(),
                        f"{path} (committed)",
                        f"{path} (from records)",
                        lineterm="",
                        n=0,
                    )
                )
                problems.append(f"- {path}: differs\n" + "\n".join(diff[:24]))
        for name in sorted(pngs):
            if not (out / name).is_file():
                problems.append(f"- {out / name}: missing")
        for name in sorted(existing - expected):
            problems.append(f"- {out / name}: stale (no longer produced)")
        from bench.workflows.ordering import stale_orderings

        problems += stale_orderings(orderings, records)
        if pvalues.stale():
            problems.append(f"- {pvalues.path}: not the p-values the leaderboards use (a machine without the data "
                            "could not render them); run `bench table` and commit it")
        return problems
    if not prune:
        _refuse_drops(dropped(out, existing, texts, pngs), results_dir, out)
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(existing - expected):
        (out / name).unlink()
    written = []
    for name, text in sorted(texts.items()):
        path = out / name
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            write_text_atomic(path, text)
        written.append(path)
    for name, (draw, data) in sorted(pngs.items()):
        path = out / name
        with atomic_path(path) as tmp:  # keeps the .png suffix matplotlib reads the format from
            draw(data, tmp)
        written.append(path)
    pvalues.save()
    return sorted(written)


def table_command(
    paper: str | None = None,
    table: str | None = None,
    budget: str | None = None,
    check: bool = False,
    results_dir: Path | str = RESULTS_DIR,
    reports_dir: Path | str = "reports",
    prune: bool = False,
) -> str:
    """What ``bench table`` prints: one table's markdown, or a summary of the regenerated files.

    ``--check`` raises :class:`ReportCheckError` on any difference (the CLI exits non-zero); ``prune``: as
    :func:`render_all`.
    """
    if not check and table is not None and paper is None:
        raise ValueError("--table needs --paper (e.g. --paper mist --table 1).")
    if not check and paper is not None:
        require_dir(results_dir)
        recs, lat, orders = load_records(results_dir), load_latency_records(results_dir), load_orderings(results_dir)
        cals = load_summaries(results_dir)
        if table is not None:
            return render_table(paper, table, recs, budget, lat, orders, cals)
        p = normalize_paper(paper)
        return "\n".join(render_table(p, t.id, recs, budget, lat, orders, cals) for t in all_tables() if t.paper == p)
    if check:
        problems = render_all(results_dir, reports_dir, check=True, budget=budget)
        if problems:
            raise ReportCheckError([str(p) for p in problems])
        return f"reports in {reports_dir} are up to date with {results_dir}"
    paths = render_all(results_dir, reports_dir, budget=budget, prune=prune)
    return f"{len(paths)} report files written in {reports_dir}"
