"""`bench ls`: the registered tasks, systems and recipes."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import ResultsDir


class Kind(str, Enum):
    tasks = "tasks"
    systems = "systems"
    recipes = "recipes"
    runs = "runs"
    latency = "latency"


@ui.app.command("ls")
def ls(
    kind: Annotated[Kind, typer.Argument(help="What to list.")],
    run_ids: Annotated[list[str] | None, typer.Argument(help="runs: only these runs (ids, or the short ids the pages "
                                                        "show).", show_default=False)] = None,
    task: Annotated[str | None, typer.Option(help="runs, latency: only this task.")] = None,
    system: Annotated[str | None, typer.Option(help="runs: only this system.")] = None,
    budget: Annotated[str | None, typer.Option(help="runs: only this budget.")] = None,
    results_dir: ResultsDir = None,
) -> None:
    """List registered tasks, systems (with the budgets each runs at here, and its cpu stand-in) or recipes, the
    recorded runs (one line each: run id, system, task, split, budget, examples, headline score), or the latency and
    sweep records (each with what the boards make of it: read, superseded by another, or not shown)."""
    from bench.env.term_layout import Rows, print_fitted

    if kind is Kind.latency and not (system or budget or run_ids):
        _render_timings(task, results_dir)
        return
    if kind is not Kind.runs and (task or system or budget or run_ids):
        ui.fail("run ids, --task, --system and --budget filter `bench ls runs` (--task also `bench ls latency`); "
                "the registries are listed whole.")
    if kind is Kind.runs:
        _render_runs(task, system, budget, results_dir, run_ids or [])
        return

    if kind is Kind.tasks:
        from bench.data import TASKS

        tasks = Rows(["task", "family", "default recipes", "from"], atomic=(0, 1, 3))
        splits = Rows(["task", "split", "examples", "note"], atomic=(0, 1, 2), right=(2,),
                      caption="note: partial = a stated subset of the split; needs user data = `bench fetch "
                      "--data` gets it where there is internet.")
        for name in TASKS.names():
            spec = TASKS.get(name)
            tasks.add(name, spec.family, ", ".join(spec.default_recipes), TASKS.meta(name)["origin"])
            for i, s in enumerate(spec.splits):
                count, _, note = spec.splits[s].describe().partition(", ")
                splits.add(name if i == 0 else "", s, count, note)
        print_fitted(tasks, ui.console)
        ui.console.line()
        print_fitted(splits, ui.console)
        return
    elif kind is Kind.systems:
        from bench.runs.resolve import budgets_here, needs_here
        from systems import SYSTEMS

        table = Rows(["system", "family", "runs here at", "cpu stand-in"], atomic=range(4), optional=(1,), tight=True,
                     caption="runs here at: budgets whose weights and modules are on this machine (paper also "
                     "wants a GPU); needs X: run X first. cpu stand-in: what `bench run --budget cpu --stand-in` "
                     "runs instead.", dropped_note="family (AR, NAR, semi-NAR, reference): left out at this width; "
                     "a wider terminal shows it.")
        added = []  # (name, origin) of the systems a plugin added: said under the table, in full, not squeezed
        needs: dict[tuple[str, str], list[str]] = {}  # (install command, modules) -> the systems that wait for it
        for name in SYSTEMS.names():
            meta = SYSTEMS.meta(name)
            budgets, stand_in = budgets_here(name)
            missing, install, family = needs_here(name)
            if missing:
                needs.setdefault((install or "install", " and ".join(missing)), []).append(name)
            table.add(name, meta.get("family") or family, f"needs {install}" if missing else " ".join(budgets) or "-",
                      stand_in or "")
            if meta["origin"] != "built-in":
                added.append((name, meta["origin"]))
        print_fitted(table, ui.console)
        for (how, what), names in needs.items():
            ui.console.print(ui.plain(f"Not runnable here until `{how}` ({what} not installed): {', '.join(names)}",
                                      one_line=False))
        if added:
            ui.console.print("Added by plugins (every other system is built-in):")
            for name, origin in added:
                ui.console.print(ui.plain(f"  {name}: {origin}"), soft_wrap=True)  # a path is never broken
        return
    else:
        from bench.scoring import RECIPES

        recipes = Rows(["recipe", "family", "from"], atomic=(0, 1, 2))
        for name in RECIPES.names():
            meta = RECIPES.meta(name)
            recipes.add(name, meta.get("family", ""), meta["origin"])
        print_fitted(recipes, ui.console)


def _render_runs(task: str | None, system: str | None, budget: str | None, results_dir: Path | None,
                 run_ids: list[str]) -> None:
    """The recorded runs, one line each (bench.report.term_views.run_rows), the committed results first, then the
    workspace's; system, task, split and budget are left out at narrow widths, since the run id names them."""
    from bench.env.term_layout import Rows, print_fitted
    from bench.report.term_views import RUN_HEADERS, run_rows
    from bench.runs.folders import find, folders, label, sections

    where = folders(results_dir)
    try:
        parts = sections(where)
        wanted = {find(rid, where)[1]["run_id"] for rid in run_ids}  # a short id names one run, or fails in one line
    except ValueError as exc:
        ui.fail(str(exc))
    if wanted:
        parts = [(folder, [r for r in recs if r["run_id"] in wanted]) for folder, recs in parts]
    shown = 0
    for i, (folder, records) in enumerate(parts):
        rows = Rows(RUN_HEADERS, atomic=range(len(RUN_HEADERS)), right=(5,), optional=(1, 2, 3, 4), inline=True,
                    suffixed=(5,), labelled=(6,), title="" if where.explicit else label(folder),
                    caption="" if i < len(parts) - 1 else "settings: the run's --set overrides (preset: none); "
                    "headline: the task leaderboard's metric and recipe (`bench leaderboard TASK`); run id: "
                    "system--task--split--budget--seed--hash (`bench show RUN_ID`, or its last 8 characters).")
        for row in run_rows(records, task, system, budget):
            rows.add(*row)
        if rows.rows:
            shown += 1
            print_fitted(rows, ui.console)
    if not shown:
        given = " ".join(f"--{k} {v}" for k, v in (("task", task), ("system", system), ("budget", budget)) if v)
        ui.fail(f"No record in {where.describe()} matches {given or '--task/--system/--budget'}; "
                "`bench ls runs` lists all.")


