"""`bench latency`: batch-size-1 latency of several systems, interleaved, planned by
:func:`bench.latency.plan.plan_latency` and timed by :func:`bench.latency.plan.run_latency`."""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import Annotated

import typer

from bench.cli import common as ui
from bench.cli.common import DataDir, DeviceOpt, ResultsDir

#: the option groups of `bench latency --help` (#58: 273 lines at 80 columns)
DESIGN = "Timing design (docs/latency.md)"
SWEEP = "Batch sweep (with --batch-sizes)"
_design = partial(typer.Option, rich_help_panel=DESIGN)
_sweep = partial(typer.Option, rich_help_panel=SWEEP)


@ui.app.command("latency")
def latency(
    task: Annotated[str, typer.Option(help="Task (or give --runs).")] = "",
    systems: Annotated[str, typer.Option(help="Comma-separated system names (or give --runs).")] = "",
    split: Annotated[str, typer.Option(help="Split.")] = "test",
    baseline: Annotated[str | None, typer.Option(help="Baseline system for speed-ups (timed too).")] = None,
    budget: Annotated[str, typer.Option(help="Budget of the systems' presets (paper: the papers' sizes).")] = "smoke",
    n: Annotated[int, typer.Option(help="Timed units (items; with --batch-sizes: the items a B's batches hold at "
                                   "least). Every system times every unit once per round.")] = 100,
    weights: Annotated[str | None, typer.Option(
        help="'random': time each system's architecture at --budget size with untrained (seeded) weights, built "
        "without download or training: for speed columns only; implies --length-forced.")] = None,
    length_forced: Annotated[bool, typer.Option("--length-forced", help="Force reference lengths (untrained weights).")
                             ] = False,
    runs: Annotated[str | None, typer.Option(help="Comma-separated run ids: time those runs' own trained models "
                                             "(they give the systems, task, split and budget).")] = None,
    set_: Annotated[list[str], typer.Option("--set", help="Override key=value for every system, or system.key=value "
                                            "for one (repeatable), e.g. fairseq_cmlm.iterations=4.")
                    ] = [],  # noqa: B006
    stand_in: Annotated[list[str], typer.Option("--stand-in", help="ROW=TIMED: let the timing of TIMED stand for "
                                                "system ROW (checked: same family, passes and shape), e.g. "
                                                "mist_bert=encoder_bert (repeatable).")] = [],  # noqa: B006
    record: Annotated[bool, typer.Option("--record", help="Write latency/<id>.json in the results folder (read by "
                                         "`bench table`).")] = False,
    results_dir: ResultsDir = None,
    precision: Annotated[str, typer.Option(help="fp32 | bf16 | auto: one decode precision for every system (autocast), "
                                   "in the signature when not fp32.")] = "fp32",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    data_dir: DataDir = None,
    device: DeviceOpt = "auto",
    rounds: Annotated[int, _design(help="Rounds at least: every system times every unit once per "
                                "round, back to back in a random order, the units reshuffled each round.")] = 3,
    max_rounds: Annotated[int, _design(help="Extra rounds run while a speed-up is INCONCLUSIVE (its CI "
                                    "too wide), up to this many in all ...")] = 12,
    time_budget_s: Annotated[float, _design(help="... and within this many seconds of timing (the "
                                         "minimum --rounds always run).")] = 600.0,
    aa: Annotated[str, _design(help="The A/A control: a second arm of one system whose ratio to its twin "
                            "is the meter's own false difference. 'auto' (the fastest system), a system, or 'none' "
                            "(then no speed-up is VALID).")] = "auto",
    x2_control: Annotated[str, _design(help="The known-ratio control: an arm that decodes every item "
                                    "twice, truly 2.00x slower; the meter must read it within 3 %. 'auto' (the "
                                    "fastest system at float32: an int8 model's second decode runs warm), a system, "
                                    "or 'none'.")] = "auto",
    min_items: Annotated[int, _design(help="Fewer timed items per system make the run INVALID.")] = 100,
    warmup_items: Annotated[int, _design(help="Untimed items per system before timing (at least this "
                                      "many and --warmup-s).")] = 20,
    warmup_s: Annotated[float, _design(help="Seconds of warm-up per system, at least.")] = 5.0,
    min_duration_s: Annotated[float, _design(help="Extra rounds run until every system was timed this "
                                          "long (0: exactly --n items).")] = 10.0,
    seed: Annotated[int, _design(help="Seed of the item order and the bootstrap.")] = 0,
    quiet_gate: Annotated[float | None, _design(
        help="Time each item only in a quiet window: a canary probe before and after it must read "
        "within this fraction of its reference, else the timing is taken again, e.g. 0.15 (for contention in "
        "bursts; named in the signature).")] = None,
    batch_sizes: Annotated[str | None, _sweep(help="Sweep these batch sizes, e.g. 1,8,32,128: "
                                            "sentences/s, speed-ups per B, crossovers, memory; writes "
                                            "sweep/<id>.json with --record.")] = None,
    threads: Annotated[str, _sweep(help="Thread counts to sweep, e.g. 1,2 (1: the latency track; all "
                                 "cores: the throughput track).")] = "1",
    bucket: Annotated[str, _sweep(help="none | sorted (batch items sorted by source length, the same "
                                "for every system).")] = "none",
    energy: Annotated[bool, _sweep("--energy", help="J/sentence from RAPL (CPU) or NVML (GPU) over >= "
                                 "10 s per cell, idle power subtracted.")] = False,
    min_batches: Annotated[int, _sweep(help="Timed batches per B at least (max(this, --n / B)); fewer "
                                     "make a large B affordable on a CPU and its CI wider.")] = 8,
) -> None:
    """Batch-size-1 latency of several systems, paired and randomized, with speed-ups, CIs and verdicts.

    Every system (and an A/A arm) times each unit back to back in a random order, for several reshuffled rounds; a
    speed-up is VALID when its CI is narrow, its per-round ratios agree and the A/A control reads 1 (docs/latency.md).

    Example (MIST Table 1 speed column, paper sizes, untrained):
    bench latency --task squad_qg --budget paper --weights random --baseline fairseq_transformer
    --systems fairseq_nat,fairseq_cmlm,encoder_bert --stand-in mist_bert=encoder_bert --record
    """
    from bench.api.errors import UserError
    from bench.latency.plan import run_latency
    from bench.latency.render import report_renderable

    try:
        from bench.runs.folders import write_dir, written_note
        from bench.workflows.trained_latency import plan_command
        plan, inputs = plan_command(
            task, systems, runs, split=split, baseline=baseline, budget=budget,
            results_dir=results_dir, data_dir=data_dir,
            say=ui.say(ui.err_console), n=n, rounds=rounds, min_items=min_items, length_forced=length_forced,
            weights=weights, sets=set_, stand_ins=stand_in, seed=seed, precision=precision, warmup_items=warmup_items,
            warmup_s=warmup_s, min_duration_s=min_duration_s, max_rounds=max_rounds, max_duration_s=time_budget_s,
            aa=None if aa == "none" else aa, x2=None if x2_control == "none" else x2_control)
        for note in plan.notes:
            ui.err_console.print(f"[yellow]note:[/] {ui.lit(note)}", soft_wrap=True)
        from bench.runs import harness_info
        harness, record_to = (harness_info(), write_dir(results_dir)) if record else (None, None)  # the code that timed
        if batch_sizes is not None:
            _render_sweep(plan, batch_sizes, threads, bucket, energy, data_dir, device, record_to,
                          harness, as_json, min_batches, quiet_gate, inputs and inputs.loaders)
            return
        done = run_latency(plan, data_dir=data_dir, device=device, say=ui.say(ui.err_console),
                           console=ui.err_console, record_to=record_to, harness=harness,
                           quiet_gate=quiet_gate, **(inputs.kwargs() if inputs else {}))
    except (UserError, ValueError, ImportError) as exc:
        ui.fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps(done.report.to_json(), indent=2) + "\n")
    else:
        ui.console.print(report_renderable(done.report))
    if done.record is not None:
        ui.err_console.print(*map(ui.plain, written_note(done.record).splitlines()), sep="\n", soft_wrap=True)


