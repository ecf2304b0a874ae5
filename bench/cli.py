"""The ``bench`` command line: thin wrappers that parse, call one function, render with rich.

Every heavy import (torch, scoring tools, systems) happens inside the command that needs it, so
``bench --help`` stays instant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from bench.env.device import DEVICE_HELP

if TYPE_CHECKING:
    from bench.launch.local import Outcome
    from bench.launch.plan import Job
    from bench.launch.preflight import Pool

app = typer.Typer(
    help="Benchmark harness for autoregressive, non-autoregressive and semi-NAR text generation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Build, verify and inspect task splits.", no_args_is_help=True)
app.add_typer(data_app, name="data")
console = Console()
err_console = Console(stderr=True)


@app.callback()
def _plugins(
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
            _fail(str(exc))


def _say(to: Console) -> Callable[[str], None]:
    """Print a harness message verbatim: its "[fit]"-style tags are text, not rich markup."""
    return lambda msg: to.print(msg, markup=False)


LimitOpt = Annotated[
    int | None, typer.Option(help="Only the first N examples of the split: outputs of `bench run --limit N`.")
]
DeviceOpt = Annotated[str, typer.Option(help=f"Where models train, decode and are timed: {DEVICE_HELP}. Recorded "
                                          "in every record; a GPU that is not there is an error.")]
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Raw data directory (default: $BENCH_DATA, then ../shared/data)."),
]


class Kind(str, Enum):
    tasks = "tasks"
    systems = "systems"
    recipes = "recipes"


def _fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


@app.command("ls")
def ls(kind: Annotated[Kind, typer.Argument(help="What to list.")]) -> None:
    """List registered tasks, systems or recipes."""
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
            table.add_row(name, task.family, splits, ", ".join(task.default_recipes), TASKS.meta(name)["origin"])
    elif kind is Kind.systems:
        from systems import SYSTEMS

        table.add_column("system")
        table.add_column("family")
        table.add_column("from")
        for name in SYSTEMS.names():
            meta = SYSTEMS.meta(name)
            table.add_row(name, meta.get("family", ""), meta["origin"])
    else:
        from bench.scoring import RECIPES

        table.add_column("recipe")
        table.add_column("family")
        table.add_column("from")
        for name in RECIPES.names():
            meta = RECIPES.meta(name)
            table.add_row(name, meta.get("family", ""), meta["origin"])
    console.print(table)


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
                table.add_row(name, split, f"{count:,}", sp.sha256[:16], kind)
        except (DataError, KeyError) as exc:
            _fail(str(exc))
    console.print(table)


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
            _fail(str(exc))
    for name in [task] if task else TASKS.names():
        try:
            verify(name, data_dir=data_dir)
        except DataError as exc:
            _fail(str(exc), code=1)
        console.print(f"[green]ok[/] {name}")


@data_app.command("show")
def data_show(
    task: Annotated[str, typer.Option(help="Task name.")],
    split: Annotated[str, typer.Option(help="Split name.")] = "test",
    n: Annotated[int, typer.Option("-n", "--n", min=0, help="How many examples.")] = 3,
    data_dir: DataDir = None,
) -> None:
    """Print the first examples of a split."""
    from bench.data import load_split

    sp = load_split(task, split, data_dir=data_dir)
    label = " (partial)" if sp.partial else ""
    console.print(f"[bold]{task}/{split}[/]{label}: {len(sp):,} examples, sha256 {sp.sha256[:16]} {sp.note}")
    for ex in sp.examples[:n]:
        console.rule(ex.id)
        console.print({"source": ex.source[:400], "target": ex.target, **dict(ex.fields)})


@app.command("run")
def run(
    system: Annotated[str, typer.Option(help="Registered system name (bench ls systems).")],
    task: Annotated[str, typer.Option(help="Task name (bench ls tasks).")],
    split: Annotated[str | None, typer.Option(help="Split to decode and score (default: test, or the "
                                              "available partial test split where the full one is absent).")] = None,
    budget: Annotated[str, typer.Option(help="smoke | cpu | paper")] = "smoke",
    seed: Annotated[int, typer.Option(help="Random seed (part of the run identity).")] = 42,
    set_: Annotated[list[str], typer.Option("--set", help="Override key=value (repeatable).")] = [],  # noqa: B006
    force: Annotated[bool, typer.Option(help="Re-run even if a complete record exists.")] = False,
    limit: Annotated[int | None, typer.Option(help="Decode only the first N examples (smoke: 200).")] = None,
    latency_n: Annotated[int, typer.Option(help="Also time N items at batch size 1 (0 = skip).")] = 0,
    results_dir: Annotated[Path, typer.Option(help="Where records are written.")] = Path("results"),
    threads: Annotated[int | None, typer.Option(help="Torch threads for this run (recorded in the environment). "
                                                "On 2 cores, two runs at --threads 1 train 1.09x more updates "
                                                "per hour than one at 2 (benchmarks/bench_threads.py).")] = None,
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
    score: Annotated[bool, typer.Option(help="--no-score: write the outputs and an 'unscored' record without "
                                        "running the metric tools (a GPU machine without Java/Perl); `bench "
                                        "rescore` or a later `bench run` scores them.")] = True,
    wait: Annotated[bool, typer.Option(help="When the same run (or its model's training) is already running: "
                                       "wait for it (the default, saying once for whom), or --no-wait: refuse "
                                       "at once, naming that process (exit 1).")] = True,
) -> None:
    """Train (or load) -> decode -> score -> (time) -> record one run."""
    from bench.api.registry import RegistryError
    from bench.data import DataError, default_eval_split
    from bench.runs import RunSpec, check_limit, check_seed, parse_overrides
    from bench.runs.lock import LockBusy
    from bench.runs.pipeline import execute

    if threads is not None:
        _set_threads(threads)
    _at_least("--latency-n", latency_n, 0)
    try:
        check_limit(limit)  # before the split is looked up or built: a bad number writes nothing
        check_seed(seed)
        if split is None:
            split = default_eval_split(task, data_dir)
            console.print(f"split: [bold]{split}[/]")
        spec = RunSpec(system=system, task=task, split=split, budget=budget,
                       overrides=parse_overrides(set_), seed=seed, limit=limit)
        record = execute(spec, results_dir=results_dir, data_dir=data_dir, force=force,
                         latency_items=latency_n, say=_say(console), progress=console, device=device,
                         score_outputs=score, wait=wait)
    except LockBusy as exc:  # not bad input: the machine is busy with the same run
        _fail(str(exc), code=1)
    except (RegistryError, DataError, ValueError) as exc:
        _fail(str(exc))
    _print_scores(record)


def _set_threads(n: int) -> None:
    """Pin torch (and the OpenMP/MKL pools of anything started later, e.g. fairseq-train) to ``n`` threads."""
    import os

    _at_least("--threads", n, 1)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    import torch

    torch.set_num_threads(n)


def _at_least(option: str, value: int | None, low: int) -> None:
    """Refuse a count below ``low`` before anything runs: one line naming the option, its value and the range."""
    if value is not None and value < low:
        _fail(f"{option} {value}: {option.lstrip('-')} must be ≥ {low} (got {value})")


def _print_scores(record: dict) -> None:
    from bench.scoring import Scores

    results = [Scores(recipe=name, signature=sc["signature"], metrics=sc["metrics"], ci=sc.get("ci", {}),
                      n_items=sc.get("n_items", 0), notes=sc.get("notes", []))
               for name, sc in record.get("scores", {}).items()]
    console.rule(record["run_id"])
    if record.get("status") == "unscored":
        console.print("[yellow]unscored[/] (--no-score): `bench rescore` or `bench run` of this spec scores it")
    else:
        _render_scores(results)
    data = record["data"]
    subset = f" [yellow](partial: {data['note']})[/]" if data.get("partial") else ""
    console.print(f"budget: [bold]{record['spec']['budget']}[/]{subset}")
    console.print(f"outputs: {record['outputs']['path']}", soft_wrap=True)


@app.command("submit")
def submit_cmd(
    name: Annotated[str, typer.Option(help="Name the outputs are shown under (letters, digits, _ . + -).")],
    task: Annotated[str, typer.Option(help="Task whose split holds the references (bench ls tasks).")],
    hyp: Annotated[Path, typer.Option(help="The outputs, one per example of the split, in split order.")],
    split: Annotated[str, typer.Option(help="Split the outputs are for (XSum's published outputs: "
                                       "test-refs).")] = "test",
    paper: Annotated[str | None, typer.Option(help="Paper table the outputs stand beside, e.g. mist:1.")] = None,
    row: Annotated[str | None, typer.Option(help="That table's row (label or id) whose published number the "
                                            "outputs are, e.g. 'BART(Lewis et al. 2020)'.")] = None,
    meta: Annotated[list[str], typer.Option("--meta", help="key=value the record keeps (who, what, where from); "
                                            "repeatable.")] = [],  # noqa: B006
    results_dir: Annotated[Path, typer.Option(help="Where the record is written.")] = Path("results"),
    force: Annotated[bool, typer.Option(help="Score again even if these outputs were submitted before.")] = False,
    copy: Annotated[bool, typer.Option(help="Keep a copy under results/outputs/ (--no-copy: record the file's path "
                                       "and sha256 only, for third-party releases).")] = True,
    data_dir: DataDir = None,
) -> None:
    """Score a file of outputs made elsewhere under every default recipe of the task and record it as a
    submission (kind `external`): shown in tables and the leaderboard as a submitted row, never as a reproduction."""
    from bench.api.registry import RegistryError
    from bench.data import DataError
    from bench.scoring import ScoringError
    from bench.workflows.submit import parse_meta, submit

    try:
        record = submit(name, task, split, hyp, paper=paper, row=row, meta=parse_meta(meta),
                        results_dir=results_dir, data_dir=data_dir, force=force, copy=copy)
    except (RegistryError, DataError, ScoringError, ValueError) as exc:
        _fail(str(exc))
    _print_scores(record)


@app.command("score")
def score(
    hyp: Annotated[Path, typer.Option(help="Hypothesis file, one output per line.")],
    task: Annotated[str | None, typer.Option(help="Task whose split gives references and keys.")] = None,
    split: Annotated[str | None, typer.Option(help="Split name (default: test).")] = None,
    recipe: Annotated[str | None, typer.Option(help="Recipe (bench ls recipes).")] = None,
    ref: Annotated[Path | None, typer.Option(help="Reference file (instead of --task).")] = None,
    key: Annotated[Path | None, typer.Option(help="Grouping-key file for QG recipes.")] = None,
    all_recipes: Annotated[bool, typer.Option("--all-recipes", help="Protocol-sensitivity table.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: LimitOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Score an external output file under one recipe, or under every applicable recipe."""
    from bench import scoring

    _refuse_score_conflicts(recipe, all_recipes, ref, key, {"--task": task, "--split": split, "--limit": limit,
                                                            "--data-dir": data_dir})
    split = split or "test"
    try:
        if recipe is not None:
            scoring.RECIPES.get(recipe)  # a misspelt recipe is named before any file is read
        with scoring.ScoringSession() as session:
            if ref is not None:
                if all_recipes or recipe is None:
                    _fail("--ref needs exactly one --recipe (recipes read task fields otherwise).")
                results = [scoring.score_files(recipe, hyp, ref, key, session=session)]
            else:
                if task is None:
                    _fail("Give --task (and --split) or --ref.")
                sp = _reference_split(task, split, limit, data_dir)
                hyps = _read_outputs(hyp, sp, limit)
                names = scoring.applicable_recipes(task) if all_recipes or recipe is None else [recipe]
                results = [scoring.score_split(r, hyps, sp, session=session) for r in names]
    except (scoring.ScoringError, KeyError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps([r.to_json() for r in results], indent=2) + "\n")
        return
    _render_scores(results)


