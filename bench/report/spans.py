"""The one grammar of report text, and the one way a value enters it.

Report text (a title, a bullet, a note, a cell of a :class:`~bench.report.views.TableView`) is plain text with
`code` spans: the harness writes run ids, signatures and commands as code. In this grammar ``\\``` is a
literal backtick and ``\\\\`` a literal backslash (any other backslash is itself); a span is a backtick, at least
one character, and the next unescaped backtick.

A value from a record or a user goes in through :func:`lit` (as text) or :func:`code` (as a code span), which
escape it *for this grammar* before it is interpolated, so a backtick or a backslash in a value stays a character
and never becomes the edge of a span. :func:`pieces` reads the grammar once; the markdown and HTML renderers
(:mod:`bench.report.md_escape`, :mod:`bench.report.html_escape`) escape each piece for their own syntax after it
is parsed, so what they emit depends on the pieces, never on how the finished string happens to read. A value
interpolated without :func:`lit` can at worst show a backtick pair as code; it cannot reach markup (#57: a
backslash before a backtick once got past the markdown escaper and left a live ``<img onerror>`` in three .md
reports).
"""

from __future__ import annotations

import re

__all__ = ["code", "display", "lit", "pieces"]

#: a code span (its content: escape pairs, characters but a backtick or backslash, a backslash escaping nothing)
#: or an escape pair outside a span
_TOKEN = re.compile(r"`((?:\\[\\`]|[^`\\]|\\(?![\\`]))+)`|\\([\\`])")
_PAIR = re.compile(r"\\([\\`])")


def lit(value: object) -> str:
    """``value`` as literal report text: its backslashes and backticks escaped for the grammar."""
    return str(value).replace("\\", "\\\\").replace("`", "\\`")


def code(value: object) -> str:
    """``value`` as one code span of report text, whatever it holds (an empty value is no span)."""
    text = str(value)
    return f"`{lit(text)}`" if text else ""


def pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` read by the grammar: ``(is_code, literal text)`` pieces in order, adjacent plain text joined."""
    out: list[tuple[bool, str]] = []
    plain: list[str] = []
    at = 0
    for m in _TOKEN.finditer(text):
        plain.append(text[at:m.start()])
        at = m.end()
        if m.group(2) is not None:  # an escaped backtick or backslash outside a span
            plain.append(m.group(2))
            continue
        if any(plain):
            out.append((False, "".join(plain)))
        plain = []
        out.append((True, _PAIR.sub(r"\1", m.group(1))))
    plain.append(text[at:])
    if any(plain):
        out.append((False, "".join(plain)))
    return out


def display(text: str) -> str:
    """What a reader sees of ``text``: its pieces' characters, a span's without its backticks."""
    return "".join(piece for _, piece in pieces(text))
