"""HTML escaping: every string on a page is data, never markup.

Text and attribute values are escaped (``html.escape``) after :func:`bench.api.text.visible` has shown the
characters a browser would act on but a reader cannot see: bidi controls (a name that displays as another),
Unicode line separators and control characters. Text with `code` spans (the preamble and notes) shows them as
``<code>``, the same spans the markdown report keeps (:mod:`bench.report.md_escape`).
"""

from __future__ import annotations

import html
import re

from bench.api.text import visible

_SPAN = re.compile(r"`([^`]+)`")


def text(value: object, quote: bool = True) -> str:
    """Element text (one line: a line break is a space, as a browser shows it)."""
    return html.escape(visible(str(value)), quote=quote)


def attr(value: object) -> str:
    """An attribute value, quotes escaped, for ``name="…"``."""
    return html.escape(visible(str(value)), quote=True)


def inline(value: str) -> str:
    """Text whose `code` spans show as ``<code>`` (preamble, notes, facts; never a table cell)."""
    return _SPAN.sub(r"<code>\1</code>", text(value, quote=False))
