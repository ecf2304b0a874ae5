"""A paper table in the terminal: `bench table --paper P --table N` (the markdown is `--format md`).

Why not the markdown: a paper table has ten columns of long cells and a prose status; at 80 columns its raw
markdown wraps into about 200 lines of pipes (#58). Here the same table (read back from the markdown the reports
hold, so both say the same) is a table where it fits, else one short block per row: the model and its system, the
cells as ``header value`` joined by `` · `` (a cell is broken only when longer than a line, between words, and
continued indented), and the status in words. Columns empty in every row are left out; ``run [N]`` becomes the
run's short id, which `bench show` takes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.env.term_layout import Rows, as_table, needed_width, words
from bench.report.md_escape import unescape_cell

if TYPE_CHECKING:
    from rich.console import RenderableType

#: cells that say "nothing here"
EMPTY = ("", "—", "–", "-")
_NOTE_RUN = re.compile(r"^- \[(\d+)\] run `([^`]+)`")
_RUN_REF = re.compile(r"\brun \[(\d+)\]")


@dataclass
class PaperTable:
    """One paper table as the terminal shows it: title, the lede lines worth reading first, its columns and rows,
    and where its notes are."""

    title: str
    lede: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells, split at unescaped ``|`` (a code span's ``\\|`` is text)."""
    cells, cur, i = [], "", 1
    body = line.strip()
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            cur += body[i:i + 2]
            i += 2
            continue
        if c == "|":
            cells.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    return cells


def _text(cell: str) -> str:
    return unescape_cell(cell).replace("`", "")


def parse(markdown: str) -> PaperTable:
    """The first table of a generated paper-table document, with ``run [N]`` replaced by the run's short id."""
    lines = markdown.splitlines()
    title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), "")
    runs = {m.group(1): m.group(2) for ln in lines if (m := _NOTE_RUN.match(ln))}
    out = PaperTable(_text(title))
    for ln in lines:
        if ln.startswith(("- Cells:", "- Our scoring:")):
            out.lede.append(_text(ln[2:]))
    table = [ln for ln in lines if ln.startswith("|")]
    if len(table) < 2:
        return out
    out.headers = [_text(c) for c in _cells(table[0])]
    for ln in table[2:]:
        row = [_text(c) for c in _cells(ln)]
        out.rows.append([_RUN_REF.sub(lambda m: f"run {_short(runs.get(m.group(1)), m.group(0))}", c) for c in row])
    return out


def _short(run_id: str | None, fallback: str) -> str:
    return run_id.rsplit("--", 1)[-1] if run_id else fallback


def renderables(markdown: str, width: int, source: str = "") -> list[RenderableType]:
    """What `bench table --paper P --table N` prints for one table at ``width`` columns (``source``: the command
    or file that holds the full markdown with its notes)."""
    from rich.console import Console
    from rich.text import Text

    table = parse(markdown)
    out: list[RenderableType] = [Text(table.title, style="bold")]
    out += [Text(line, style="dim") for para in table.lede for line in words(para, width)]
    keep = [i for i, _ in enumerate(table.headers) if any(r[i] not in EMPTY for r in table.rows if i < len(r))]
    headers = [table.headers[i] for i in keep]
    rows = [[r[i] if i < len(r) else "" for i in keep] for r in table.rows]
    ident = (headers.index("System") + 1) if "System" in headers else 1
    status = len(headers) - 1 if headers and headers[-1] == "Status" else None
    grid = Rows(headers, atomic=[i for i in range(len(headers)) if i != status])
    for row in rows:
        grid.add(*row)
    probe = Console(width=width)
    if headers and needed_width(grid, probe) <= width:
        out.append(as_table(grid))
    else:
        out += _blocks(headers, rows, ident, status, width)
    if source:
        out += [Text(line, style="dim") for line in words(f"Sources, run ids and notes: {source}. A run's short id "
                                                          "works in `bench show`.", width)]
    return out


def _blocks(headers: Sequence[str], rows: Sequence[Sequence[str]], ident: int, status: int | None,
            width: int) -> list[Any]:
    """One block per row: its section when it changes, the model and its system, then the cells and the status."""
    from rich.text import Text

    out: list[Any] = []
    section = headers.index("Section") if "Section" in headers else None
    last = None
    for row in rows:
        if section is not None and row[section] != last:
            last = row[section]
            out.append(Text(f"— {last or '(no section)'} —", style="bold dim"))
        names = [row[i] for i in range(ident) if i != section and row[i] not in EMPTY]
        out += [Text(ln, style="bold") for ln in words(" · ".join(names), width)]
        cells = [f"{headers[i]} {row[i]}" for i in range(ident, len(headers)) if i != status and row[i] not in EMPTY]
        line = ""
        for cell in cells:
            if line and len(line) + 3 + len(cell) > width:
                out.append(Text(line))
                line = ""
            if not line and len(cell) + 2 > width:  # longer than a line: broken between words, continued indented
                first, *rest = words(cell, width - 4)  # (rich wrapped it at the margin, mid-name at 80 columns)
                out += [Text(f"  {first}"), *(Text(f"    {ln}") for ln in rest)]
                continue
            line = f"{line} · {cell}" if line else f"  {cell}"
        if line:
            out.append(Text(line))
        if status is not None and row[status] not in EMPTY:
            out += [Text(f"  {ln}", style="italic") for ln in words(row[status], width - 2)]
    return out


def paper_markdown(paper: str, table: str | None, budget: str | None, records: Sequence[dict[str, Any]],
                   results_dir: Path) -> list[tuple[str, str]]:
    """(table id, markdown) of one table or every table of ``paper``, from ``records`` and the latency records,
    orderings and calibrations of ``results_dir`` (the committed evidence)."""
    from bench.papers import all_tables, normalize_paper
    from bench.report.build import render_table
    from bench.store.calibration import load_summaries
    from bench.store.latency import load_latency_records
    from bench.store.orderings import load_orderings

    key = normalize_paper(paper)
    ids = [table] if table is not None else [t.id for t in all_tables() if t.paper == key]
    lat, orders, cals = load_latency_records(results_dir), load_orderings(results_dir), load_summaries(results_dir)
    return [(i, render_table(key, i, list(records), budget, lat, orders, cals)) for i in ids]