def _render_sweep(plan: object, batch_sizes: str, threads: str, bucket: str, energy: bool, data_dir: object,
                  device: str, record_to: object, harness: object, as_json: bool, min_batches: int = 8,
                  quiet_gate: float | None = None, loaders: object = None) -> None:
    """``--batch-sizes``: the sweep instead of the single-stream meter (records under sweep/)."""
    from bench.latency.plan import positive_ints, run_sweep
    from bench.latency.render import sweep_lines
    from bench.runs.folders import written_note

    record, path = run_sweep(plan, positive_ints("--batch-sizes", batch_sizes), positive_ints("--threads", threads),  # type: ignore[arg-type]
                             bucket=bucket, energy=energy, data_dir=data_dir, device=device,  # type: ignore[arg-type]
                             min_batches=min_batches, quiet_gate=quiet_gate,
                             say=ui.say(ui.err_console), record_to=record_to, harness=harness,  # type: ignore[arg-type]
                             loaders=loaders)  # type: ignore[arg-type]
    if as_json:
        sys.stdout.write(json.dumps(record, indent=2) + "\n")
    else:
        for line in sweep_lines(record):
            ui.console.print(ui.plain(line))
    if path is not None:
        ui.err_console.print(*map(ui.plain, written_note(path).splitlines()), sep="\n", soft_wrap=True)


