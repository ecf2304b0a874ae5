"""Jobs over many runs and records: `bench calibrate` (a learning-rate x updates sweep), `bench order`
(reported vs reproduced ordering), `bench fetch` (checkpoints and data, on a machine with internet) and
`bench validate` (tools and data before an expensive run)."""

from __future__ import annotations

from typing import Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import DataDir, DeviceOpt, EvidenceDir, ResultsDir


@ui.app.command("calibrate")
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
    results_dir: ResultsDir = None,
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
) -> None:
    """Sweep learning rate x updates on a dev subset; writes calibration/ in the results folder (your workspace
    unless --results-dir; the plot: `bench table --results-dir` of that folder)."""
    from bench.api.registry import RegistryError
    from bench.data import DataError
    from bench.env.threads import set_threads
    from bench.runs import parse_overrides
    from bench.runs.folders import write_dir
    from bench.workflows.calibrate import calibrate

    ui.check_counts(("--threads", threads, 1), ("--dev", dev, 1))
    if threads is not None:
        set_threads(threads)
    try:
        lrs = [float(x) for x in lr.split(",") if x.strip()]
        updates = [int(x) for x in steps.split(",") if x.strip()]
    except ValueError:
        ui.fail(f"--lr {lr!r} / --steps {steps!r}: give comma-separated numbers, e.g. --lr 1e-4,3e-4 --steps 300,600")
    try:
        summary = calibrate(system, task, lrs, updates, budget=budget, dev=dev, recipe=recipe,
                            overrides=parse_overrides(set_), seed=seed, results_dir=write_dir(results_dir),
                            data_dir=data_dir, say=ui.say(ui.console), progress=ui.console, device=device)
    except (RegistryError, DataError, ValueError) as exc:
        ui.fail(str(exc))
    for pt in summary["points"]:
        flag = "  degenerate" if pt["degenerate"] else ""
        ui.console.print(ui.plain(f"lr {pt['lr']:<8g} updates {pt['updates']:>6}  {summary['metric']} "
                                  f"{pt['score']:.2f}  distinct {pt['distinct_ratio']:.1%}{flag}"))


@ui.app.command("order")
def order_cmd(
    target: Annotated[str, typer.Argument(help="paper:table, e.g. mist:3")],
    budget: Annotated[str, typer.Option(help="Budget of the runs whose order is compared.")] = "cpu",
    samples: Annotated[int, typer.Option(help="Bootstrap resamples (1 to 100,000: what an ordering record may "
                                              "claim, since `--deep` resamples it again).")] = 1000,
    results_dir: EvidenceDir = None,
    data_dir: DataDir = None,
) -> None:
    """Kendall's tau between a table's reported and reproduced order, with a bootstrap interval and
    paired tests of adjacent rows, and each row against the harness reference baseline (copy_source,
    lead1) on the same examples, from the committed results (or --results-dir); writes ordering/ there (a file
    whose content is unchanged is left as it is), which `bench table` prints as the table's ordering and reference
    lines."""
    from bench.papers import parse_table_ref
    from bench.runs.folders import evidence_dir
    from bench.store.records import require_dir
    from bench.store.sealed import MAX_RESAMPLES
    from bench.workflows.ordering import compute

    ui.check_counts(("--samples", samples, 1))
    if samples > MAX_RESAMPLES:
        ui.fail(f"--samples {samples}: at most {MAX_RESAMPLES:,} (an ordering record claims no more: `bench table "
                "--check --deep` resamples it again).")
    try:
        paper, table = parse_table_ref(target)
        done = compute(paper, table, budget, require_dir(evidence_dir(results_dir)), data_dir, samples=samples,
                       say=ui.say(ui.console))
    except (KeyError, ValueError) as exc:
        ui.fail(str(exc))
    if not done:
        ui.fail(f"{target}: no column has 3 or more reproduced rows at budget {budget} over the same examples, "
                "nor a reproduced row with a harness reference baseline run over its examples.")


