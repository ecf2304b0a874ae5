"""One-line command summaries for ``bench --help``, and paragraphs that fill their lines in ``bench CMD --help``.

Why: typer's rich mode keeps a docstring's own line breaks, so at 80 columns the summaries broke mid-sentence ("or
recipes, or" / "the recorded runs") and a command's help text ran ragged ("rounds; a" / "speed-up is VALID"). Each
command gets its docstring's first paragraph, line breaks joined, as its summary, and its help with each
paragraph's line breaks joined (a line that starts an example command, ``bench ...``, keeps its own line); the
rich help then fills the lines itself.
"""

from __future__ import annotations

import inspect
from typing import Any


def filled(doc: str) -> str:
    """``doc`` with each paragraph's line breaks joined, except before a line that starts an example command."""
    paragraphs = []
    for para in doc.split("\n\n"):
        lines: list[str] = []
        for line in para.splitlines():
            if lines and not line.lstrip().startswith("bench "):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.strip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def one_line_summaries(group: Any) -> None:
    """Set ``short_help`` of every command of the typer app ``group`` (and its sub-groups) that has none, and its
    help to its docstring with filled paragraphs."""
    for info in group.registered_commands:
        doc = inspect.cleandoc(info.help or (info.callback.__doc__ if info.callback else None) or "")
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n", 1)[0].split())
        if doc and "\b" not in doc:
            info.help = filled(doc)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            one_line_summaries(sub.typer_instance)


__all__ = ["one_line_summaries"]
