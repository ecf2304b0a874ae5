"""`bench ls`: the registered tasks, systems and recipes."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer
from rich.table import Table

from bench.cli import common as ui


class Kind(str, Enum):
    tasks = "tasks"
    systems = "systems"
    recipes = "recipes"


@ui.app.command("ls")
def ls(kind: Annotated[Kind, typer.Argument(help="What to list.")]) -> None:
    """List registered tasks, systems (with the budgets each runs at here, and its cpu stand-in) or recipes."""
    table = Table(show_header=True, header_style="bold")
    if kind is Kind.tasks:
        from bench.data import TASKS

        table.add_column("task")
        table.add_column("family")
        table.add_column("splits")
        table.add_column("default recipes")
        table.add_column("from")
        for name in TASKS.names():
            task = TASKS.get(name)
            splits = ", ".join(f"{s} ({task.splits[s].describe()})" for s in task.splits)
            table.add_row(*map(ui.plain, (name, task.family, splits, ", ".join(task.default_recipes),
                                          TASKS.meta(name)["origin"])))
    elif kind is Kind.systems:
        from rich import box

        from bench.runs.resolve import budgets_here
        from systems import SYSTEMS

        table = Table(show_header=True, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table.add_column("system", no_wrap=True)
        table.add_column("family", no_wrap=True)
        table.add_column("runs here at", no_wrap=True)
        table.add_column("cpu stand-in", no_wrap=True)
        added = []  # (name, origin) of the systems a plugin added: said under the table, in full, not squeezed
        for name in SYSTEMS.names():
            meta = SYSTEMS.meta(name)
            budgets, stand_in = budgets_here(name)
            table.add_row(*map(ui.plain, (name, meta.get("family", ""), " ".join(budgets) or "-", stand_in or "")))
            if meta["origin"] != "built-in":
                added.append((name, meta["origin"]))
        table.caption = ("runs here at: budgets whose weights are on this machine (paper also wants a GPU). "
                         "cpu stand-in: what `bench run --budget cpu --stand-in` runs instead.")
        ui.console.print(table)
        if added:
            ui.console.print("Added by plugins (every other system is built-in):")
            for name, origin in added:
                ui.console.print(ui.plain(f"  {name}: {origin}"), soft_wrap=True)  # a path is never broken
        return
    else:
        from bench.scoring import RECIPES

        table.add_column("recipe")
        table.add_column("family")
        table.add_column("from")
        for name in RECIPES.names():
            meta = RECIPES.meta(name)
            table.add_row(*map(ui.plain, (name, meta.get("family", ""), meta["origin"])))
    ui.console.print(table)
