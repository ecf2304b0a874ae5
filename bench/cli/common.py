"""What every command module shares: the typer app, the consoles, the option types, the one-line failure,
the plugin callback and the renderers of scores. Nothing here imports more than typer and rich."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

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

__all__ = ["RESULTS_DIR", "DataDir", "DeviceOpt", "EvidenceDir", "LimitOpt", "ResultsDir", "app", "check_counts",
           "console", "err_console", "fail", "lit", "print_error", "plain", "print_path", "print_scores", "print_where",
           "render_scores", "say", "shown"]

# --- option types: each option several commands take is declared once ----------------------------------------
ResultsDir = Annotated[Path | None, typer.Option(
    "--results-dir", show_default=False, help="Read and write this results folder alone. Default: new records go to "
    "your workspace ($BENCH_RESULTS, else .cache/results: git-ignored), and runs are read from it and from "
    "results/, the committed evidence. `--results-dir results` records evidence (or `bench promote RUN_ID`).")]
EvidenceDir = Annotated[Path | None, typer.Option(
    "--results-dir", show_default=False, help="The run records the command builds from (default: the checkout's "
    "results/, the committed evidence; never the workspace, so reports/ is what results/ produces).")]
DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Raw data directory (default: $BENCH_DATA, then "
                                                                "../shared/data).")]
LimitOpt = Annotated[int | None, typer.Option(help="Only the first N examples of the split: outputs of `bench run "
                                                   "--limit N`.")]
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
    """Print a harness message verbatim: its "[fit]"-style tags are text, not rich markup; lines break between
    words, never inside a path or a run id (:func:`bench.env.term_layout.print_words`)."""
    from bench.env.term_layout import print_words

    return lambda msg: print_words(to, msg)


def print_error(message: str) -> None:
    """One ``error:`` line, the CLI's only way to say an error, its text as it is (``[/x]`` too) with line breaks as
    spaces (a file name holding ``\n`` cannot forge a line). Piped or logged the line is never broken (a script
    greps for it whole); on a terminal it wraps to the window."""
    err_console.print(f"[bold red]error:[/] {lit(message, one_line=True)}", soft_wrap=not err_console.is_terminal)


def fail(message: str, code: int = 2) -> NoReturn:
    """One ``error:`` line (:func:`print_error`) and exit ``code`` (2: bad input, 1: the machine or the runs)."""
    print_error(message)
    raise typer.Exit(code)


def check_counts(*checks: tuple[str, int | None, int]) -> None:
    """Refuse each (option, value, least value) count below its range before anything runs (one wording)."""
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
    """One row per recipe (each metric with its CI) where that fits the terminal, else one row per recipe and
    metric; then each recipe's signature (folded at ``|``) and notes, and what "items" are."""
    from bench.env.term_layout import Rows, folded, needed_width, print_fitted

    metric_names = list(dict.fromkeys(m for r in results for m in r.metrics))  # first seen first

    def cell(r: Any, m: str) -> str:
        if m not in r.metrics:
            return "–"
        ci = r.ci.get(m)
        return f"{r.metrics[m]:.3f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    n = len(metric_names)
    wide = Rows(["recipe", *metric_names, "items"], atomic=range(n + 2), right=range(1, n + 2))
    for r in results:
        wide.add(r.recipe, *(cell(r, m) for m in metric_names), f"{r.n_items:,}")
    if needed_width(wide, console) <= console.width:
        print_fitted(wide, console)
    else:
        long = Rows(["recipe", "metric", "score", "95% CI", "items"], atomic=range(5), right=(2, 3, 4))
        for r in results:
            for i, m in enumerate(x for x in metric_names if x in r.metrics):
                ci = r.ci.get(m)
                long.add(r.recipe if i == 0 else "", m, f"{r.metrics[m]:.3f}",
                         f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "–", f"{r.n_items:,}" if i == 0 else "")
        print_fitted(long, console)
    for r in results:
        for line in folded(r.signature, console.width):
            console.print(plain(line, style="dim"))
        for note in r.notes:
            console.print(f"[yellow]note:[/] {lit(r.recipe)}: {lit(note)}")
    from bench.scoring.items import items_note

    note = items_note([r.signature for r in results])
    if note:
        console.print(plain(note, style="dim"))


def print_scores(record: dict, outputs: object = None) -> None:
    """A run record's scores (or that it is unscored), budget and outputs path: ``outputs``, the file a command
    read and checked (`bench show`), else the label the record stores."""
    from types import SimpleNamespace

    results = [SimpleNamespace(recipe=name, signature=sc["signature"], metrics=sc["metrics"], ci=sc.get("ci", {}),
                               n_items=sc.get("n_items", 0), notes=sc.get("notes", []))
               for name, sc in record.get("scores", {}).items()]  # not Scores: that imports numpy
    console.rule(lit(record["run_id"], one_line=True))
    if record.get("status") == "unscored":
        console.print("[yellow]unscored[/] (--no-score): `bench rescore` or `bench run` of this spec scores it")
    else:
        render_scores(results)
    data = record["data"]
    subset = f" [yellow](partial: {lit(data['note'])})[/]" if data.get("partial") else ""
    console.print(f"budget: [bold]{lit(record['spec']['budget'], one_line=True)}[/]{subset}")
    print_path("outputs", outputs if outputs is not None else record["outputs"]["path"])


def print_path(label: str, path: object) -> None:
    """``label: path`` on one line, or the path on a line of its own when both do not fit: never cut."""
    text = f"{label}: {path}"
    if len(text) <= console.width:
        console.print(plain(text))
    else:
        console.print(plain(f"{label}:"))
        console.print(plain(path), soft_wrap=True)


def print_where(record: Path | str) -> None:
    """Under a shown or new record: a run outside results/ is not evidence, and how to make it so."""
    from bench.env.term_layout import print_words
    from bench.runs.folders import where_note

    if (note := where_note(Path(record))) is not None:
        print_words(console, note, style="dim")


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
