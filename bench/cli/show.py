"""Records read back: `bench show` (one run as a person reads it) and `bench export` (every run as a table)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from bench.cli import common as ui
from bench.cli.common import RESULTS_DIR, DataDir, ResultsDir


@ui.app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="A recorded run id (`ls results`), or its record's path.")],
    n: Annotated[int, typer.Option("-n", "--n", help="Outputs to show next to their references (≥ 0).")] = 5,
    results_dir: ResultsDir = RESULTS_DIR,
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


def training_lines(config: dict[str, Any]) -> list[str]:
    """What a record says its training ran with and why: the measured speed policy's choice, the reason and the
    probe's figures (records since #59), or for older records the precision and compile that ran."""
    train = config.get("train")
    if not isinstance(train, dict) or "precision" not in train:
        return []
    ran = f"{train.get('precision')}{' + compile' if train.get('compiled') else ' eager'}"
    policy = train.get("policy")
    if not isinstance(policy, dict) or not policy:
        asked = f"precision {config.get('precision')}, compile {config.get('compile')}"
        return [f"training: {ran} (asked: {asked}; before the measured speed policy, auto read the CPU flags)"]
    lines = [f"training: {ran}, {policy.get('source', '?')}: {policy.get('why', '?')}"]
    probe = policy.get("probe")
    if isinstance(probe, dict) and probe.get("summary"):
        when = f", probed {probe['created']}" if probe.get("created") else ""
        lines.append(f"speed probe ({probe.get('shape_class', '?')}{when}): {probe['summary']}")
    if policy.get("notice"):
        lines.append(f"notice: {policy['notice']}")
    return lines


@ui.app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | jsonl")] = "csv",
    out: Annotated[Path | None, typer.Option(help="Output file (default: results.<format>).")] = None,
    task: Annotated[str | None, typer.Option(help="Only this task.")] = None,
    system: Annotated[str | None, typer.Option(help="Only this system.")] = None,
    budget: Annotated[str | None, typer.Option(help="Only this budget.")] = None,
    results_dir: ResultsDir = RESULTS_DIR,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists (never a file in a results folder).")] = False,
) -> None:
    """Every record as a table (one row per run and recipe; bench.report.frame.load), written as csv/parquet/jsonl."""
    from bench.report import frame as results
    from bench.store.targets import check_out_file

    try:
        df = results.filtered(results.load(results_dir), task=task, system=system, budget=budget)
        target = check_out_file(out or Path(f"results.{fmt}"), force=force, results_dirs=[results_dir])
        path = results.export(df, target, fmt)
    except ValueError as exc:
        ui.fail(str(exc))
    ui.console.print(ui.plain(f"{path}: {len(df)} rows x {len(df.columns)} columns"))
