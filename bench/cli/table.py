"""`bench table`: the paper tables (reported vs reproduced), plots and leaderboards under reports/."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from bench.api.paths import REPO_ROOT
from bench.cli import common as ui
from bench.cli.common import EvidenceDir


@ui.app.command("table")
def table_cmd(
    paper: Annotated[str | None, typer.Option(help="mist | copybert | erniegen (default: all).")] = None,
    table: Annotated[str | None, typer.Option(help="Table number (default: all of the paper).")] = None,
    budget: Annotated[str | None, typer.Option(help="Only runs of this budget.")] = None,
    check: Annotated[bool, typer.Option(help="Fail if committed reports/ differ from the records.")] = False,
    deep: Annotated[bool, typer.Option(help="With --check: also recompute every score, p-value, rank cluster, "
                                       "latency aggregate and speed-up from the stored outputs, splits and "
                                       "timings, and fail on any difference (minutes).")] = False,
    jobs: Annotated[int | None, typer.Option(min=1, help="--deep: scoring processes (default: the usable CPUs, "
                                             "at most 4).")] = None,
    results_dir: EvidenceDir = None,
    fmt: Annotated[str, typer.Option("--format", help="--paper: text (a table that fits the terminal) | md (the "
                                     "markdown reports/ holds, with its notes).")] = "text",
    reports_dir: Annotated[Path, typer.Option(
        show_default=False, help="Generated reports (default: the checkout's reports/).")] = REPO_ROOT / "reports",
    prune: Annotated[bool, typer.Option("--prune", help="Allow the rewrite to delete report files and drop runs "
                                        "that reports/ shows today (refused otherwise: a typo'd --results-dir "
                                        "or a --budget filter would wipe them).")] = False,
) -> None:
    """Render paper tables (reported vs reproduced, with Δ), plots and the HTML leaderboard into reports/, from the
    committed results/ (never the workspace); `--paper P --table N` prints one table (with your workspace's runs)."""
    from bench import report
    from bench.runs.folders import evidence_dir

    if fmt not in ("text", "md"):
        ui.fail(f"--format {fmt}: give text or md.")
    if paper:
        _print_paper(paper, table, budget, results_dir, fmt)
        return
    if table:
        ui.fail("--table needs --paper (e.g. --paper mist --table 1).")
    if deep and not check:
        ui.fail("--deep needs --check (e.g. `bench table --check --deep`).")
    source = evidence_dir(results_dir)
    changed: list[Path] = []
    result = report.render_all(source, reports_dir, check=check, budget=budget, prune=prune, changed=changed)
    if check:
        if result:
            for stale in result:  # one line each, above the error line (which is one line)
                ui.err_console.print(ui.plain(ui.shown(stale)))
            ui.fail(f"reports/ is stale ({len(result)} file(s), listed above); run `bench table` and commit.", code=1)
        ui.console.print("[green]reports/ matches results/[/]")
        if deep:
            _render_deep(source, jobs)
        return
    _print_summary(result, changed, source, reports_dir)


#: changed files named one by one; the rest are counted by kind (a first `bench table` writes about 30)
SHOWN = 10


def _print_summary(files: list, changed: list[Path], source: Path, reports_dir: Path) -> None:
    """One summary of a rewrite: where from and to, each file that changed ("wrote"), how many did not."""
    from bench.env.term_layout import print_words
    from bench.runs.folders import folders, label, sections

    print_words(ui.console, f"bench table: {ui.shown(reports_dir)}/ from {label(source)}")
    for path in changed[:SHOWN]:
        print_words(ui.console, f"{'wrote' if path.exists() else 'removed'} {ui.shown(path)}")
    if len(changed) > SHOWN:
        rest = Counter(p.suffix or p.name for p in changed[SHOWN:])
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(rest.items(), key=lambda kv: (-kv[1], kv[0])))
        ui.console.print(ui.plain(f"... and {len(changed) - SHOWN} more changed files ({kinds})"))
    same = len([p for p in files if p not in set(changed)])
    ui.console.print(ui.plain(f"{len(changed)} file(s) changed, {same} unchanged (left byte-identical)."))
    workspace = folders(None)
    mine = [r for folder, recs in sections(workspace) if folder == workspace.write for r in recs]
    if mine and source.resolve() != workspace.write.resolve():
        print_words(ui.console, f"Not on these boards: {len(mine)} run(s) of {label(workspace.write)}; `bench "
                    "promote RUN_ID` copies one into results/.", style="dim")
    print_words(ui.console, f"Open {ui.shown(reports_dir)}/index.html; every run under every recipe: "
                f"{ui.shown(reports_dir)}/protocol-sensitivity.md.", style="dim")


def _print_paper(paper: str, table: str | None, budget: str | None, results_dir: Path | None, fmt: str) -> None:
    """One paper table (or every table of the paper) from the committed runs and your workspace's: a terminal
    table (:mod:`bench.report.term_table`), or its markdown with --format md; reports/ is untouched."""
    from bench.api.errors import UserError
    from bench.report.term_table import paper_markdown, renderables
    from bench.runs.folders import folders, load_all

    where = folders(results_dir)
    try:
        tables = paper_markdown(paper, table, budget, load_all(where), where.read[-1])
    except (UserError, KeyError, ValueError) as exc:
        ui.fail(str(exc))
    for i, (table_id, text) in enumerate(tables):
        if fmt == "md":
            typer.echo(text)
            continue
        if i:
            ui.console.line()
        source = f"`bench table --paper {paper} --table {table_id} --format md`"
        for part in renderables(text, ui.console.width, source):
            ui.console.print(part)


def _render_deep(results_dir: Path, jobs: int | None) -> None:
    """Run the deep check with a progress bar per stage; one line per difference, then exit 1 on any."""
    import time

    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bench.report.deep import deep_check

    started = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("[dim]{task.fields[what]}", markup=True))
    with Progress(*columns, console=ui.err_console, transient=True) as bar:
        ids: dict[str, object] = {}

        def step(stage: str, done: int, total: int, what: str) -> None:
            if not ui.err_console.is_terminal:  # a CI log: one line per item instead of a live bar
                ui.err_console.print(f"deep: {stage} {done}/{total} {what}", markup=False, highlight=False)
                return
            if stage not in ids:
                ids[stage] = bar.add_task(f"deep: {stage}", total=total, what="")
            bar.update(ids[stage], completed=done, total=total, what=escape(what))  # type: ignore[arg-type]

        result = deep_check(results_dir, jobs=jobs, progress=step)
    for note in result.notes:
        ui.err_console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    took = f"{time.perf_counter() - started:.0f} s"
    done = ", ".join(f"{n} {what}" for what, n in result.counts.items())
    if not result.ok:
        lines = "\n".join(f"- {d}" for d in result.differences)
        ui.err_console.print(f"error: {len(result.differences)} stored number(s) differ from what their inputs "
                             f"give ({took}); restore the files (git) or re-run them, never edit the numbers:\n"
                             f"{lines}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    ui.console.print(f"[green]every number re-derived from its inputs[/] ({done}; {took})")

