"""Markdown escaping: every string in a report is data, never markup.

Report text is plain text with `code` spans (the harness writes run ids and signatures as code), read by the one
grammar of :mod:`bench.report.spans`, where a value from a record or a user (a system name, a ``--meta`` value,
an override) is escaped when it is interpolated (``spans.lit``/``spans.code``). Here each piece the grammar reads
is escaped so that GitHub / CommonMark shows it as written (every backslash too, so none can escape the backtick
of a span that follows; a span's fence is longer than any backtick run inside it): no raw HTML (``<script>``, ``<img
onerror>``), no link or image (``[x](javascript:…)``), no entity (``&#x202e;``), no emphasis or math, no
line break (a forged table row) and no invisible character (:func:`bench.api.text.visible`). Cells escape
``|`` as well; a bullet or title also escapes what would make it a block of its own (``# `` ``> `` ``- ``).

:func:`unescape_cell` is the inverse for cells, so the tests read a table back to the strings the HTML page
shows (byte-equal cells).
"""

from __future__ import annotations

import re

from bench.api.text import visible
from bench.report.spans import pieces

_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PLAIN = re.compile(
    r"\\"  # every backslash: it can then never escape what follows (a backtick opening a span, a bracket)
    r"|<(?=[A-Za-z/!?])"  # raw HTML, an autolink, a comment
    r"|&(?=#?[A-Za-z0-9]+;)"  # an entity: &lt; &#x202e;
    r"|\](?=[(\[])"  # the end of a link or image label: [x](url), [x][ref]
    r"|(?<=\S)[*~]|[*~](?=\S)"  # emphasis, strikethrough (a * between spaces is inert: left as is)
    r"|[$`]"  # math, a backtick that is not a span's
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # emphasis by _ (never inside a word: snake_case stays as is)
)
#: a heading, quote, list (``- `` ``+ `` ``* `` ``1. ``), setext line, ``[ref]: url``
_BLOCK_START = re.compile(r"^([#>+=-]|\*(?=\s|$)|\d+[.)]|\[(?=[^\]]*\]:))")
_TICKS = re.compile(r"`+")


def _plain(text: str, cell: bool) -> str:
    out = _PLAIN.sub(lambda m: "\\" + m.group(0), text)
    return out.replace("|", "\\|") if cell else out


def _code(text: str, cell: bool) -> str:
    """A CommonMark code span holding ``text`` exactly: a fence one backtick longer than any run inside, padded
    with a space where the content would otherwise lose one or merge with the fence."""
    fence = "`" * (max((len(t) for t in _TICKS.findall(text)), default=0) + 1)
    pad = text[:1] == "`" or text[-1:] == "`" or (text[:1] == " " and text[-1:] == " " and text.strip() != "")
    body = text.replace("|", "\\|") if cell else text
    return f"{fence} {body} {fence}" if pad else f"{fence}{body}{fence}"


def _escape(text: str, cell: bool) -> str:
    merged: list[tuple[bool, str]] = []
    for is_code, piece in pieces(visible(text)):
        if is_code and merged and merged[-1][0]:  # two spans side by side would share one fence: one span
            merged[-1] = (True, merged[-1][1] + piece)
        else:
            merged.append((is_code, piece))
    return "".join(_code(piece, cell) if is_code else _plain(piece, cell) for is_code, piece in merged)


def cell(text: str) -> str:
    """A table cell: one line, `code` spans kept, everything else literal (``|`` included)."""
    return _escape(text, cell=True)


def line(text: str) -> str:
    """A bullet's or a title's text: as :func:`cell`, and it cannot open a block (a heading, a quote, a list)."""
    out = _escape(text, cell=False).lstrip(" ")
    return _BLOCK_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], out, count=1)


def unescape_cell(text: str) -> str:
    """What a reader sees of a cell :func:`cell` wrote (after :func:`~bench.api.text.visible`), code spans marked
    with one backtick each side, read back from markdown (the tests compare it with the HTML page's cells)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCT:
            out.append(text[i + 1])
            i += 2
        elif c == "`":
            fence = _TICKS.match(text, i)
            assert fence is not None
            run = fence.group(0)
            end = _closing(text, fence.end(), len(run))
            if end < 0:
                out.append(run)
                i = fence.end()
                continue
            body = text[fence.end():end].replace("\\|", "|")
            if len(body) > 1 and body[0] == " " and body[-1] == " " and body.strip():
                body = body[1:-1]
            out.append("`" + body + "`")
            i = end + len(run)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _closing(text: str, start: int, n: int) -> int:
    """Where the backtick run of exactly ``n`` that closes a span opened before ``start`` begins (-1: none)."""
    for m in _TICKS.finditer(text, start):
        if len(m.group(0)) == n:
            return m.start()
    return -1
