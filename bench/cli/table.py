"""`bench table`: the paper tables (reported vs reproduced), plots and leaderboards under reports/."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.api.paths import REPO_ROOT
from bench.cli import common as ui
from bench.cli.common import RESULTS_DIR, ResultsDir


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
    results_dir: ResultsDir = RESULTS_DIR,
    reports_dir: Annotated[Path, typer.Option(
        show_default=False, help="Generated reports (default: the checkout's reports/).")] = REPO_ROOT / "reports",
    prune: Annotated[bool, typer.Option("--prune", help="Allow the rewrite to delete report files and drop runs "
                                        "that reports/ shows today (refused otherwise: a typo'd --results-dir "
                                        "or a --budget filter would wipe them).")] = False,
) -> None:
    """Render paper tables (reported vs reproduced, with Δ), plots and the HTML leaderboard."""
    from bench import report

    if paper:
        # raw markdown of one table (or every table of the paper), no rich wrapping; reports/ is untouched
        typer.echo(report.table_command(paper, table, budget, results_dir=results_dir))
        return
    if table:
        ui.fail("--table needs --paper (e.g. --paper mist --table 1).")
    if deep and not check:
        ui.fail("--deep needs --check (e.g. `bench table --check --deep`).")
    result = report.render_all(results_dir, reports_dir, check=check, budget=budget, prune=prune)
    if check:
        if result:
            ui.fail("reports/ is stale; run `bench table` and commit:\n" + "\n".join(map(ui.shown, result)), code=1)
        ui.console.print("[green]reports/ matches results/[/]")
        if deep:
            _render_deep(results_dir, jobs)
        return
    for path in result:
        ui.console.print(ui.plain(f"wrote {ui.shown(path)}"))
    overview = reports_dir / "protocol-sensitivity.md"  # every recorded run under every recipe
    if overview.exists():
        typer.echo(overview.read_text(encoding="utf-8"))


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

