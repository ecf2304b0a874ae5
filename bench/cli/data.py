"""`bench data build | verify | show | fetch`: a task's splits, built, checked and read."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from bench.cli import common as ui
from bench.cli.common import DataDir

data_app = typer.Typer(help="Build, verify and inspect task splits.", no_args_is_help=True)
ui.app.add_typer(data_app, name="data")


@data_app.command("build")
def data_build(
    task: Annotated[str | None, typer.Option(help="One task (default: all).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Build (or load from cache) every split of the task(s) and print the counts."""
    from bench.data import TASKS, DataError, build, load_split

    names = [task] if task else TASKS.names()
    table = Table("task", "split", "examples", "sha256", "kind", header_style="bold")
    for name in names:
        try:
            counts = build(name, data_dir=data_dir)
            for split, count in counts.items():
                sp = load_split(name, split, data_dir=data_dir)
                spec = TASKS.get(name).split(split)
                kind = ", ".join(k for k, on in (("partial", spec.partial), ("references only", spec.references_only))
                                 if on)
                table.add_row(ui.plain(name), ui.plain(split), f"{count:,}", sp.sha256[:16], ui.plain(kind))
        except (DataError, KeyError) as exc:
            ui.fail(str(exc))
    ui.console.print(table)


@data_app.command("verify")
def data_verify(
    task: Annotated[str | None, typer.Option(help="One task (default: all).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Recompute raw-file and split checksums and counts; fail loudly naming the file on a mismatch."""
    from bench.api.registry import RegistryError
    from bench.data import TASKS, DataError, verify

    if task:
        try:
            TASKS.get(task)  # a misspelt name is bad input (exit 2), not a data problem (exit 1)
        except RegistryError as exc:
            ui.fail(str(exc))
    for name in [task] if task else TASKS.names():
        try:
            verify(name, data_dir=data_dir)
        except DataError as exc:
            ui.fail(str(exc), code=1)
        ui.console.print(f"[green]ok[/] {ui.lit(name)}")


@data_app.command("show")
def data_show(
    task: Annotated[str, typer.Option(help="Task name.")],
    split: Annotated[str, typer.Option(help="Split name.")] = "test",
    n: Annotated[int, typer.Option("-n", "--n", help="How many examples (≥ 0).")] = 3,
    data_dir: DataDir = None,
) -> None:
    """Print the first examples of a split."""
    from bench.data import load_split

    ui.check_counts(("-n", n, 0))
    sp = load_split(task, split, data_dir=data_dir)
    label = " (partial)" if sp.partial else ""
    ui.console.print(f"[bold]{ui.lit(f'{task}/{split}')}[/]{label}: {len(sp):,} examples, sha256 {sp.sha256[:16]} "
                     f"{ui.lit(sp.note)}")
    for ex in sp.examples[:n]:
        ui.console.rule(ui.lit(ex.id, one_line=True))
        ui.console.print({"source": ex.source[:400], "target": ex.target, **dict(ex.fields)})


@data_app.command("fetch")
def data_fetch(
    data_dir: DataDir = None,
    mirror: Annotated[str | None, typer.Option(help="Fetch https://HOST/PATH from MIRROR/HOST/PATH instead "
                                               "(default $BENCH_DATA_MIRROR).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List URL → path; download nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Download again what is present.")] = False,
) -> None:
    """Every task's raw files from their public sources, pinned by commit and sha256 (= `bench fetch --data`)."""
    outcomes = ui.render_data_fetch(data_dir, mirror, dry_run=dry_run, force=force)
    colour = {"fetched": "green", "present": "green", "would fetch": "cyan", "failed": "red"}
    for o in outcomes:  # URL and path on lines of their own, so a narrow terminal never cuts them
        ui.console.print(f"[{colour.get(o.status, 'yellow')}]{o.status}[/] {ui.lit(o.what)}")
        # a mirror's words (an HTTP reason, a redirect) are data: no control character reaches the terminal
        ui.console.print(ui.plain(f"  {o.source}\n  → {o.where}", one_line=False), soft_wrap=True)
        if o.status == "failed":
            ui.console.print(ui.plain(f"  {o.detail}"), soft_wrap=True)
    bad = [o.what for o in outcomes if not o.ok]
    if bad and not dry_run:
        ui.fail(f"{len(bad)} of {len(outcomes)} source(s) failed ({', '.join(bad)}); each says why above.", code=1)

