"""Rich rendering of a latency report, so the CLI stays a thin caller."""

from __future__ import annotations

from typing import Any

from bench.env.term_escape import markup, plain
from bench.latency.report import LatencyReport


def report_renderable(report: LatencyReport) -> Any:
    """A rich renderable: per-system table (latency, speed-up with its verdict, pass and FLOP ratios), the A/A
    control, the canaries and the milliseconds' label, notes, reasons, signature."""
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from bench.latency.work import work_ratio

    mode = " (LENGTH-FORCED: reference lengths given, untrained-weight speed only)" \
        if report.settings.length_forced else ""
    rounds = report.timed.log.rounds if report.timed is not None else report.settings.rounds
    units = next(iter(report.systems.values())).stats.n if report.systems else 0
    against = f"; speed-ups over {report.baseline}" if report.baseline else ""
    table = Table(title=markup(f"Batch-1 latency on {report.device_label}{mode}: {units} items x {rounds} paired "
                               f"rounds (mean ms of per-item medians over rounds{against}; work×: passes/FLOPs of the "
                               "baseline over the system's)", one_line=True),
                  box=box.SIMPLE, pad_edge=False)
    for col in ("system", "ms"):
        table.add_column(col, justify="left" if col == "system" else "right", no_wrap=True)
    work = {} if report.timed is None else {n: w.to_json() for n, w in report.timed.work.items()}
    if report.baseline:
        table.add_column("speed-up [95% CI]", justify="right", no_wrap=True)
        table.add_column("verdict", justify="left", no_wrap=True)
        table.add_column("work×", justify="right", no_wrap=True)
    mismatched = []
    for name, res in report.systems.items():
        s = res.stats
        row: list[Any] = [plain(name), f"{s.mean_ms:.0f}" if s.mean_ms >= 10 else f"{s.mean_ms:.2f}"]
        if report.baseline:
            sp = res.speedup
            verdict = getattr(sp, "verdict", None)
            colour = {"VALID": "green", "INCONCLUSIVE": "yellow", "UNSTABLE": "yellow", "INVALID": "red"}
            base, own = work.get(report.baseline), work.get(name)
            passes, flops = work_ratio(base, own, "passes_per_unit"), work_ratio(base, own, "flops_per_sentence")
            row += [
                f"{sp.mean:.2f}x [{sp.mean_ci95[0]:.2f},{sp.mean_ci95[1]:.2f}]" if sp else "-",
                f"[{colour[verdict]}]{verdict}[/]" if verdict else ("baseline" if name == report.baseline else "-"),
                "-" if name == report.baseline else
                f"{'-' if passes is None else f'{passes:.1f}'}/{'-' if flops is None else f'{flops:.1f}'}",
            ]
        if res.outputs.match is False:
            mismatched.append(name)
        table.add_row(*row)
    lines: list[Any] = [table, *(plain(line) for line in aa_lines(report)), *(plain(line) for line in
                                                                             canary_lines(report))]
    lines += [plain(f"note: {note}") for note in report.notes]
    if mismatched:
        lines.append(plain(f"outputs differ from the quality run: {', '.join(mismatched)}"))
    style = {"VALID": "bold green", "INVALID": "bold red"}.get(report.verdict, "bold yellow")
    lines.append(Text(f"speed-ups: {report.verdict}", style=style))
    lines += [plain(f"  - {reason}") for reason in report.invalid_reasons]
    lines.append(Text(f"milliseconds: {report.ms_label}",
                      style="bold green" if report.ms_label == "VALID" else "bold yellow"))
    lines += [plain(f"  - {reason}") for reason in report.ms_reasons]
    lines.append(plain(f"signature: {report.signature}"))
    return Group(*lines)


