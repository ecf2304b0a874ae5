"""Markdown escaping: every string in a report is data, never markup.

Report text is plain text with `code` spans (the harness writes run ids and signatures as code); a value
from a record or a user (a system name, a ``--meta`` value, an override) is interpolated into it. Here each
piece is escaped so that GitHub / CommonMark shows it as written: no raw HTML (``<script>``, ``<img
onerror>``), no link or image (``[x](javascript:…)``), no entity (``&#x202e;``), no emphasis or math, no
line break (a forged table row) and no invisible character (:func:`bench.api.text.visible`). Cells escape
``|`` as well; a bullet or title also escapes what would make it a block of its own (``# `` ``> `` ``- ``).

:func:`unescape_cell` is the inverse for cells, so the tests read a table back to the strings the HTML page
shows (byte-equal cells).
"""

from __future__ import annotations

import re

from bench.api.text import visible

_SPAN = re.compile(r"`([^`]+)`")
_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PLAIN = re.compile(
    r"\\(?=[" + re.escape(_PUNCT) + r"])"  # a backslash that would escape what follows
    r"|<(?=[A-Za-z/!?])"  # raw HTML, an autolink, a comment
    r"|&(?=#?[A-Za-z0-9]+;)"  # an entity: &lt; &#x202e;
    r"|\](?=[(\[])"  # the end of a link or image label: [x](url), [x][ref]
    r"|(?<=\S)[*~]|[*~](?=\S)"  # emphasis, strikethrough (a * between spaces is inert: left as is)
    r"|[$`]"  # math, a lone backtick
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # emphasis by _ (never inside a word: snake_case stays as is)
)
_BLOCK_START = re.compile(r"^([#>+=-]|\d+[.)]|\[(?=[^\]]*\]:))")  # a heading, quote, list, setext line, [ref]: url


def _plain(text: str, cell: bool) -> str:
    out = _PLAIN.sub(lambda m: "\\" + m.group(0), text)
    return out.replace("|", "\\|") if cell else out


def _escape(text: str, cell: bool) -> str:
    text = visible(text)
    parts: list[str] = []
    at = 0
    for m in _SPAN.finditer(text):
        parts.append(_plain(text[at:m.start()], cell))
        code = m.group(1)
        parts.append("`" + (code.replace("|", "\\|") if cell else code) + "`")
        at = m.end()
    parts.append(_plain(text[at:], cell))
    return "".join(parts)


def cell(text: str) -> str:
    """A table cell: one line, `code` spans kept, everything else literal (``|`` included)."""
    return _escape(text, cell=True)


def line(text: str) -> str:
    """A bullet's or a title's text: as :func:`cell`, and it cannot open a block (a heading, a quote, a list)."""
    out = _escape(text, cell=False).lstrip(" ")
    return _BLOCK_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], out, count=1)


def unescape_cell(text: str) -> str:
    """The string :func:`cell` was given (after :func:`~bench.api.text.visible`), read back from markdown."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCT:
            out.append(text[i + 1])
            i += 2
        elif c == "`" and (end := text.find("`", i + 1)) > i:
            out.append("`" + text[i + 1:end].replace("\\|", "|") + "`")
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