@ui.app.command("fetch")
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
    data: Annotated[bool, typer.Option("--data", help="Also fetch every task's raw files from their public sources "
                                       "(pinned by commit and sha256) into the data directory, and the full XSum "
                                       "corpus (hub copy EdinburghNLP/xsum).")] = False,
    data_dir: DataDir = None,
    mirror: Annotated[str | None, typer.Option(help="With --data: fetch https://HOST/PATH from MIRROR/HOST/PATH "
                                               "instead (default $BENCH_DATA_MIRROR).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be fetched; download nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Download again what is present (e.g. after a failed "
                                        "check).")] = False,
) -> None:
    """Download (on a machine with internet) and check the checkpoints a system or a paper table needs, into
    $BENCH_CHECKPOINTS/<name> or the HF cache, and with --data every task's raw data: run it on a SLURM login
    node before `bench reproduce --launcher slurm`. Exits 1 when anything is missing or fails its check."""
    from bench.api.errors import UserError
    from bench.papers import BUDGETS, normalize_paper, parse_table_ref
    from bench.workflows import fetch

    if budget not in BUDGETS:
        ui.fail(f"Unknown budget '{budget}'. Choose one of: {', '.join(BUDGETS)}.")
    if set_ and not system:
        ui.fail("--set applies to --system: name the system whose settings it changes.")
    if not (system or table or paper or checkpoint or data):
        ui.fail("Nothing to fetch: give --system NAME, --paper P --table T, --checkpoint NAME or --data.")
    plan = fetch.Plan()
    try:
        if table or paper:
            if table is None:
                ui.fail("--paper needs --table (e.g. --paper mist --table 1).")
            paper_key, table_id = parse_table_ref(table) if ":" in table else (None, table)
            if paper is None and paper_key is None:
                ui.fail("--table needs --paper (or write --table mist:1).")
            plan += fetch.plan_table(normalize_paper(paper) if paper else str(paper_key), table_id, budget)
        if system:
            from bench.runs import parse_overrides

            overrides = parse_overrides(set_)
            plan += fetch.plan_systems((name, budget, overrides) for name in system)
        plan += fetch.plan_checkpoints(checkpoint)
    except (UserError, ValueError, KeyError) as exc:
        ui.fail(str(exc))
    outcomes = fetch.fetch_plan(plan, dry_run=dry_run, force=force)
    if data:
        outcomes += ui.render_data_fetch(data_dir, mirror, dry_run=dry_run, force=force)
    colour = {"fetched": "green", "present": "green", "would fetch": "cyan", "no hub copy": "yellow", "failed": "red"}
    from rich.text import Text

    from bench.env.term_layout import Rows, print_fitted

    view = Rows(["what", "from", "status", "where", "needed by", "detail"], atomic=(0, 1, 2, 3),
                title="bench fetch" + (" (dry run: nothing downloaded)" if dry_run else ""))
    for o in outcomes:  # URLs and paths are atomic: a narrow terminal stacks the rows rather than cut them
        view.add(o.what, o.source, Text(o.status, style=colour[o.status]), o.where, ", ".join(o.wanted_by), o.detail)
    print_fitted(view, ui.console)
    for head, lines in (("Need no checkpoint", plan.nothing), ("Not planned (cannot be built at this budget)",
                                                                plan.skipped)):
        if lines:
            ui.console.print(f"{head}: " + "; ".join(lines), markup=False)
    if "xsum" in plan.tasks and not data:
        ui.console.print("These rows include XSum: add --data to fetch the full XSum corpus too.", markup=False)
    bad = [o for o in outcomes if not o.ok]
    if bad and not dry_run:
        ui.fail(f"{len(bad)} of {len(outcomes)} item(s) are not usable here ({', '.join(o.what for o in bad)}); "
                "the detail column says why and what to do.", code=1)


@ui.app.command("validate")
def validate(data_dir: DataDir = None) -> None:
    """Check data checksums, Java/Perl/METEOR/ROUGE tools and backbone files before an expensive run."""
    from rich.text import Text

    from bench.env.term_layout import words
    from bench.workflows.validate import run_checks

    ok = True
    for check in run_checks(data_dir):  # one block per check: a path in its detail is printed whole, never cut
        ok &= check.ok or check.optional
        status = ("ok", "green") if check.ok else (("missing (optional)", "yellow") if check.optional else
                                                   ("FAIL", "bold red"))
        ui.console.print(Text.assemble((f"{status[0]:<4}", status[1]), " ", (check.name, "bold")), soft_wrap=True)
        for line in words(check.detail, ui.console.width - 5):
            ui.console.print(ui.plain(f"     {line}"), soft_wrap=True)
    if not ok:
        raise typer.Exit(1)
