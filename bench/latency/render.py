"""Rich rendering of a latency report, so the CLI stays a thin caller."""

from __future__ import annotations

from typing import Any

from bench.latency.report import LatencyReport


def report_renderable(report: LatencyReport) -> Any:
    """A rich renderable: per-system table, canary drift, notes, verdict with reasons, signature."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    mode = " (LENGTH-FORCED: reference lengths given, untrained-weight speed only)" \
        if report.settings.length_forced else ""
    table = Table(title=f"Single-stream latency (ms) on {report.device_label}{mode}")
    for col in ("system", "N", "mean", "p50", "p90", "p99", "min", "std", "tok/s", "iter"):
        table.add_column(col, justify="left" if col == "system" else "right")
    if report.baseline:
        table.add_column(f"speedup vs {report.baseline}: mean [95% CI]", justify="right")
        table.add_column("median", justify="right")
    table.add_column("= quality", justify="center")
    for name, res in report.systems.items():
        s = res.stats
        row = [
            name, str(s.n), f"{s.mean_ms:.3f}", f"{s.p50_ms:.3f}", f"{s.p90_ms:.3f}", f"{s.p99_ms:.3f}",
            f"{s.min_ms:.3f}", f"{s.std_ms:.3f}", f"{s.tokens_per_s:.1f}",
            "-" if s.mean_iterations is None else f"{s.mean_iterations:.2f}",
        ]
        if report.baseline:
            sp = res.speedup
            row += [
                f"{sp.mean:.3f}x [{sp.mean_ci95[0]:.3f}, {sp.mean_ci95[1]:.3f}]" if sp else "-",
                f"{sp.median:.3f}x" if sp else "-",
            ]
        row.append({True: "[green]yes[/]", False: "[red]NO[/]", None: "n/a"}[res.outputs.match])
        table.add_row(*row)
    lines: list[Any] = [table, Text(f"canary ({report.canary_backend}) drift across rounds: "
                                    f"{report.canary_drift:.1%}")]
    lines += [Text(f"note: {note}") for note in report.notes]
    if report.valid:
        lines.append(Text("VALID", style="bold green"))
    else:
        lines.append(Text("INVALID", style="bold red"))
        lines += [Text(f"  - {reason}") for reason in report.invalid_reasons]
    lines.append(Text(f"signature: {report.signature}"))
    return Group(*lines)


def render_report(report: LatencyReport, console: Any = None) -> None:
    """Print :func:`report_renderable` to ``console`` (a new rich Console by default)."""
    from rich.console import Console

    (console or Console()).print(report_renderable(report))
