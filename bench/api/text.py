"""The harness's rules for text: what a line is, which characters are shown how, and the output
post-processing a system applies to its own outputs (shared with the scorer that applies it to others').

One rule each, because every reader must agree: ``bench score``, ``submit``, ``show`` and ``compare``
count the lines of one file the same way, and every renderer (markdown, HTML, terminal) neutralises the same
invisible characters before it escapes its own markup.
"""

from __future__ import annotations

import re

#: What ends a line: ``\n`` only, as the published scoring scripts read files (the Perl and Java tools read
#: ``\n``-terminated lines; the Python ones iterate a file). ``str.splitlines`` also splits on
#: ``\r \x0b \x0c \x1c \x1d \x1e \x85 \u2028 \u2029``; here those are characters inside a line.
NEWLINE = "\n"

#: Every character some reader (``str.splitlines``, a terminal, a browser) may take for a line break.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

#: Bidirectional controls: they reorder what a reader sees (a name that displays as another, "Trojan Source").
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

_BREAK = re.compile("[" + re.escape(LINE_BREAKS) + "]")
_NEWLINE_OR_TAB = re.compile("\r\n|[\n\r\t]")
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")
_INVISIBLE_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + BIDI_CONTROLS + "]")


def split_lines(text: str) -> list[str]:
    """The lines of a file's text: split on ``\\n`` only, a final ``\\n`` ending the last line (not starting
    an empty one). ``"a\\u2028b\\n"`` is one line; ``"a\\r\\nb\\n"`` is two, the first ending in ``\\r``."""
    if not text:
        return []
    lines = text.split(NEWLINE)
    if text.endswith(NEWLINE):
        lines.pop()
    return lines


def join_lines(lines: list[str]) -> str:
    """The file text of ``lines``: each ended by ``\\n`` (the inverse of :func:`split_lines`)."""
    return "".join(line + NEWLINE for line in lines)


def has_line_break(text: str) -> bool:
    """Whether ``text`` holds a character some reader takes for a line break (see :data:`LINE_BREAKS`)."""
    return _BREAK.search(text) is not None


def _code_point(match: re.Match[str]) -> str:
    c = match.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible(text: str, one_line: bool = True) -> str:
    """``text`` with nothing invisible that changes how the rest reads: control characters, Unicode line and
    paragraph separators and bidi controls are shown as ``\\x1b`` / ``\\u2028`` / ``\\u202e``. ``one_line``:
    ``\\n``, ``\\r\\n``, ``\\r`` and ``\\t`` become one space, so a value cannot start a line of its own (a
    forged table row); otherwise ``\\n`` and ``\\t`` are kept (a message's own lines)."""
    if one_line:
        return _INVISIBLE_ONE_LINE.sub(_code_point, _NEWLINE_OR_TAB.sub(" ", text))
    return _INVISIBLE.sub(_code_point, text)


#: how many characters of one stored output (or reference) a listing, a page or ``bench show`` prints
SHOWN_CHARS = 500


def clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters for showing, saying how much was left out. Only what is *shown* is
    cut: a stored output is scored, hashed and kept whole (a 100 MB line once took ``bench show`` 15 minutes)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def clip_repr(text: str, limit: int = SHOWN_CHARS) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters (the quoted form a message shows an output in)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… [{len(text) - limit:,} more characters]"


def remove_repeat(text: str) -> str:
    """MIST de-duplication: drop a token equal to the last kept one once >=2 tokens are kept.

    Quirk kept: ``"a a b"`` stays, ``"x a a"`` -> ``"x a"``.
    """
    kept: list[str] = []
    for tok in text.split():
        if len(kept) >= 2 and tok == kept[-1]:
            continue
        kept.append(tok)
    return " ".join(kept)
