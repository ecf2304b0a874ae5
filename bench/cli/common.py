"""What every command module shares: the typer app, the consoles, the option types, the one-line failure,
the plugin callback and the renderers of scores. Nothing here imports more than typer and rich."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from bench.api.paths import RESULTS_DIR
from bench.env.device import DEVICE_HELP
from bench.env.term_escape import markup as lit
from bench.env.term_escape import plain

app = typer.Typer(
    help="Benchmark harness for autoregressive, non-autoregressive and semi-NAR text generation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err_console = Console(stderr=True)

__all__ = ["RESULTS_DIR", "DataDir", "DeviceOpt", "LimitOpt", "ResultsDir", "app", "check_counts", "console",
           "err_console", "fail", "lit", "plain", "print_scores", "render_scores", "say", "shown"]

# --- option types: each option several commands take is declared once ----------------------------------------
ResultsDir = Annotated[Path, typer.Option(
    "--results-dir", show_default=False, help="The results folder: run records, and what the command writes beside "
    "them (default: the checkout's results/, from any working directory).")]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Raw data directory (default: $BENCH_DATA, then ../shared/data)."),
]
LimitOpt = Annotated[
    int | None, typer.Option(help="Only the first N examples of the split: outputs of `bench run --limit N`.")
]
DeviceOpt = Annotated[str, typer.Option(help=f"Where models train, decode and are timed: {DEVICE_HELP}. Recorded "
                                          "in every record; a GPU that is not there is an error.")]


@app.callback()
def plugins(
    include: Annotated[list[Path], typer.Option(
        "--include", help="A .py file or folder that registers systems, tasks or recipes, imported before the "
        "command runs (repeatable; also $BENCH_INCLUDE). Installed plugins need no flag: they are found "
        "through entry points. See README 'Add your own system'.")] = [],  # noqa: B006
) -> None:
    """Import plugins before any command reads the registries."""
    from bench.api.errors import UserError
    from bench.env.plugins import include as include_path
    from bench.env.plugins import include_paths_from_env

    for path in [*include_paths_from_env(), *include]:
        try:
            include_path(path)
        except UserError as exc:  # a plugin's mistake is one line, as every user error here
            fail(str(exc))


# --- saying and failing ---------------------------------------------------------------------------------------
def say(to: Console) -> Callable[[str], None]:
    """Print a harness message verbatim: its "[fit]"-style tags are text, not rich markup."""
    return lambda msg: to.print(plain(msg, one_line=False))


def fail(message: str, code: int = 2) -> NoReturn:
    """One ``error:`` line and exit ``code`` (2: bad input, 1: the machine or the runs). The message is text: a
    name or path in it holding ``[/x]`` is printed as it is."""
    err_console.print(f"[bold red]error:[/] {lit(message)}")
    raise typer.Exit(code)


def check_counts(*checks: tuple[str, int | None, int]) -> None:
    """Refuse each (option, value, least value) count below its range, in the wording of every count option
    (:func:`bench.env.counts.at_least`), before anything runs."""
    from bench.env.counts import CountError, at_least

    try:
        for option, value, low in checks:
            at_least(option, value, low)
    except CountError as exc:
        fail(str(exc))


def shown(path: Path | str) -> str:
    """A path as a person reads it: relative to the working directory when it lies below it."""
    try:
        return str(Path(path).relative_to(Path.cwd())) if Path(path).is_absolute() else str(path)
    except ValueError:
        return str(path)


# --- rendering scores -----------------------------------------------------------------------------------------
def render_scores(results: Sequence[Any]) -> None:
    """One row per recipe (metric with its CI), then each recipe's signature and notes."""
    metric_names: list[str] = []
    for r in results:
        for m in r.metrics:
            if m not in metric_names:
                metric_names.append(m)
    table = Table("recipe", *metric_names, "items", header_style="bold")
    for r in results:
        cells = []
        for m in metric_names:
            if m in r.metrics:
                ci = r.ci.get(m)
                cells.append(f"{r.metrics[m]:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""))
            else:
                cells.append("–")
        table.add_row(plain(r.recipe), *cells, str(r.n_items))
    console.print(table)
    for r in results:
        console.print(plain(r.signature, style="dim"))
        for note in r.notes:
            console.print(f"[yellow]note:[/] {lit(r.recipe)}: {lit(note)}")


def print_scores(record: dict) -> None:
    """A run record's scores (or that it is unscored), budget and outputs path."""
    from bench.scoring import Scores

    results = [Scores(recipe=name, signature=sc["signature"], metrics=sc["metrics"], ci=sc.get("ci", {}),
                      n_items=sc.get("n_items", 0), notes=sc.get("notes", []))
               for name, sc in record.get("scores", {}).items()]
    console.rule(lit(record["run_id"], one_line=True))
    if record.get("status") == "unscored":
        console.print("[yellow]unscored[/] (--no-score): `bench rescore` or `bench run` of this spec scores it")
    else:
        render_scores(results)
    data = record["data"]
    subset = f" [yellow](partial: {lit(data['note'])})[/]" if data.get("partial") else ""
    console.print(f"budget: [bold]{lit(record['spec']['budget'], one_line=True)}[/]{subset}")
    console.print(plain(f"outputs: {record['outputs']['path']}"), soft_wrap=True)


def render_data_fetch(data_dir: Path | None, mirror: str | None, *, dry_run: bool, force: bool) -> list[Any]:
    """Run the data fetch under a rich progress bar (one task per file, on stderr); returns its outcomes."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    from bench.workflows.fetch_data import fetch_everything

    bars: dict[str, Any] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  console=Console(stderr=True), transient=True, disable=dry_run) as progress:

        def step(label: str, done: int, total: int | None) -> None:
            if label not in bars:
                bars[label] = progress.add_task(label, total=total)
            progress.update(bars[label], completed=done, total=total)

        return fetch_everything(data_dir, mirror=mirror, dry_run=dry_run, force=force, progress=step)