def _refuse_score_conflicts(recipe: str | None, all_recipes: bool, ref: Path | None, key: Path | None,
                            task_side: dict[str, Any]) -> None:
    """Two options that ask for different things are an error, never one silently winning (#40)."""
    if recipe is not None and all_recipes:
        _fail(f"--recipe {recipe} and --all-recipes conflict: --all-recipes scores under every applicable recipe; "
              "give one of them.")
    given = [opt for opt, value in task_side.items() if value is not None]
    if ref is not None and given:
        _fail(f"--ref and {' '.join(given)} conflict: --ref scores against a reference file (with one --recipe), "
              f"{given[0]} against a task's split; give one of them.")
    if key is not None and ref is None:
        _fail("--key goes with --ref (the grouping keys of a reference file); a --task split has its own keys.")


def _render_scores(results: list) -> None:
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
        table.add_row(r.recipe, *cells, str(r.n_items))
    console.print(table)
    for r in results:
        console.print(f"[dim]{r.signature}[/]")
        for note in r.notes:
            console.print(f"[yellow]note:[/] {r.recipe}: {note}")


@app.command("compare")
def compare(
    a: Annotated[str, typer.Argument(help="Run id of system A (or its outputs file, with --task).")],
    b: Annotated[str, typer.Argument(help="Run id of system B (or its outputs file: same split, same order).")],
    task: Annotated[str | None, typer.Option(help="Task (outputs files only; a run id says it).")] = None,
    split: Annotated[str, typer.Option(help="Split (outputs files only).")] = "test",
    recipe: Annotated[list[str] | None, typer.Option(
        "--recipe", help="Recipe; repeat for one table per recipe (default: the task's first).")] = None,
    limit: LimitOpt = None,
    results_dir: Annotated[Path, typer.Option(help="Where run ids are looked up.")] = Path("results"),
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="The raw result (delta = b − a) as JSON; a list "
                                          "with several --recipe.")] = False,
) -> None:
    """Paired significance (bootstrap and approximate randomisation) between two runs or two outputs files.

    Prints one table per recipe: a, b, Δ = a − b with its 95% CI, p_bootstrap and p_AR per metric.
    With run ids the task, split, examples and outputs come from the records (runs over different
    examples are refused); with files, give --task (and --split/--limit as the runs used).
    """
    from bench import scoring
    from bench.data import TASKS
    from bench.runs.lookup import RunLookupError, find_record, outputs_of, same_examples, split_of

    try:
        if (results_dir / f"{a}.json").is_file() and (results_dir / f"{b}.json").is_file():
            (_, ra), (_, rb) = find_record(a, results_dir), find_record(b, results_dir)
            same_examples(ra, rb)
            sp = split_of(ra, data_dir)
            hyps_a, hyps_b, task = outputs_of(ra), outputs_of(rb), ra["spec"]["task"]
        else:
            if task is None:
                for x in (a, b):
                    if not Path(x).is_file():
                        find_record(x, results_dir)  # names the missing record, with near matches
                _fail("comparing outputs files needs --task (run ids need no options).")
            sp = _reference_split(task, split, limit, data_dir)
            hyps_a, hyps_b = (_read_outputs(Path(h), sp, limit) for h in (a, b))
        names = recipe or [TASKS.get(task).default_recipes[0]]
        with scoring.ScoringSession() as session:
            results = [scoring.compare(n, hyps_a, hyps_b, sp, session=session, delta_ci=not as_json) for n in names]
    except (scoring.ScoringError, RunLookupError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        console.print_json(json.dumps(results[0] if len(results) == 1 else results))
        return
    from rich import box
    from rich.text import Text

    from bench.report.compare_table import FOOTNOTE, HEADER, caption, compare_rows

    for result in results:
        table = Table(title=Text(caption(result, a, b)), header_style="bold", title_justify="left",
                      box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for i, head in enumerate(HEADER):
            table.add_column(head, justify="right" if i else "left", no_wrap=True)
        for row in compare_rows(result):
            table.add_row(*(Text(c) for c in row))
        console.print(table)
        console.print(result["signature"], style="dim", soft_wrap=True, markup=False)
    console.print(FOOTNOTE, soft_wrap=True, markup=False)


@app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="A recorded run id (`ls results`), or its record's path.")],
    n: Annotated[int, typer.Option("-n", "--n", min=0, help="Outputs to show next to their references.")] = 5,
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    data_dir: DataDir = None,
) -> None:
    """One record as a person reads it: spec, budget, scores with CIs, timings, output statistics,
    the first outputs next to their references, and where the files are."""
    from bench.runs.lookup import RunLookupError, find_record, outputs_of, split_of
    from bench.scoring.output_stats import degeneracy
    from bench.scoring.output_stats import summary as stats_summary

    try:
        path, rec = find_record(run_id, results_dir)
        outputs = outputs_of(rec)
        examples = list(split_of(rec, data_dir).examples)[:n]
    except (RunLookupError, ValueError) as exc:
        _fail(str(exc))
    spec, info, data = rec["spec"], rec.get("system") or {}, rec.get("data") or {}
    _print_scores(rec)  # rule, scores with CIs, signatures, budget line, outputs path
    console.print(f"system [bold]{spec['system']}[/] ({info.get('family')}, backbone {info.get('backbone')}); "
                  f"seed {spec.get('seed')}; overrides {spec.get('overrides') or {}}; "
                  f"{data.get('n_examples')} examples; "
                  f"harness {(rec.get('harness') or {}).get('git_sha', '?')[:12]}", soft_wrap=True)
    timings = rec.get("timings") or {}
    console.print("timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    stats = rec.get("output_stats")
    if stats and stats.get("n"):
        flag = "[red]DEGENERATE[/]: " + "; ".join(degeneracy(stats)) + "\n" if degeneracy(stats) else ""
        console.print(f"{flag}outputs: {stats_summary(stats)}", soft_wrap=True)
    table = Table("#", "output", "reference", header_style="bold", show_lines=True)
    for i, (ex, out) in enumerate(zip(examples, outputs, strict=False), 1):
        table.add_row(str(i), out, ex.target)
    console.print(table)
    console.print(f"record: {path}\nworkdir: {(rec.get('model') or {}).get('workdir')}", soft_wrap=True)


@app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | jsonl")] = "csv",
    out: Annotated[Path | None, typer.Option(help="Output file (default: results.<format>).")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    system: Annotated[str | None, typer.Option(help="Only this system.")] = None,
    budget: Annotated[str | None, typer.Option(help="Only this budget.")] = None,
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
) -> None:
    """Every record as a table (one row per run and recipe; bench.report.frame.load), written as csv/parquet/jsonl."""
    from bench.report import frame as results

    try:
        df = results.filtered(results.load(results_dir), task=task, system=system, budget=budget)
        path = results.export(df, out or Path(f"results.{fmt}"), fmt)
    except ValueError as exc:
        _fail(str(exc))
    console.print(f"{path}: {len(df)} rows x {len(df.columns)} columns")


def _reference_split(task: str, split: str, limit: int | None, data_dir: Path | None) -> Any:
    """The split whose references score an output file; with ``limit``, its first N examples
    exactly as `bench run --limit N` decoded them."""
    from bench.data import load_split
    from bench.runs import first_examples

    if limit is not None and limit < 1:
        raise ValueError(f"--limit {limit}: must be a positive number of examples")
    return first_examples(load_split(task, split, data_dir=data_dir), limit)


def _read_outputs(path: Path, sp: Any, limit: int | None) -> list[str]:
    """One output per reference; a short file gets the hint that it may be a `--limit N` run's."""
    from bench import scoring

    label = f"{sp.task}/{sp.name}" + (f" (first {len(sp):,})" if sp.partial else "")
    try:
        return scoring.read_hypotheses(path, expected=len(sp), ref_label=label)
    except scoring.ScoringError as exc:
        lines = _line_count(path)
        if limit is None and lines is not None and 0 < lines < len(sp):
            raise scoring.ScoringInputError(
                f"{exc}\nIf it holds the outputs of a `bench run ... --limit {lines}` run, add --limit {lines}."
            ) from exc
        raise


def _line_count(path: Path) -> int | None:
    try:
        with Path(path).open("rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return None


@app.command("table")
def table_cmd(
    paper: Annotated[str | None, typer.Option(help="mist | copybert | erniegen (default: all).")] = None,
    table: Annotated[str | None, typer.Option(help="Table number (default: all of the paper).")] = None,
    budget: Annotated[str | None, typer.Option(help="Only runs of this budget.")] = None,
    check: Annotated[bool, typer.Option(help="Fail if committed reports/ differ from the records.")] = False,
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    reports_dir: Annotated[Path, typer.Option(help="Generated reports.")] = Path("reports"),
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
        _fail("--table needs --paper (e.g. --paper mist --table 1).")
    result = report.render_all(results_dir, reports_dir, check=check, budget=budget, prune=prune)
    if check:
        if result:
            _fail("reports/ is stale; run `bench table` and commit:\n" + "\n".join(map(str, result)), code=1)
        console.print("[green]reports/ matches results/[/]")
        return
    for path in result:
        console.print(f"wrote {path}")
    overview = reports_dir / "protocol-sensitivity.md"  # every recorded run under every recipe
    if overview.exists():
        typer.echo(overview.read_text(encoding="utf-8"))


class Launcher(str, Enum):
    inline = "inline"
    local = "local"
    slurm = "slurm"


LogsOpt = Annotated[Path | None, typer.Option(
    "--logs", help="One log per job, <run id>.log (default: RESULTS_DIR/../.cache/launch).")]


@app.command("reproduce")
def reproduce(
    target: Annotated[str, typer.Argument(help="paper:table, e.g. mist:1")],
    budget: Annotated[str, typer.Option(help="smoke | cpu | paper")] = "cpu",
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    data_dir: DataDir = None,
    launcher: Annotated[Launcher, typer.Option(
        help="inline: one run after another in this process; local: --jobs child `bench run`s at a time on "
        "this machine; slurm: one SLURM job per run, through submitit.")] = Launcher.inline,
    jobs: Annotated[int | None, typer.Option(
        help="local: runs at once (default: cores / --threads-per-job); slurm: runs at once of those that "
        "wait for nothing (a job array).")] = None,
    threads_per_job: Annotated[int | None, typer.Option(
        help="`bench run --threads` of each job (local default: cores / --jobs; slurm: --cpus-per-task).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan (runs, dependencies, what is done, estimates) and run nothing.")] = False,
    logs: LogsOpt = None,
    partition: Annotated[str | None, typer.Option(help="slurm: partition (default: the cluster's).")] = None,
    time_min: Annotated[int, typer.Option(help="slurm: time limit of each job in minutes (a job that reaches it "
                                          "is requeued and resumes from its checkpoint).")] = 24 * 60,
    gpus: Annotated[int, typer.Option(help="slurm: GPUs per job.")] = 0,
    cpus_per_task: Annotated[int | None, typer.Option(
        help="slurm: CPUs per job (default: --threads-per-job, else 1).")] = None,
    device: DeviceOpt = "auto",
) -> None:
    """Run every runnable row of a paper table (skipping completed runs), then render it.

    With --launcher local or slurm the runs go in parallel; a run that decodes another run's trained
    model (decode-only settings, e.g. MIST Table 6) starts after it. Relaunching skips complete runs
    and resumes the others from their checkpoints; `bench status PAPER:TABLE` shows where each stands.
    """
    from bench import report
    from bench.api.registry import RegistryError
    from bench.papers import parse_table_ref

    try:
        paper, table = parse_table_ref(target)
    except ValueError as exc:
        _fail(str(exc))
    pool = _preflight(launcher, jobs, threads_per_job, device, time_min, gpus, cpus_per_task)  # --dry-run too
    if launcher is Launcher.inline and not dry_run:
        if threads_per_job is not None:
            _set_threads(threads_per_job)
        _reproduce_inline(paper, table, budget, results_dir, data_dir, device)
        typer.echo(report.render_table(paper, table, report.load_records(results_dir), budget))
        return

    from bench.launch.joblog import default_log_dir
    from bench.launch.plan import plan_table
    from bench.launch.view import plan_view

    try:
        plan = plan_table(paper, table, budget, results_dir)
    except (RegistryError, ValueError) as exc:
        _fail(str(exc))
    if not plan:
        console.print(f"No row of {paper} table {table} can run at budget {budget}.")
    logs = logs or default_log_dir(results_dir)
    if dry_run:
        console.print(plan_view(plan, title=f"{paper}:{table} at budget {budget} ({launcher.value} launcher)"))
        console.print(pool.line, markup=False)
        return
    if launcher is Launcher.local:
        outcomes = _launch_local(plan, results_dir, logs, pool, data_dir, device)
        console.line()
        typer.echo(report.render_table(paper, table, report.load_records(results_dir), budget))
        failed = sum(o.state == "failed" for o in outcomes)
        skipped = sum(o.state == "skipped" for o in outcomes)
        if failed or skipped:
            _fail(f"{failed} run(s) of {paper}:{table} failed and {skipped} did not start (they need a failed "
                  f"run's model); the table above says why, the logs are in {logs}. Fix the cause and run the same "
                  "command again: complete runs are skipped, the others resume.", code=1)
        return
    _launch_slurm(plan, results_dir, logs, jobs, threads_per_job, data_dir, partition, time_min, gpus,
                  cpus_per_task, device)
    console.print(f"`bench status {paper}:{table} --budget {budget}` shows where each job stands.")


@app.command("queue")
def queue_cmd(
    file: Annotated[Path, typer.Argument(help="One `bench run` option line per run (# comments, blank lines ok).")],
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    data_dir: DataDir = None,
    launcher: Annotated[Launcher, typer.Option(
        help="local: --jobs child `bench run`s at a time on this machine; slurm: one SLURM job per run, through "
        "submitit.")] = Launcher.local,
    jobs: Annotated[int | None, typer.Option(help="Runs at once (default: cores / --threads-per-job).")] = None,
    threads_per_job: Annotated[int | None, typer.Option(help="`bench run --threads` of each run.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and run nothing.")] = False,
    logs: LogsOpt = None,
    partition: Annotated[str | None, typer.Option(help="slurm: partition.")] = None,
    time_min: Annotated[int, typer.Option(help="slurm: time limit of each job in minutes.")] = 24 * 60,
    gpus: Annotated[int, typer.Option(help="slurm: GPUs per job.")] = 0,
    cpus_per_task: Annotated[int | None, typer.Option(help="slurm: CPUs per job.")] = None,
    device: DeviceOpt = "auto",
) -> None:
    """Run a queue file of `bench run` lines in parallel: decode-only runs wait for the run that trains
    their model, complete runs are skipped, a relaunch resumes the rest (how this project queues its runs)."""
    from bench.api.registry import RegistryError
    from bench.launch.joblog import default_log_dir
    from bench.launch.plan import plan_specs
    from bench.launch.queue import read_queue
    from bench.launch.view import plan_view

    if launcher is Launcher.inline:
        _fail("--launcher inline: bench queue runs in parallel; use --launcher local or --launcher slurm (or `bench "
              "run` per line).")
    pool = _preflight(launcher, jobs, threads_per_job, device, time_min, gpus, cpus_per_task)  # --dry-run too
    try:
        plan = plan_specs(read_queue(file), results_dir)
    except (RegistryError, ValueError) as exc:
        _fail(str(exc))
    logs = logs or default_log_dir(results_dir)
    if dry_run:
        console.print(plan_view(plan, title=f"{file} ({launcher.value} launcher)"))
        console.print(pool.line, markup=False)
        return
    if launcher is Launcher.local:
        outcomes = _launch_local(plan, results_dir, logs, pool, data_dir, device)
        failed = sum(o.state == "failed" for o in outcomes)
        skipped = sum(o.state == "skipped" for o in outcomes)
        if failed or skipped:
            _fail(f"{failed} run(s) failed and {skipped} did not start; logs in {logs}. Run the same command again "
                  "after fixing the cause: complete runs are skipped, the others resume.", code=1)
        return
    _launch_slurm(plan, results_dir, logs, jobs, threads_per_job, data_dir, partition, time_min, gpus,
                  cpus_per_task, device)


def _reproduce_inline(paper: str, table: str, budget: str, results_dir: Path, data_dir: Path | None,
                      device: str = "auto") -> None:
    """Today's behaviour: every runnable row in this process, one after another."""
    from bench import report
    from bench.runs import RunSpec
    from bench.runs.pipeline import execute

    rows = report.runnable_rows(paper, table, budget)
    if not rows:
        console.print(f"No row of {paper} table {table} can run at budget {budget}.")
    for row in rows:
        spec = RunSpec(system=row.system, task=row.task, split=row.split, budget=budget,
                       overrides=dict(row.overrides))
        execute(spec, results_dir=results_dir, data_dir=data_dir, say=_say(console), progress=console, device=device)


def _preflight(launcher: Launcher, jobs: int | None, threads: int | None, device: str, time_min: int = 24 * 60,
               gpus: int = 0, cpus_per_task: int | None = None) -> Pool:
    """The launch's own refusals (threads beyond the cores, a missing GPU or submitit, numbers out of range),
    made alike by the launch and by its --dry-run: the same line, the same exit code (#40)."""
    from bench.api.errors import UserError
    from bench.launch.preflight import preflight

    try:
        return preflight(launcher.value, jobs, threads, device, time_min=time_min, gpus=gpus,
                         cpus_per_task=cpus_per_task)
    except UserError as exc:
        _fail(str(exc))


def _launch_local(plan: list[Job], results_dir: Path, logs: Path, pool: Pool, data_dir: Path | None,
                  device: str = "auto") -> list[Outcome]:
    from bench.launch.local import run_local

    assert pool.jobs is not None and pool.threads is not None  # preflight resolved the local pool
    console.print(f"{pool.line}; logs in {logs}", soft_wrap=True, markup=False)
    return run_local(plan, results_dir=results_dir, logs=logs, n_jobs=pool.jobs, threads=pool.threads,
                     data_dir=data_dir, console=console, device=device)


def _launch_slurm(plan: list[Job], results_dir: Path, logs: Path, jobs: int | None, threads: int | None,
                  data_dir: Path | None, partition: str | None, time_min: int, gpus: int,
                  cpus_per_task: int | None, device: str = "auto") -> None:
    try:
        from bench.launch.slurm import SlurmOptions, submit_plan
    except ImportError as exc:
        _fail(f"--launcher slurm needs submitit ({exc}): pip install 'submitit>=1.5' (or the [slurm] extra).")
    from bench.launch.view import state_view

    options = SlurmOptions(partition=partition, time_min=time_min, gpus=gpus,
                           cpus_per_task=cpus_per_task or threads or 1, parallelism=jobs)
    subs = submit_plan(plan, results_dir=results_dir, logs=logs, options=options, threads=threads,
                       data_dir=data_dir, say=lambda msg: None, device=device)
    states = {s.plan.run_id: (s.state, s.detail or f"slurm job {s.job_id}") for s in subs}
    console.print(state_view(plan, states, title=f"submitted to SLURM; logs in {logs}"))


@app.command("status")
def status_cmd(
    target: Annotated[str, typer.Argument(help="paper:table, e.g. mist:6")],
    budget: Annotated[str, typer.Option(help="Budget of the runs.")] = "cpu",
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    logs: LogsOpt = None,
) -> None:
    """Where each run of a table stands: done (its record), running (the last line of its log),
    failed (the log and its last error line), stopped (killed; a relaunch resumes it), queued on SLURM,
    skipped (a run it needs failed), or not started."""
    from bench.api.registry import RegistryError
    from bench.launch.joblog import default_log_dir
    from bench.launch.plan import plan_table
    from bench.launch.status import plan_status
    from bench.launch.view import state_view
    from bench.papers import parse_table_ref
    from bench.store.records import require_dir

    logs = logs or default_log_dir(results_dir)
    try:
        paper, table = parse_table_ref(target)
        if not logs.is_dir():  # a typo is not "nothing started"; runs that failed before any record left logs
            require_dir(results_dir)
        plan = plan_table(paper, table, budget, results_dir)
    except (RegistryError, ValueError) as exc:
        _fail(str(exc))
    statuses = plan_status(plan, results_dir, logs)
    console.print(state_view(plan, {rid: (s.state, s.detail) for rid, s in statuses.items()},
                             title=f"{paper}:{table} at budget {budget}"))
    counts: dict[str, int] = {}
    for s in statuses.values():
        counts[s.state] = counts.get(s.state, 0) + 1
    console.print(", ".join(f"{n} {state}" for state, n in counts.items()) or "no runnable row")


@app.command("calibrate")
def calibrate_cmd(
    system: Annotated[str, typer.Option(help="Registered system name.")],
    task: Annotated[str, typer.Option(help="Task name.")],
    lr: Annotated[str, typer.Option(help="Comma-separated learning rates, e.g. 1e-4,3e-4,1e-3.")],
    steps: Annotated[str, typer.Option(help="Comma-separated numbers of updates, e.g. 300,600,1200.")],
    budget: Annotated[str, typer.Option(help="Budget whose preset the sweep starts from.")] = "cpu",
    dev: Annotated[int, typer.Option(help="Score on the first N examples of the dev split.")] = 500,
    recipe: Annotated[str | None, typer.Option(help="Recipe (default: the task's first).")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Other overrides for every point.")] = [],  # noqa: B006
    seed: Annotated[int, typer.Option(help="Seed of every point.")] = 42,
    threads: Annotated[int | None, typer.Option(help="Torch threads (see `bench run --threads`).")] = None,
    results_dir: Annotated[Path, typer.Option(help="Records go to RESULTS_DIR/calibration/.")] = Path("results"),
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
) -> None:
    """Sweep learning rate x updates on a dev subset; writes results/calibration/ (plot: `bench table`)."""
    from bench.api.registry import RegistryError
    from bench.data import DataError
    from bench.runs import parse_overrides
    from bench.workflows.calibrate import calibrate

    if threads is not None:
        _set_threads(threads)
    _at_least("--dev", dev, 1)
    try:
        lrs = [float(x) for x in lr.split(",") if x.strip()]
        updates = [int(x) for x in steps.split(",") if x.strip()]
    except ValueError:
        _fail(f"--lr {lr!r} / --steps {steps!r}: give comma-separated numbers, e.g. --lr 1e-4,3e-4 --steps 300,600")
    try:
        summary = calibrate(system, task, lrs, updates, budget=budget, dev=dev, recipe=recipe,
                            overrides=parse_overrides(set_), seed=seed, results_dir=results_dir,
                            data_dir=data_dir, say=_say(console), progress=console, device=device)
    except (RegistryError, DataError, ValueError) as exc:
        _fail(str(exc))
    for pt in summary["points"]:
        flag = "  degenerate" if pt["degenerate"] else ""
        console.print(f"lr {pt['lr']:<8g} updates {pt['updates']:>6}  {summary['metric']} {pt['score']:.2f}  "
                      f"distinct {pt['distinct_ratio']:.1%}{flag}")


@app.command("order")
def order_cmd(
    target: Annotated[str, typer.Argument(help="paper:table, e.g. mist:3")],
    budget: Annotated[str, typer.Option(help="Budget of the runs whose order is compared.")] = "cpu",
    samples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples.")] = 1000,
    results_dir: Annotated[Path, typer.Option(help="Run records; writes RESULTS_DIR/ordering/.")] = Path("results"),
    data_dir: DataDir = None,
) -> None:
    """Kendall's tau between a table's reported and reproduced order, with a bootstrap interval and
    paired tests of adjacent rows, and each row against the harness reference baseline (copy_source,
    lead1) on the same examples; `bench table` prints them as the table's ordering and reference lines."""
    from bench.papers import parse_table_ref
    from bench.store.records import require_dir
    from bench.workflows.ordering import compute

    try:
        paper, table = parse_table_ref(target)
        done = compute(paper, table, budget, require_dir(results_dir), data_dir, samples=samples, say=_say(console))
    except (KeyError, ValueError) as exc:
        _fail(str(exc))
    if not done:
        _fail(f"{target}: no column has 3 or more reproduced rows at budget {budget} over the same examples, "
              "nor a reproduced row with a harness reference baseline run over its examples.")


@app.command("rescore")
def rescore_cmd(
    run_ids: Annotated[list[str] | None, typer.Argument(help="Run ids (default: every record).")] = None,
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
    data_dir: DataDir = None,
) -> None:
    """Score stored outputs under the task's default recipes a record lacks, and add missing output
    statistics (outputs and test split checked by sha256; no re-run)."""
    from bench.store.records import require_dir
    from bench.workflows.rescore import RescoreError, rescore

    require_dir(results_dir)  # a typo'd folder is an error, not "nothing to rescore"
    paths = [results_dir / f"{r}.json" for r in run_ids] if run_ids else sorted(results_dir.glob("*.json"))
    for path in paths:
        if not path.is_file():
            _fail(f"{path} not found; `ls {results_dir}` lists the recorded runs.")
        try:
            added = rescore(path, data_dir=data_dir, say=_say(console))
        except RescoreError as exc:
            _fail(str(exc))
        console.print(f"{path}: " + (f"added {', '.join(added)}" if added else "nothing missing"))


@app.command("refile")
def refile_cmd(
    run_id: Annotated[str, typer.Argument(help="A recorded run id (`ls results`).")],
    set_: Annotated[list[str], typer.Option("--set", help="Pin a setting the record was made with, key=value "
                                            "(repeatable).")] = [],  # noqa: B006
    unset: Annotated[list[str], typer.Option("--unset", help="Drop an override the preset now resolves to the "
                                             "recorded value (repeatable).")] = [],  # noqa: B006
    results_dir: Annotated[Path, typer.Option(help="Run records.")] = Path("results"),
) -> None:
    """Move a record to another spec that resolves to exactly its settings and model, without re-running it:
    after a calibration moved a preset, pin the old preset's records (--set steps=2400) and give the
    calibration point's runs to the preset (--unset steps)."""
    from bench.runs import parse_overrides
    from bench.workflows.refile import RefileError, refile

    try:
        dest = refile(run_id, parse_overrides(set_), list(unset), results_dir)
    except (RefileError, ValueError) as exc:  # RunLookupError (no such record) is a ValueError
        _fail(str(exc))
    console.print(f"{results_dir / run_id}.json -> {dest} (outputs moved with it; `bench order …` recomputes "
                  "orderings that named it)")


@app.command("latency")
def latency(
    task: Annotated[str, typer.Option(help="Task.")],
    systems: Annotated[str, typer.Option(help="Comma-separated system names.")],
    split: Annotated[str, typer.Option(help="Split.")] = "test",
    baseline: Annotated[str | None, typer.Option(help="Baseline system for speedups (timed too).")] = None,
    budget: Annotated[str, typer.Option(help="Budget of the systems' presets (paper: the papers' sizes).")] = "smoke",
    n: Annotated[int, typer.Option(help="Timed items per system.")] = 100,
    rounds: Annotated[int, typer.Option(help="Interleaved rounds.")] = 5,
    min_items: Annotated[int, typer.Option(help="Fewer timed items per system make the run INVALID (recorded "
                                           "in the signature's settings).")] = 100,
    length_forced: Annotated[bool, typer.Option(help="Force reference lengths (untrained weights).")] = False,
    weights: Annotated[str | None, typer.Option(
        help="'random': time each system's architecture at --budget size with untrained (seeded) weights, "
        "built without download or training: for speed columns only; implies --length-forced.")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Override key=value for every system, or "
                                             "system.key=value for one (repeatable), e.g. fairseq_cmlm.iterations=4.")
                    ] = [],  # noqa: B006
    stand_in: Annotated[list[str], typer.Option("--stand-in", help="ROW=TIMED: let the timing of TIMED stand for "
                                                 "system ROW (checked: same family, passes and shape), e.g. "
                                                 "mist_bert=encoder_bert (repeatable).")] = [],  # noqa: B006
    record: Annotated[bool, typer.Option(help="Write results/latency/<id>.json (read by `bench table`).")] = False,
    results_dir: Annotated[Path, typer.Option(help="Where --record writes.")] = Path("results"),
    seed: Annotated[int, typer.Option(help="Seed of the item order and the bootstrap.")] = 0,
    precision: Annotated[str, typer.Option(help="fp32 | bf16 | auto: one decode precision for every system "
                                           "(autocast), shown in the signature when not fp32.")] = "fp32",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
) -> None:
    """Batch-size-1 latency of several systems, interleaved, with speedups and bootstrap CIs.

    Example (MIST Table 1 speed column, paper sizes, untrained):
    bench latency --task squad_qg --budget paper --weights random --baseline fairseq_transformer
    --systems fairseq_nat,fairseq_cmlm,encoder_bert --stand-in mist_bert=encoder_bert --record
    """
    import tempfile

    from bench.api.errors import LengthForcedUnsupported
    from bench.api.registry import RegistryError
    from bench.data import DataError, load_split
    from bench.env.device import activate, resolve_device
    from bench.latency import measure
    from bench.latency.prepare import parse_stand_ins, parse_system_overrides, prepare
    from bench.latency.record import LatencySpec, build_record, write_record

    for option, value, low in (("--n", n, 1), ("--rounds", rounds, 1), ("--min-items", min_items, 1),
                               ("--seed", seed, 0)):
        _at_least(option, value, low)
    names = [s.strip() for s in systems.split(",") if s.strip()]
    if baseline and baseline not in names:
        names.insert(0, baseline)
    if weights not in (None, "random"):
        _fail(f"--weights {weights!r}: the only choice is 'random' (leave it out for the systems' own weights).")
    if weights == "random" and not length_forced:
        err_console.print("[yellow]note:[/] --weights random implies --length-forced (untrained lengths are arbitrary)")
        length_forced = True
    try:
        overrides = parse_system_overrides(([] if weights is None else [f"weights={weights}"]) + list(set_), names)
        stand_ins = parse_stand_ins(stand_in, names)
        placed = resolve_device(device)
        activate(placed)
        with tempfile.TemporaryDirectory(prefix="bench-latency-") as work:
            prep = prepare(names, budget, overrides, task, Path(work), stand_ins, data_dir, say=_say(err_console),
                           device=placed)  # builds every system first: a bad --set writes no split cache
            sp = load_split(task, split, data_dir=data_dir)
            rep = measure(prep.systems, list(sp.examples), baseline=baseline, n=n, rounds=rounds,
                          length_forced=length_forced, seed=seed, min_items=min_items, console=err_console,
                          precision=precision, device=placed)
    except (RegistryError, DataError, LengthForcedUnsupported, ValueError, ImportError) as exc:
        _fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps(rep.to_json(), indent=2) + "\n")
    else:
        console.print(rep.render())
    if record:
        from bench.runs import harness_info

        spec = LatencySpec(task=task, split=split, budget=budget, systems=tuple(names), baseline=baseline, n=n,
                           rounds=rounds, length_forced=length_forced, weights=weights or "as-configured",
                           overrides=prep.overrides, stand_ins=prep.stand_ins, seed=seed)
        path = write_record(results_dir, build_record(spec, rep, prep.infos, prep.stand_in_basis, harness_info()))
        err_console.print(f"wrote {path}")


@app.command("fetch")
def fetch_cmd(
    system: Annotated[list[str], typer.Option("--system", help="A system to fetch for (repeatable), built at "
                                              "--budget.")] = [],  # noqa: B006
    budget: Annotated[str, typer.Option(help="Budget of --system / --table: smoke | cpu | paper.")] = "paper",
    set_: Annotated[list[str], typer.Option("--set", help="Override key=value of --system (repeatable), e.g. "
                                            "model=t5-small for hf_seq2seq.")] = [],  # noqa: B006
    paper: Annotated[str | None, typer.Option(help="Paper of --table (mist, copybert, erniegen).")] = None,
    table: Annotated[str | None, typer.Option(help="Every row of this table: --paper mist --table 1 (or --table "
                                              "mist:1).")] = None,
    checkpoint: Annotated[list[str], typer.Option("--checkpoint", help="A checkpoint by name or hub id "
                                                  "(repeatable), e.g. bert-base-uncased.")] = [],  # noqa: B006
    data: Annotated[bool, typer.Option("--data", help="Also fetch the full XSum corpus (hub copy EdinburghNLP/xsum) "
                                       "into $BENCH_XSUM or <data dir>/xsum/full.")] = False,
    data_dir: DataDir = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be fetched; download nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Download again what is present (e.g. after a failed "
                                        "check).")] = False,
) -> None:
    """Download (on a machine with internet) and check the checkpoints a system or a paper table needs, into
    $BENCH_CHECKPOINTS/<name> or the HF cache, and with --data the full XSum corpus: run it on a SLURM login
    node before `bench reproduce --launcher slurm`. Exits 1 when anything is missing or fails its check."""
    from rich.markup import escape

    from bench.api.errors import UserError
    from bench.papers import BUDGETS, normalize_paper, parse_table_ref
    from bench.workflows import fetch

    if budget not in BUDGETS:
        _fail(f"Unknown budget '{budget}'. Choose one of: {', '.join(BUDGETS)}.")
    if set_ and not system:
        _fail("--set applies to --system: name the system whose settings it changes.")
    if not (system or table or paper or checkpoint or data):
        _fail("Nothing to fetch: give --system NAME, --paper P --table T, --checkpoint NAME or --data.")
    plan = fetch.Plan()
    try:
        if table or paper:
            if table is None:
                _fail("--paper needs --table (e.g. --paper mist --table 1).")
            paper_key, table_id = parse_table_ref(table) if ":" in table else (None, table)
            if paper is None and paper_key is None:
                _fail("--table needs --paper (or write --table mist:1).")
            plan += fetch.plan_table(normalize_paper(paper) if paper else str(paper_key), table_id, budget)
        if system:
            from bench.runs import parse_overrides

            overrides = parse_overrides(set_)
            plan += fetch.plan_systems((name, budget, overrides) for name in system)
        plan += fetch.plan_checkpoints(checkpoint)
    except (UserError, ValueError, KeyError) as exc:
        _fail(str(exc))
    outcomes = fetch.fetch_plan(plan, dry_run=dry_run, force=force)
    if data:
        outcomes.append(fetch.fetch_xsum(data_dir, dry_run=dry_run, force=force))
    colour = {"fetched": "green", "present": "green", "would fetch": "cyan", "no hub copy": "yellow", "failed": "red"}
    view = Table("what", "from", "status", "where", "needed by", "detail", header_style="bold",
                 title="bench fetch" + (" (dry run: nothing downloaded)" if dry_run else ""))
    for o in outcomes:
        view.add_row(escape(o.what), escape(o.source), f"[{colour[o.status]}]{o.status}[/]", escape(o.where),
                     escape(", ".join(o.wanted_by)), escape(o.detail))
    console.print(view)
    for head, lines in (("Need no checkpoint", plan.nothing), ("Not planned (cannot be built at this budget)",
                                                                plan.skipped)):
        if lines:
            console.print(f"{head}: " + "; ".join(lines), markup=False)
    if "xsum" in plan.tasks and not data:
        console.print("These rows include XSum: add --data to fetch the full XSum corpus too.", markup=False)
    bad = [o for o in outcomes if not o.ok]
    if bad and not dry_run:
        _fail(f"{len(bad)} of {len(outcomes)} item(s) are not usable here ({', '.join(o.what for o in bad)}); "
              "the detail column says why and what to do.", code=1)


@app.command("validate")
def validate(data_dir: DataDir = None) -> None:
    """Check data checksums, Java/Perl/METEOR/ROUGE tools and backbone files before an expensive run."""
    from bench.workflows.validate import run_checks

    ok = True
    table = Table("check", "status", "detail", header_style="bold")
    for check in run_checks(data_dir):
        ok &= check.ok or check.optional
        status = "[green]ok[/]" if check.ok else ("[yellow]missing (optional)[/]" if check.optional else "[red]FAIL[/]")
        table.add_row(check.name, status, check.detail)
    console.print(table)
    if not ok:
        raise typer.Exit(1)


def main() -> None:
    """The ``bench`` entry point: a :class:`~bench.api.errors.UserError` anywhere becomes one line and exit 2; an
    environment problem (:class:`~bench.api.errors.EnvironmentProblem`, a folder that cannot be written) exit 1."""
    from rich.markup import escape

    from bench.api.errors import EnvironmentProblem, UserError

    try:
        app()
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except (EnvironmentProblem, OSError) as exc:
        from bench.api.atomic import is_unwritable, not_writable

        if isinstance(exc, OSError) and not isinstance(exc, EnvironmentProblem):
            if not is_unwritable(exc):
                raise
            exc = not_writable(exc.filename or ".", exc)  # a read-only $BENCH_CACHE, results/ or --out folder
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        sys.exit(1)


if __name__ == "__main__":
    main()
