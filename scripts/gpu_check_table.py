"""The table of ``scripts/gpu_check.py``, written so that a check cut off at any moment still answers.

After every step the whole table is rewritten into ``--out`` (``summary.md`` for people,
``summary.json`` for scripts, both small and flat), each by an atomic rename, so a reader never
sees half a file; and the step's line is printed at once. A check killed from outside (even with
SIGKILL) therefore leaves the table of every step it finished, with the rest marked pending.
Standard library only.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: how each status reads in the table; "warn" is a result that is not judged where it ran (a CPU dry run)
MARKS = {"ok": "ok", "fail": "FAIL", "skipped": "skipped", "warn": "warn", "pending": "pending",
         "running": "running"}
#: how the reason of a step skipped for the budget begins (gpu_check_plan.Budget.skip_reason): not a pass
OVER_BUDGET = "would not fit"


@dataclass
class Row:
    """One step's line: ``status`` is ok | fail | skipped | warn | pending | running."""

    name: str
    group: str
    status: str = "pending"
    seconds: float = 0.0
    share_s: float = 0.0
    detail: str = ""
    log: str = ""


@dataclass
class Table:
    """The check's running table and where it is written."""

    out: Path
    header: dict[str, object]
    rows: list[Row] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.name == name)

    def finish(self, row: Row, status: str, seconds: float, detail: str) -> None:
        """Record a step's end: print its line now and rewrite the table."""
        row.status, row.seconds, row.detail = status, seconds, detail
        print(line(row), flush=True)
        self.write()

    def verdict(self) -> str:
        failed = [r.name for r in self.rows if r.status == "fail"]
        unfinished = [r.name for r in self.rows if r.status in ("pending", "running")]
        over = [r.name for r in self.rows if r.status == "skipped" and r.detail.startswith(OVER_BUDGET)]
        if failed:
            return "FAILED: " + ", ".join(failed)
        if unfinished:
            return "unfinished: " + ", ".join(unfinished)
        if over:
            return "incomplete, skipped for the budget: " + ", ".join(over)
        return "passed"

    def write(self, final: bool = False) -> None:
        elapsed = time.monotonic() - self.started
        state = self.verdict() if final else f"in progress ({elapsed:.0f} s so far): " + self.verdict()
        data = {**self.header, "elapsed_s": round(elapsed, 1), "final": final, "verdict": state,
                "steps": [asdict(r) for r in self.rows]}
        _atomic(self.out / "summary.json", json.dumps(data, indent=1) + "\n")
        _atomic(self.out / "summary.md", markdown(data))


def line(row: Row) -> str:
    """The line printed as soon as a step ends."""
    return f"{MARKS[row.status]:8} {row.seconds:6.0f}s  {row.name}: {row.detail}"


def markdown(data: dict) -> str:
    head = ", ".join(f"{k} {data[k]}" for k in ("device", "budget_s", "command") if k in data)
    lines = [f"# gpu-check: {data['verdict']}", "", head, "",
             "| step | result | s | share s | detail | log |", "| --- | --- | --- | --- | --- | --- |"]
    for r in data["steps"]:
        detail = str(r["detail"]).replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['name']} | {MARKS[r['status']]} | {r['seconds']:.0f} | {r['share_s']:.0f} | {detail} "
                     f"| {r['log']} |")
    return "\n".join(lines) + "\n"


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