def aa_lines(report: LatencyReport) -> list[str]:
    """The A/A control: which system ran twice and the ratio of its two arms (the meter's own false difference)."""
    timed = report.timed
    if timed is None or timed.aa is None:
        return ["A/A control: none timed (no speed-up can be VALID)"] if report.baseline else []
    aa = timed.aa
    out = [f"A/A control ({timed.aa_system} timed as two arms): {aa.mean:.3f}x [{aa.mean_ci95[0]:.3f}, "
           f"{aa.mean_ci95[1]:.3f}], per round {min(aa.per_round):.3f}-{max(aa.per_round):.3f}x: {aa.verdict}"]
    x2 = timed.x2
    if x2 is not None:
        out.append(f"known-ratio control ({timed.x2_system} decoding every item twice, truly 2.00x): {x2.mean:.3f}x "
                   f"[{x2.mean_ci95[0]:.3f}, {x2.mean_ci95[1]:.3f}], per round {min(x2.per_round):.3f}-"
                   f"{max(x2.per_round):.3f}x: {x2.verdict}")
    return out


def canary_lines(report: LatencyReport) -> list[str]:
    """The canaries (workload, size, drift, judged or not), the GPU warm-up, and the GPU's state around the run."""
    info = report.canary_info
    if not info:
        return [f"canary ({report.canary_backend}) drift across rounds: {report.canary_drift:.1%}"]
    out = [_canary_line("device", info), *([_canary_line("host", info["host"])] if info.get("host") else [])]
    warm = info.get("warmup") or {}
    if warm.get("runs"):
        out.append(f"device warm-up: {warm['elapsed_s']:.1f} s ({warm['runs']} runs at size {warm['size']}) "
                   "before sizing and timing")
    from bench.env.fingerprint import describe_gpu_state

    states = [("start", report.fingerprint_before.get("gpu_state")), ("after warm-up", warm.get("gpu_state_after")),
              ("end", report.fingerprint_after.get("gpu_state"))]
    shown = [f"{when}: {describe_gpu_state(st)}" for when, st in states if st]
    if shown:
        out.append("GPU " + "; ".join(shown))
    return out


def _canary_line(kind: str, c: dict[str, Any]) -> str:
    sizing = c.get("sizing") or {}
    lo, hi = sizing.get("target_ms") or (0, 0)
    judged = "" if c.get("judged", True) else " (recorded, not judged on this device)"
    return (f"{kind} canary: {c.get('workload', c.get('backend'))}, {sizing.get('ms', 0):.3f} ms when sized "
            f"(target {lo:g}–{hi:g} ms); drift across rounds {c.get('drift', 0):.1%}{judged}")


def sweep_lines(record: dict[str, Any]) -> list[str]:
    """A sweep record as plain lines: each cell (rate, batch p90, speed-up with its CI and verdict), each group's A/A
    control, the crossovers, the verdicts and every reason."""
    sw = record["sweep"]
    out = []
    for c in sw["cells"]:
        sp = c["speedup"]
        speed = "" if sp is None else f"  x{sp['mean']:.2f} [{sp['mean_ci95'][0]:.2f}-{sp['mean_ci95'][1]:.2f}] " \
                                      f"{sp['verdict']}"
        out.append(f"{c['system']:<24} B={c['batch_size']:<4} threads={c['threads']} "
                   f"{c['sentences_per_s']:9.1f} sent/s p90 {c['batch_p90_ms']:8.1f} ms/batch{speed}")
    for g in sw["groups"]:
        if g.get("aa"):
            a = g["aa"]
            out.append(f"A/A threads={g['threads']} B={g['batch_size']}: {a['system']} x{a['mean']:.3f} "
                       f"[{a['mean_ci95'][0]:.3f}-{a['mean_ci95'][1]:.3f}] {a['verdict']}")
    out.append(f"crossover: {sw['crossover']}  speed-ups {sw['verdict']}, milliseconds {sw['ms_label']}")
    out += [f"  {reason}" for reason in sw["invalid_reasons"] + sw["ms_reasons"] + sw["agreement_reasons"]]
    return out


def render_report(report: LatencyReport, console: Any = None) -> None:
    """Print :func:`report_renderable` to ``console`` (a new rich Console by default)."""
    from rich.console import Console

    (console or Console()).print(report_renderable(report))