@ui.app.command("preflight")
def preflight(
    seconds: Annotated[float, typer.Option(help="How long to read the canary.")] = 120.0,
    windows: Annotated[int, typer.Option(help="Readings judged by the drift rule (spread over --seconds).")] = 24,
    threads: Annotated[int, typer.Option(help="Torch threads, as the run will use (1: the latency track).")] = 1,
    tolerance: Annotated[float, typer.Option(help="The canary rule's drift tolerance (the meter's: 0.25).")] = 0.25,
    quiet_gate: Annotated[float, typer.Option(help="The quiet-gate band to report the share of quiet moments for.")
                          ] = 0.15,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    device: DeviceOpt = "auto",
) -> None:
    """Is this machine quiet enough to time on? Reads the meter's device canary for --seconds and judges it by
    the run's own drift rule: exit 0 when it holds, 3 when a latency run or sweep started now would very likely
    be INVALID (docs/latency.md). Run it before an hour of timing: `bench preflight && bench latency ...`.
    """
    from bench.api.errors import UserError
    from bench.api.threads import using_threads
    from bench.env.device import activate, resolve_device
    from bench.latency.canary import default_canaries
    from bench.latency.preflight import NOT_QUIET_EXIT, run_preflight

    bad = [f"{flag} {value:g}: {why}" for flag, value, ok, why in (
        ("--seconds", seconds, seconds > 0, "give a positive number of seconds, e.g. --seconds 120"),
        ("--windows", windows, windows >= 2, "the drift rule needs at least 2 readings, e.g. --windows 24"),
        ("--threads", threads, threads >= 1, "give at least 1 thread (1: the latency track)"),
        ("--tolerance", tolerance, tolerance > 0, "give the drift tolerance as a positive fraction, e.g. 0.25"),
        ("--quiet-gate", quiet_gate, quiet_gate > 0, "give the band as a positive fraction, e.g. 0.15"),
    ) if not ok]
    if bad:
        ui.fail("; ".join(bad))
    try:
        placed = resolve_device(device)
        activate(placed)
        with using_threads(threads):
            canaries = default_canaries("cuda" if placed.startswith("cuda") else "cpu")
            ui.err_console.print(ui.plain(f"reading {canaries.device.description} for {seconds:g} s ..."))
            result = run_preflight(canaries.device, placed, seconds, windows, tolerance, quiet_gate)
    except (UserError, ValueError) as exc:
        ui.fail(str(exc))
    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
    else:
        for line in result.lines():
            ui.console.print(ui.plain(line), soft_wrap=True)
    if not result.quiet:
        raise typer.Exit(NOT_QUIET_EXIT)
