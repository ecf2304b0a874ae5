"""One-line command summaries for ``bench --help``.

Why: typer's rich mode keeps a docstring's own line breaks in the command list, so at 80 columns the summaries
broke mid-sentence ("or recipes, or" / "the recorded runs"). Each command gets its docstring's first paragraph,
line breaks joined, as its summary; the rich help then fills the lines itself.
"""

from __future__ import annotations

import inspect
from typing import Any


def one_line_summaries(group: Any) -> None:
    """Set ``short_help`` of every command of the typer app ``group`` (and its sub-groups) that has none."""
    for info in group.registered_commands:
        doc = inspect.cleandoc(info.help or (info.callback.__doc__ if info.callback else None) or "")
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n", 1)[0].split())
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            one_line_summaries(sub.typer_instance)


__all__ = ["one_line_summaries"]
