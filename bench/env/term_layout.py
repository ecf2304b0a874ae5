"""Tables that fit the terminal without breaking a value (#47).

Why: rich squeezes a table that is too wide by wrapping every cell, so at 80 columns a CI ``[57.39, 59.42]``
spreads over three lines and a run id or a path is cut into pieces. Here a value a reader copies (a run id,
a path, a URL, a number with its interval) is *atomic*: never wrapped inside. A table whose atomic columns do
not fit the width is printed *stacked* instead: one block per row, one ``field: value`` line per cell, a long
value on a line of its own. Every cell is text (:func:`bench.env.term_escape.plain`), never markup.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.env.term_escape import plain

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table
    from rich.text import Text


@dataclass
class Rows:
    """A table's content, laid out by :func:`fitted`: ``atomic`` and ``right`` are column indices."""

    headers: Sequence[str]
    rows: list[Sequence[str | Text]] = field(default_factory=list)
    atomic: Collection[int] = ()
    right: Collection[int] = ()
    title: str = ""
    caption: str = ""
    #: columns left out, in this order, before the table is stacked (a value also shown elsewhere)
    optional: Sequence[int] = ()
    #: said under the table when optional columns were left out
    dropped_note: str = ""
    #: stacked: a row's other cells on one line under its first (`` · ``-joined, wrapped between cells)
    inline: bool = False
    #: inline: columns said as ``header value`` (``after #2``) and as ``value header`` (``2,000 examples``)
    labelled: Collection[int] = ()
    suffixed: Collection[int] = ()
    #: one space between columns instead of three (a listing of short names that should keep every column at 80)
    tight: bool = False

    def add(self, *cells: str | Text) -> None:
        self.rows.append(cells)

    def without(self, drop: Collection[int]) -> Rows:
        """These rows less the columns ``drop`` (their notes said in the caption)."""
        keep = [i for i in range(len(self.headers)) if i not in drop]
        at = {old: new for new, old in enumerate(keep)}
        caption = "\n".join(x for x in (self.caption, self.dropped_note if drop else "") if x)
        return Rows([self.headers[i] for i in keep], [[row[i] for i in keep] for row in self.rows],
                    atomic=[at[i] for i in self.atomic if i in at], right=[at[i] for i in self.right if i in at],
                    title=self.title, caption=caption, tight=self.tight)


def _text(cell: str | Text) -> Text:
    from rich.text import Text

    return cell.copy() if isinstance(cell, Text) else plain(cell)


def as_table(rows: Rows) -> Table:
    """The rows as one compact table (no outer frame, a rule under the header), atomic columns unwrapped."""
    from rich import box
    from rich.table import Table

    table = Table(header_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left",
                  title=plain(rows.title) if rows.title else None, caption_justify="left",
                  caption=plain(rows.caption, one_line=False) if rows.caption else None,
                  padding=(0, 0) if rows.tight else (0, 1))
    for i, head in enumerate(rows.headers):
        table.add_column(head, no_wrap=i in rows.atomic, justify="right" if i in rows.right else "left",
                         overflow="fold")
    for row in rows.rows:
        table.add_row(*map(_text, row))
    return table


def needed_width(rows: Rows, console: Console) -> int:
    """The narrowest width at which the table shows every atomic cell on one line (a wrapped cell needs its
    longest word): the table rendered unbounded with each wrapped cell cut to that word."""
    import io

    from rich.console import Console as Probe

    probe = Rows(rows.headers, atomic=range(len(rows.headers)), right=rows.right, title=rows.title, tight=rows.tight)
    for row in rows.rows:
        probe.add(*(cell if i in rows.atomic else max(_text(cell).plain.split() or [""], key=len)
                    for i, cell in enumerate(row)))
    out = Probe(width=100_000, record=True, file=io.StringIO(), color_system=None)
    out.print(as_table(probe))
    return max((len(line.rstrip()) for line in out.export_text().splitlines()), default=0)


