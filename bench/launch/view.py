"""Rich tables of a plan: before a launch (``--dry-run``), during one (the live view) and after (``bench status``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Column, Table
from rich.text import Text

from bench.env.term_escape import plain
from bench.env.term_layout import Rows
from bench.launch.plan import Job

STYLES = {"done": "green", "complete": "green", "running": "cyan", "queued": "dim", "pending": "",
          "failed": "red", "skipped": "red", "stopped": "yellow", "not started": "dim",
          "done on a subset": "yellow"}


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def overrides_text(job: Job) -> str:
    parts = [f"{k}={v}" for k, v in sorted(job.spec.overrides.items())]
    if job.spec.limit is not None:
        parts.append(f"limit={job.spec.limit}")
    return " ".join(parts)


def _after(job: Job, index: Mapping[str, int]) -> str:
    return ", ".join(f"#{index[d]}" if d in index else d for d in job.depends_on)


def plan_view(jobs: Sequence[Job], title: str = "") -> Table:
    """The plan as ``--dry-run`` prints it: what runs, after what, what is done, roughly how long."""
    index = {job.run_id: i for i, job in enumerate(jobs, 1)}
    table = Table("#", Column("job", no_wrap=True), "set", Column("run id", overflow="fold"), "after",
                  Column("state", no_wrap=True), "estimate", title=title or None, header_style="bold")
    for i, job in enumerate(jobs, 1):
        state = "done (skipped)" if job.state == "done" else "pending"
        table.add_row(str(i), plain(job.label), plain(overrides_text(job)), plain(job.run_id),
                      plain(_after(job, index)), Text(state, style=STYLES[job.state]), duration(job.estimate_s))
    pending = [job for job in jobs if job.state == "pending"]
    known = [job.estimate_s for job in pending if job.estimate_s is not None]
    if pending:
        table.caption = (f"{len(pending)} to run, {len(jobs) - len(pending)} done; estimated "
                         f"{duration(sum(known))} of run time for {len(known)} of them (one after another)")
    return table


def state_view(jobs: Sequence[Job], states: Mapping[str, tuple[str, str]], title: str = "") -> Table:
    """One line per job: its state and the one line that says why (``states``: run id -> (state, detail))."""
    index = {job.run_id: i for i, job in enumerate(jobs, 1)}
    table = Table("#", Column("job", no_wrap=True), "set", "after", Column("state", no_wrap=True),
                  Column("detail", ratio=1), title=title or None, header_style="bold")
    for i, job in enumerate(jobs, 1):
        state, detail = states[job.run_id]
        detail_text = plain(detail)  # a log's last line: text, whatever brackets it holds
        detail_text.overflow = "fold"
        table.add_row(str(i), plain(job.label), plain(overrides_text(job)), plain(_after(job, index)),
                      plain(state, style=STYLES.get(state, "")), detail_text)
    return table


def plan_rows(jobs: Sequence[Job], title: str = "") -> Rows:
    """:func:`plan_view` as :class:`~bench.env.term_layout.Rows`, for a command that fits it to the terminal: run
    ids and states are never wrapped; at a narrow width each job is two lines."""
    index = {job.run_id: i for i, job in enumerate(jobs, 1)}
    rows = Rows(["#", "job", "set", "run id", "after", "state", "estimate"], atomic=(0, 1, 3, 4, 5, 6),
                right=(6,), title=title, inline=True, labelled=(4, 6))
    for i, job in enumerate(jobs, 1):
        state = "done (skipped)" if job.state == "done" else "pending"
        rows.add(str(i), plain(job.label), plain(overrides_text(job)), plain(job.run_id), plain(_after(job, index)),
                 Text(state, style=STYLES[job.state]), duration(job.estimate_s))
    table = plan_view(jobs)
    rows.caption = str(table.caption or "")
    return rows


def state_rows(jobs: Sequence[Job], states: Mapping[str, tuple[str, str]], title: str = "") -> Rows:
    """:func:`state_view` as :class:`~bench.env.term_layout.Rows` (the detail wraps between words only)."""
    index = {job.run_id: i for i, job in enumerate(jobs, 1)}
    rows = Rows(["#", "job", "set", "after", "state", "detail"], atomic=(0, 1, 3, 4), title=title, inline=True,
                labelled=(3,))
    for i, job in enumerate(jobs, 1):
        state, detail = states[job.run_id]
        rows.add(str(i), plain(job.label), plain(overrides_text(job)), plain(_after(job, index)),
                 plain(state, style=STYLES.get(state, "")), plain(detail))
    return rows


def target_rows(budget: str) -> Rows:
    """What `bench status` (and `bench reproduce`) take: every paper table, with how many of its rows run here at
    ``budget``."""
    from bench.papers import all_tables, runnable_rows

    rows = Rows(["target", "runnable", "table"], atomic=(0, 1), right=(1,),
                title=f"Targets: bench status PAPER:TABLE (runnable rows at budget {budget})",
                caption=f"e.g. `bench status mist:1 --budget {budget}`: where each run of the table stands; `bench "
                "reproduce` runs them.")
    for table in all_tables():
        rows.add(table.ref, str(len(runnable_rows(table.paper, table.id, budget))), table.title)
    return rows
