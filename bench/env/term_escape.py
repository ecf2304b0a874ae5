"""Terminal escaping: every string a command prints is data, never rich markup.

``console.print`` reads ``[red]`` as a style and crashes on ``[/bold]`` without its opening tag, so a
system name, a stored output, a ``--set`` key or a path holding brackets must be escaped, and a terminal
acts on escape sequences (``\\x1b[2J``) and bidi controls a reader cannot see:
:func:`bench.api.text.visible` shows those. Use :func:`markup` inside an f-string that also carries the
harness's own markup, :func:`plain` for a table cell or a whole line of data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.api.text import visible

if TYPE_CHECKING:
    from rich.text import Text


def markup(value: object, one_line: bool = False) -> str:
    """``value`` as literal text inside rich markup (``one_line``: line breaks become spaces)."""
    from rich.markup import escape

    return escape(visible(str(value), one_line=one_line))


def plain(value: object, one_line: bool = True, style: str = "") -> Text:
    """``value`` as a rich ``Text``, which is never parsed as markup (a table cell, a stored output)."""
    from rich.text import Text

    return Text(visible(str(value), one_line=one_line), style=style)
