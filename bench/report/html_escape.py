"""HTML escaping: every string on a page is data, never markup.

Text and attribute values are escaped (``html.escape``) after :func:`bench.api.text.visible` has shown the
characters a browser would act on but a reader cannot see: bidi controls (a name that displays as another),
Unicode line separators and control characters. Report text is plain text with `code` spans, the one piece of
markdown the views write, read by the one grammar of :mod:`bench.report.spans` (as :mod:`bench.report.md_escape`
reads it); :func:`inline` escapes each piece and renders a span as ``<code>``, so a span never carries markup of
its own. A span holding a run id may break only
between its ``--`` fields, never inside one.
"""

from __future__ import annotations

import html
import re

from bench.api.text import visible
from bench.report.spans import pieces

#: longer text is never a run id (ids are identifiers of at most 200 characters); matching it would be slow
MAX_RUN_ID = 400
#: a whole run id: ``<system>--<task>--<split>--<budget>--[s<seed>--]<8 hex>`` (the hex: its spec hash)
RUN_ID = re.compile(r"[\w.+-]+?--\w+--[\w-]+?--[a-z]+--(?:s\d+--)?([0-9a-f]{8})")


def text(value: object, quote: bool = True) -> str:
    """Element text (one line: a line break is a space, as a browser shows it)."""
    return html.escape(visible(str(value)), quote=quote)


def attr(value: object) -> str:
    """An attribute value, quotes escaped, for ``name="…"``."""
    return html.escape(visible(str(value)), quote=True)


def breakable(name: object) -> str:
    """A name (``copybert_spanbert_selfcopy``) that a narrow column may break after an ``_`` or ``-``, not mid-word."""
    return re.sub(r"([_-])", r"\1<wbr>", text(name))


def run_id(rid: str, short: bool = False) -> str:
    """A run id as ``<code class="rid">``: whole, breakable only after each ``--``; or ``short``, its spec hash
    on one line, the whole id in the title (a table column that would otherwise be 60 characters wide)."""
    m = RUN_ID.fullmatch(visible(rid)) if len(rid) <= MAX_RUN_ID else None  # the lazy groups are quadratic
    if m is None:
        return f"<code>{text(rid)}</code>"
    if short:
        return f'<code class="rid short" title="{attr(rid)}">{text(m.group(1))}</code>'
    return f'<code class="rid" title="{attr(rid)}">' + "--<wbr>".join(text(p) for p in rid.split("--")) + "</code>"


def _span(code: str, short: bool = False) -> str:
    return run_id(code, short) if len(code) <= MAX_RUN_ID and RUN_ID.fullmatch(code) else \
        f"<code>{html.escape(code, quote=False)}</code>"


def inline(value: str, short_ids: bool = False) -> str:
    """Text whose `code` spans show as ``<code>`` (a table cell, a preamble bullet, a note, a fact): each piece of
    :func:`bench.report.spans.pieces` escaped on its own. ``short_ids`` (inside a table cell): a run id shows as
    its short id, one line, the whole id in its title (a whole id would wrap the cell over lines)."""
    return "".join(_span(piece, short_ids) if is_code else html.escape(piece, quote=False)
                   for is_code, piece in pieces(visible(str(value))))