def _render_timings(task: str | None, results_dir: Path | None) -> None:
    """The latency and sweep records of each folder read (bench.report.timing_index), oldest first."""
    from bench.env.term_layout import Rows, print_fitted
    from bench.report.timing_index import timing_index
    from bench.runs.folders import folders, is_evidence, label
    from bench.runs.paths import said_path

    where, shown = folders(results_dir), 0
    for folder in where.read:
        try:
            entries = timing_index(folder, task)
        except ValueError as exc:
            ui.fail(str(exc))
        rows = Rows(["record", "design", "weights", "systems", "speed-ups", "ms", "boards"], atomic=(0, 1, 2, 4, 5),
                    right=(3,), optional=(1, 2, 3, 5), title="" if where.explicit else label(folder),
                    caption="record: its file is latency/ or sweep/ + record + .json; speed-ups: the record's "
                    "verdict (docs/latency.md); ms: the milliseconds' label; boards: what `bench table` makes of it"
                    + ("" if is_evidence(folder) else f" with --results-dir {said_path(folder)} (it reads results/)")
                    + "; superseded: a table reads one record per task and baseline, a speed page one sweep.")
        for e in entries:
            rows.add(e.record_id, e.design, e.weights, str(e.systems), e.verdict, e.ms_label, e.status)
        if rows.rows:
            shown += 1
            print_fitted(rows, ui.console)
    if not shown:
        ui.fail(f"No latency or sweep record in {where.describe()}{f' for task {task}' if task else ''}; "
                "`bench latency --record` makes one.")
