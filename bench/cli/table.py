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
    result = report.render_all(results_dir, reports_dir, check=check, budget=budget, prune=prune)
    if check:
        if result:
            ui.fail("reports/ is stale; run `bench table` and commit:\n" + "\n".join(map(ui.shown, result)), code=1)
        ui.console.print("[green]reports/ matches results/[/]")
        return
    for path in result:
        ui.console.print(ui.plain(f"wrote {ui.shown(path)}"))
    overview = reports_dir / "protocol-sensitivity.md"  # every recorded run under every recipe
    if overview.exists():
        typer.echo(overview.read_text(encoding="utf-8"))
