"""Rich rendering of a latency report, so the CLI stays a thin caller."""

from __future__ import annotations

from typing import Any

from bench.env.term_escape import markup, plain
from bench.latency.report import LatencyReport


def report_renderable(report: LatencyReport) -> Any:
    """A rich renderable: per-system table, canary drift, notes, verdict with reasons, signature."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    mode = " (LENGTH-FORCED: reference lengths given, untrained-weight speed only)" \
        if report.settings.length_forced else ""
    table = Table(title=markup(f"Single-stream latency (ms) on {report.device_label}{mode}", one_line=True))
    for col in ("system", "N", "mean", "p50", "p90", "p99", "min", "std", "tok/s", "iter"):
        table.add_column(col, justify="left" if col == "system" else "right")
    if report.baseline:
        table.add_column(plain(f"speedup vs {report.baseline}: mean [95% CI]"), justify="right")
        table.add_column("median", justify="right")
    table.add_column("= quality", justify="center")
    for name, res in report.systems.items():
        s = res.stats
        row: list[Any] = [
            plain(name), str(s.n), f"{s.mean_ms:.3f}", f"{s.p50_ms:.3f}", f"{s.p90_ms:.3f}", f"{s.p99_ms:.3f}",
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
    lines: list[Any] = [table, *(plain(line) for line in canary_lines(report))]
    lines += [plain(f"note: {note}") for note in report.notes]
    if report.valid:
        lines.append(Text("VALID", style="bold green"))
    else:
        lines.append(Text("INVALID", style="bold red"))
        lines += [plain(f"  - {reason}") for reason in report.invalid_reasons]
    lines.append(plain(f"signature: {report.signature}"))
    return Group(*lines)


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


def render_report(report: LatencyReport, console: Any = None) -> None:
    """Print :func:`report_renderable` to ``console`` (a new rich Console by default)."""
    from rich.console import Console

    (console or Console()).print(report_renderable(report))
