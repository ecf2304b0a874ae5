"""Records read back: `bench show` (one run as a person reads it), `bench export` (every run as a table) and
`bench promote` (a workspace run copied into the committed results)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from bench.cli import common as ui
from bench.cli.common import DataDir, ResultsDir


@ui.app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="A recorded run id (`bench ls runs`), the short id the pages show "
                                          "(its last 8 characters) when unique, or its record's path.")],
    n: Annotated[int, typer.Option("-n", "--n", help="Outputs to show next to their references (≥ 0).")] = 5,
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
) -> None:
    """One record as a person reads it: spec, budget, scores with CIs, timings, output statistics,
    the first outputs next to their references, and where the files are."""
    from bench.runs.lookup import RunLookupError, find_record, outputs_of, split_of
    from bench.scoring.output_stats import degeneracy
    from bench.scoring.output_stats import summary as stats_summary
    from bench.store.records import outputs_file

    ui.check_counts(("-n", n, 0))
    try:
        path, rec = find_record(run_id, results_dir)
        outputs = outputs_of(rec)
        examples = list(split_of(rec, data_dir).examples)[:n]
    except (RunLookupError, ValueError) as exc:
        ui.fail(str(exc))
    spec, info, data = rec["spec"], rec.get("system") or {}, rec.get("data") or {}
    lit = ui.lit  # every value below comes from the record: text, never markup
    # rule, scores with CIs, signatures, budget line, and the outputs file read and checked (never the stored label)
    checked = outputs_file(rec, path)
    ui.print_scores(rec, ui.shown(checked) if checked is not None else None)
    ui.console.print(f"system [bold]{lit(spec['system'], one_line=True)}[/] "
                     + lit(f"({info.get('family')}, backbone {info.get('backbone')}); seed {spec.get('seed')}; "
                           f"overrides {spec.get('overrides') or {}}; {data.get('n_examples')} examples; "
                           f"harness {str((rec.get('harness') or {}).get('git_sha', '?'))[:12]}", one_line=True))
    timings = rec.get("timings") or {}
    ui.console.print(ui.plain("timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items())))
    from bench.runs.training_info import training_lines

    for line in training_lines(info.get("config") or {}):
        ui.console.print(ui.plain(line))
    stats = rec.get("output_stats")
    if stats and stats.get("n"):
        flag = "[red]DEGENERATE[/]: " + lit("; ".join(degeneracy(stats))) + "\n" if degeneracy(stats) else ""
        ui.console.print(f"{flag}{lit(f'outputs: {stats_summary(stats)}')}")
    if examples:
        from bench.api.text import clip

        table = Table("#", "output", "reference", header_style="bold", show_lines=True)
        for i, (ex, out) in enumerate(zip(examples, outputs, strict=False), 1):  # shown cut; scored whole
            table.add_row(str(i), ui.plain(clip(out)), ui.plain(clip(ex.target)))
        ui.console.print(table)
    ui.print_path("record", ui.shown(path))
    ui.print_path("workdir", (rec.get("model") or {}).get("workdir"))
    ui.print_where(path)


@ui.app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | jsonl")] = "csv",
    out: Annotated[Path | None, typer.Option(help="Output file (default: results.<format>).")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    system: Annotated[str | None, typer.Option(help="Only this system.")] = None,
    budget: Annotated[str | None, typer.Option(help="Only this budget.")] = None,
    results_dir: ResultsDir = None,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists (never a file in a results folder).")] = False,
) -> None:
    """Every record as a table (one row per run and recipe; bench.report.frame.load), written as csv/parquet/jsonl:
    the workspace's runs and the committed ones (column `results_dir` says which), or --results-dir alone."""
    from bench.report import frame as results
    from bench.runs.folders import folders
    from bench.store.targets import check_out_file

    where = folders(results_dir)
    try:
        df = results.filtered(results.load_folders(where), task=task, system=system, budget=budget)
        target = check_out_file(out or Path(f"results.{fmt}"), force=force, results_dirs=list(where.read))
        path = results.export(df, target, fmt)
    except ValueError as exc:
        ui.fail(str(exc))
    ui.console.print(ui.plain(f"{path}: {len(df)} rows x {len(df.columns)} columns"))


@ui.app.command("promote")
def promote_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="Run ids (or the short ids `bench ls runs` and the pages show) "
                                                 "of your workspace.")],
    source: Annotated[Path | None, typer.Option("--from", help="The folder the runs are in (default: your "
                                                "workspace, $BENCH_RESULTS or .cache/results).")] = None,
) -> None:
    """Copy runs from your workspace into results/, the committed evidence (record re-sealed, outputs checked
    against its sha256); then `bench table` puts them on the boards, and you commit results/ and reports/."""
    from bench.workflows.promote import PromoteError, promote

    for run_id in run_ids:
        try:
            dest = promote(run_id, source)
        except PromoteError as exc:
            ui.fail(str(exc))
        ui.print_path("promoted", ui.shown(dest))
    ui.console.print("Next: `bench table` (the boards under reports/), then commit results/ and reports/.",
                     markup=False)
