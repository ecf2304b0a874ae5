"""`bench leaderboard TASK` (alias `bench board`): a task's ranked groups as aligned terminal tables, from the
same board model as reports/leaderboard-TASK.html (bench.report.term_views)."""

from __future__ import annotations

from typing import Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import DataDir, ResultsDir


def _board(
    task: Annotated[str | None, typer.Argument(help="Task name (`bench ls tasks`), e.g. squad_qg.")] = None,
    task_opt: Annotated[str | None, typer.Option("--task", help="The task, as other commands take it (`bench "
                                                 "leaderboard --task quora` = `bench leaderboard quora`).")] = None,
    budget: Annotated[str | None, typer.Option(help="Only runs at this budget (ranks stay the board's).")] = None,
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
) -> None:
    """A task's leaderboard in the terminal: one table per set of examples, best first by the task's headline
    metric under its named recipe, rank clusters from the paired bootstrap, as the HTML leaderboard ranks."""
    from bench.api.errors import UserError
    from bench.api.registry import RegistryError
    from bench.env.term_layout import Rows, print_fitted
    from bench.report.term_views import BOARD_HEADERS, board_lede, terminal_board
    from bench.runs.folders import folders, label, sections

    if task is not None and task_opt is not None and task != task_opt:
        ui.fail(f"Two tasks given ({task} and --task {task_opt}); give one: bench leaderboard {task_opt}")
    task = task if task is not None else task_opt
    if task is None:
        ui.fail("Which task? bench leaderboard TASK (or --task TASK), e.g. bench leaderboard quora (bench ls tasks).")
    where = folders(results_dir)  # the committed board, with the workspace's runs of the task ranked in it
    try:
        mine = [r for folder, recs in sections(where) if folder != where.read[-1] for r in recs
                if r["spec"]["task"] == task]
        board, groups = terminal_board(task, where.read[-1], data_dir, also=mine)
    except (UserError, RegistryError, ValueError) as exc:
        ui.fail(str(exc))
    ui.console.print(ui.plain(f"Leaderboard: {task}", style="bold"))
    ui.console.print(ui.plain(board_lede(board.head, board), one_line=False))
    if mine:
        ui.console.print(ui.plain(f"With {len(mine)} run(s) of {label(where.write)}, not on the committed board "
                                  f"(reports/leaderboard-{task}.html: results/ only).", one_line=False), style="dim")
    budget_col = BOARD_HEADERS.index("budget")
    shown = 0
    for group in groups:
        rows = [r for r in group.rows if budget is None or r[budget_col] == budget]
        if not rows:
            continue
        shown += 1
        ui.console.line()
        table = Rows(BOARD_HEADERS, title=group.title, atomic=(0, 2, 3, 4, 5, 6, 7), right=(2, 4, 6),
                     caption="\n".join(group.notes), optional=(4, 7, 6), inline=True, suffixed=(4,),
                     dropped_note=f"run ids: `bench ls runs --task {task}`, or a wider terminal")
        for row in rows:
            table.add(*row)
        print_fitted(table, ui.console)
    if board.groups and not shown:
        ui.fail(f"No run of {task} at budget {budget}; drop --budget to see every run.")


ui.app.command("leaderboard")(_board)
ui.app.command("board", hidden=True)(_board)
