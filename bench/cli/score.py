"""Scoring outputs files and runs: `bench score` (one file under one or every recipe) and `bench compare`
(paired significance between two runs or two files)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from bench.cli import common as ui
from bench.cli.common import DataDir, LimitOpt, ResultsDir


@ui.app.command("score")
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
    from bench.data import load_split
    from bench.runs import check_limit, first_examples

    _refuse_score_conflicts(recipe, all_recipes, ref, key, {"--task": task, "--split": split, "--limit": limit,
                                                            "--data-dir": data_dir})
    split = split or "test"
    try:
        if recipe is not None:
            scoring.RECIPES.get(recipe)  # a misspelt recipe is named before any file is read
        with scoring.ScoringSession() as session:
            if ref is not None:
                if all_recipes or recipe is None:
                    ui.fail("--ref needs exactly one --recipe (recipes read task fields otherwise).")
                results = [scoring.score_files(recipe, hyp, ref, key, session=session)]
            else:
                if task is None:
                    ui.fail("Give --task (and --split) or --ref.")
                check_limit(limit)  # before the split is looked up or built
                sp = first_examples(load_split(task, split, data_dir=data_dir), limit)  # as `bench run --limit`
                hyps = _read_outputs(hyp, sp, limit)
                names = scoring.applicable_recipes(task) if all_recipes or recipe is None else [recipe]
                results = [scoring.score_split(r, hyps, sp, session=session) for r in names]
    except (scoring.ScoringError, KeyError, ValueError) as exc:
        ui.fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps([r.to_json() for r in results], indent=2) + "\n")
        return
    ui.render_scores(results)


def _refuse_score_conflicts(recipe: str | None, all_recipes: bool, ref: Path | None, key: Path | None,
                            task_side: dict[str, Any]) -> None:
    """Two options that ask for different things are an error, never one silently winning (#40)."""
    if recipe is not None and all_recipes:
        ui.fail(f"--recipe {recipe} and --all-recipes conflict: --all-recipes scores under every applicable "
                "recipe; give one of them.")
    given = [opt for opt, value in task_side.items() if value is not None]
    if ref is not None and given:
        ui.fail(f"--ref and {' '.join(given)} conflict: --ref scores against a reference file (with one --recipe), "
                f"{given[0]} against a task's split; give one of them.")
    if key is not None and ref is None:
        ui.fail("--key goes with --ref (the grouping keys of a reference file); a --task split has its own keys.")


@ui.app.command("compare")
def compare(
    a: Annotated[str, typer.Argument(help="Run id of system A (or its outputs file, with --task).")],
    b: Annotated[str, typer.Argument(help="Run id of system B (or its outputs file: same split, same order).")],
    task: Annotated[str | None, typer.Option(help="Task (outputs files only; a run id says it).")] = None,
    split: Annotated[str, typer.Option(help="Split (outputs files only).")] = "test",
    recipe: Annotated[list[str] | None, typer.Option(
        "--recipe", help="Recipe; repeat for one table per recipe (default: the task's first).")] = None,
    limit: LimitOpt = None,
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="The raw result as JSON (delta = a − b, as the table); a list "
                                          "with several --recipe.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Compute again rather than read the result cached "
                                           "in $BENCH_CACHE/compare (keyed by both outputs, split, recipe and "
                                           "code; never evidence, and never shown over a record's number).")] = False,
    agree_first: Annotated[int, typer.Option(help="Also count byte-identical outputs over the first N items "
                                             "(and all): does a converted decoder write what the original does?")
                           ] = 200,
) -> None:
    """Paired significance (bootstrap and approximate randomisation) between two runs or two outputs files.

    Prints one table per recipe: a, b, Δ = a − b with its 95% CI, p_bootstrap and p_AR per metric.
    With run ids (or the short ids the pages show; looked up in your workspace and results/, or --results-dir)
    the task, split, examples and outputs come from the records (runs over different examples are refused);
    with files, give --task (and --split/--limit as the runs used).
    """
    from bench import scoring
    from bench.data import TASKS, load_split
    from bench.runs import check_limit, first_examples
    from bench.runs.folders import folders, names_runs
    from bench.runs.lookup import RunLookupError, compare_runs
    from bench.scoring.agreement import identical_line, identical_outputs
    from bench.scoring.compare_cache import cached_compare

    try:
        if task is None or names_runs([a, b], folders(results_dir)):
            if task is None and all(Path(x).is_file() and not x.endswith(".json") for x in (a, b)):
                ui.fail("comparing outputs files needs --task (run ids need no options).")
            compared = compare_runs(a, b, recipe, results_dir=results_dir, data_dir=data_dir, use_cache=not no_cache,
                                    agree_first=agree_first, on_miss=_print_computing)
            results, a, b = compared.results, compared.run_a, compared.run_b
            agree = results[0]["identical"]
        else:
            check_limit(limit)
            sp = first_examples(load_split(task, split, data_dir=data_dir), limit)  # as `bench run --limit` decoded
            hyps_a, hyps_b = (_read_outputs(Path(h), sp, limit) for h in (a, b))
            agree = identical_outputs(hyps_a, hyps_b, agree_first)
            with scoring.ScoringSession() as session:
                results = [{**cached_compare(n, hyps_a, hyps_b, sp, session=session, use_cache=not no_cache,
                                             on_miss=_print_computing),
                            "identical": agree} for n in recipe or [TASKS.get(task).default_recipes[0]]]
    except (scoring.ScoringError, RunLookupError, ValueError) as exc:
        ui.fail(str(exc))
    if as_json:
        ui.console.print_json(json.dumps(results[0] if len(results) == 1 else results))
        return
    from rich import box
    from rich.text import Text

    from bench.env.term_layout import folded
    from bench.report.compare_table import FOOTNOTE, HEADER, caption, compare_rows

    for result in results:
        table = Table(title=ui.plain(caption(result, a, b)), header_style="bold", title_justify="left",
                      box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for i, head in enumerate(HEADER):
            table.add_column(head, justify="right" if i else "left", no_wrap=True)
        for row in compare_rows(result):
            table.add_row(*(Text(c) for c in row))
        ui.console.print(table)
        for line in folded(result["signature"], ui.console.width):
            ui.console.print(ui.plain(line, style="dim"))
    ui.console.print(ui.plain(identical_line(agree)))
    ui.console.print(FOOTNOTE, markup=False)


def _print_computing(recipe: str, n_items: int) -> None:
    """Say, before a cold comparison, why this call takes a minute where the next takes a second (#58)."""
    ui.err_console.print(ui.plain(
        f"computing {recipe} over {n_items:,} items (1,000 bootstrap resamples, 10,000 randomisation trials per "
        "metric): not in the cache yet, so this can take minutes on a large split; the next call reads "
        "$BENCH_CACHE/compare", style="dim"), soft_wrap=not ui.err_console.is_terminal)


def _read_outputs(path: Path, sp: Any, limit: int | None) -> list[str]:
    """One output per reference; a short file gets the hint that it may be a `--limit N` run's. The file is read
    once, through the checked reader (a FIFO, a device or an oversized file is refused before any byte is read)."""
    from bench import scoring
    from bench.scoring.inputs import check_counts, check_hypotheses, read_lines

    label = f"{sp.task}/{sp.name}" + (f" (first {len(sp):,})" if sp.partial else "")
    lines = read_lines(path).lines
    try:
        check_counts(len(lines), len(sp), str(path), label)
    except scoring.ScoringError as exc:
        if limit is None and 0 < len(lines) < len(sp):
            raise scoring.ScoringInputError(
                f"{exc}\nIf it holds the outputs of a `bench run ... --limit {len(lines)}` run, add --limit "
                f"{len(lines)}.") from exc
        raise
    check_hypotheses(lines, str(path))
    return lines
