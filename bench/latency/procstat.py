"""What the machine did around one round of timing, read from ``/proc/stat`` and ``/proc/loadavg``.

Why: on a shared VM the guest cannot see its neighbours, except through steal time (the hypervisor ran someone
else while this guest had work) and through the load it can see. A paired design does not need a quiet machine,
but a reader of a record should see how loud it was: every round records the deltas of the aggregate CPU line
(jiffies of user, system, idle, steal, ...) and the run queue at its start and end. Nothing here judges; the
figures are evidence beside the verdicts. Off Linux (no ``/proc``) a snapshot is None and the round says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the fields of /proc/stat's aggregate "cpu" line, in order (guest times are folded into user/nice by the kernel)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


@dataclass(frozen=True)
class ProcStat:
    """One reading: the aggregate CPU jiffies, context switches, runnable tasks and the 1-minute load."""

    cpu: tuple[int, ...]
    ctxt: int
    procs_running: int
    loadavg_1m: float | None


def read_procstat(stat: Path = Path("/proc/stat"), loadavg: Path = Path("/proc/loadavg")) -> ProcStat | None:
    """The current reading, or None where ``/proc/stat`` cannot be read (not Linux, a sandbox)."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    cpu: tuple[int, ...] = ()
    ctxt = running = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            cpu = tuple(int(v) for v in parts[1:1 + len(CPU_FIELDS)])
        elif parts[0] == "ctxt":
            ctxt = int(parts[1])
        elif parts[0] == "procs_running":
            running = int(parts[1])
    try:
        load: float | None = float(loadavg.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        load = None
    return ProcStat(cpu + (0,) * (len(CPU_FIELDS) - len(cpu)), ctxt, running, load)


def procstat_delta(before: ProcStat | None, after: ProcStat | None) -> dict[str, Any]:
    """The round's share of each CPU state (steal above all), context switches, run queue and load at both ends."""
    if before is None or after is None:
        return {"source": "unreadable", "reason": "/proc/stat could not be read on this machine"}
    jiffies = {k: max(0, a - b) for k, a, b in zip(CPU_FIELDS, after.cpu, before.cpu, strict=True)}
    total = sum(jiffies.values())
    share = {k: (v / total if total else 0.0) for k, v in jiffies.items()}
    return {
        "source": "/proc/stat",
        "jiffies": jiffies,
        "steal_share": share["steal"],
        "busy_share": 1.0 - share["idle"] - share["iowait"] if total else 0.0,
        "ctxt": max(0, after.ctxt - before.ctxt),
        "procs_running": [before.procs_running, after.procs_running],
        "loadavg_1m": [before.loadavg_1m, after.loadavg_1m],
    }


__all__ = ["CPU_FIELDS", "ProcStat", "procstat_delta", "read_procstat"]