def stacked(rows: Rows, width: int) -> list[Text]:
    """One block per row: its first cell, then ``header: value`` per non-empty cell; an atomic value that does
    not fit after its header goes on its own line (indented when it fits so)."""
    from rich.text import Text

    out: list[Text] = []
    if rows.title:
        out.append(plain(rows.title, style="bold"))
    label = max((len(h) for h in rows.headers[1:]), default=0)
    for row in rows.rows:
        first = 2 if rows.inline and len(row) > 1 and len(_text(row[0])) + len(_text(row[1])) + 2 <= width else 1
        out.append(Text.assemble(*(_text(c) + " " for c in row[:first]), style="bold"))
        if rows.inline:
            cells = [(Text(f"{rows.headers[i]} ") if i in rows.labelled else Text("")) + _text(c)
                     + (f" {rows.headers[i]}" if i in rows.suffixed else "")
                     for i, c in enumerate(row) if i >= first and _text(c).plain.strip() not in ("", "–")]
            out.extend(_inline(cells, width))
            continue
        for i, (head, cell) in enumerate(zip(rows.headers[1:], row[1:], strict=False), 1):
            text = _text(cell)
            if not text.plain.strip():
                continue
            lead = f"  {head:<{label}}  "
            if i in rows.atomic and len(lead) + len(text) > width:
                out.append(Text(f"  {head}:"))
                indent = " " * 4 if len(text) + 4 <= width else ""
                out.append(Text.assemble(indent, text))
            else:
                out.append(Text.assemble(lead, text))
    if rows.caption:
        out.append(plain(rows.caption, one_line=False, style="dim"))
    return out


def _inline(cells: list[Text], width: int) -> list[Text]:
    """``cells`` joined by `` · `` on lines of at most ``width`` (indented 2), a line break only between cells."""
    from rich.text import Text

    lines: list[Text] = []
    line = Text("  ")
    for cell in cells:
        if len(line) > 2 and len(line) + 3 + len(cell) > width:
            lines.append(line)
            line = Text("  ")
        line.append_text(Text(" · ") if len(line) > 2 else Text(""))
        line.append_text(cell)
    if len(line) > 2:
        lines.append(line)
    return lines


def fitted(rows: Rows, console: Console) -> list[RenderableType]:
    """What to print for ``rows`` on ``console``: the table where it fits, else the table less its optional
    columns where that fits, else :func:`stacked`."""
    blank = [i for i in rows.optional if all(not _text(row[i]).plain.strip() for row in rows.rows)]
    optional = [*blank, *(i for i in rows.optional if i not in blank)]
    for n in range(len(optional) + 1):
        trial = rows.without(optional[:n]) if n else rows
        if n and n == len(blank):
            trial.caption = rows.caption  # a column with nothing in it is not worth a note
        if needed_width(trial, console) <= console.width:
            return [as_table(trial)]
    return list(stacked(rows, console.width))


def print_fitted(rows: Rows, console: Console) -> None:
    """Print :func:`fitted` ``rows``."""
    for part in fitted(rows, console):
        console.print(part)


def folded(text: str, width: int, sep: str = "|") -> list[str]:
    """A long token-joined line (a recipe signature ``a|b|c``) split after ``sep`` into lines of at most
    ``width``, never inside a part (a part longer than ``width`` keeps its own line)."""
    lines: list[str] = []
    line = ""
    parts = text.split(sep)
    for i, part in enumerate(parts):
        piece = part + (sep if i < len(parts) - 1 else "")
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
    if line:
        lines.append(line)
    return lines


def words(text: str, width: int) -> list[str]:
    """Prose broken into lines of at most ``width`` between words, never inside one: a word longer than the
    line (a path, a run id, a URL) stands on a line of its own, whole, so it can be copied."""
    out: list[str] = []
    for para in text.split("\n"):
        lines = [line.rstrip(" ") for line in folded(para, width + 1, " ")]  # +1: the space a line ends with
        out.extend(lines or [""])
    return out


def print_words(console: Console, text: object, style: str = "") -> None:
    """``text`` (never markup) on ``console`` in lines of :func:`words`: a path or run id is never broken."""
    for line in words(str(text), console.width):
        console.print(plain(line, style=style), soft_wrap=True)
