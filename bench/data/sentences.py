"""A small, deterministic sentence splitter for locating the sentence that holds a SQuAD answer.

Why not NLTK/spaCy: the split must be reproducible byte for byte across machines and library
versions (it feeds the cached split hash), and the ``sentence`` field is only an auxiliary input
(the official scoring key is Du et al.'s own sentence, ``du_key``). The rule: a sentence ends
after a run of ``.``, ``!`` or ``?`` (plus closing quotes/brackets) followed by whitespace and a
character that can start a sentence (upper-case letter, digit, opening quote or bracket), unless
the word before the full stop is a known abbreviation or a run of single letters (initials,
``U.S.``), or the run is an ellipsis (``...``), which the Du et al. sentences mostly keep inside.
An answer that straddles a boundary gets the union of the sentences it touches.
"""

from __future__ import annotations

import re
from functools import lru_cache

_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+")
_INITIALS = re.compile(r"(?:[^\W\d_]\.)*[^\W\d_]")  # "j", "u.s", "i.a": initials and acronyms
_OPENERS = "\"'\u201c\u2018(["
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e no nos inc ltd co corp mt ft gen gov sen rep rev col "
    "lt sgt capt cmdr adm maj fr jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m "
    "approx ca c est fig vol op al".split()
)


@lru_cache(maxsize=64)  # questions of one paragraph arrive together
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans ``[start, end)`` of the sentences of ``text`` (whitespace between excluded)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        nxt = m.end()
        if nxt >= len(text):
            break
        if not (text[nxt].isupper() or text[nxt].isdigit() or text[nxt] in _OPENERS):
            continue
        if m.group().startswith("..") or (m.group().startswith(".") and _is_abbreviation(text, m.start())):
            continue
        end = m.start() + len(m.group().rstrip())
        spans.append((start, end))
        start = nxt
    tail = len(text.rstrip())
    if tail > start:
        spans.append((start, tail))
    return tuple(spans) or ((0, len(text)),)


def _is_abbreviation(text: str, dot: int) -> bool:
    """Is the word that ends at ``text[dot] == '.'`` an abbreviation or an initial?"""
    begin = dot
    while begin > 0 and not text[begin - 1].isspace():
        begin -= 1
    word = text[begin:dot].lstrip(_OPENERS).lower()
    if _INITIALS.fullmatch(word):
        return True
    return word in _ABBREVIATIONS


def sentence_containing(text: str, start: int, end: int | None = None) -> str:
    """The sentence(s) of ``text`` covering characters ``[start, end)`` (``end`` defaults to start+1)."""
    end = start + 1 if end is None or end <= start else end
    spans = sentence_spans(text)
    first = next((i for i, (s, e) in enumerate(spans) if start < e), len(spans) - 1)
    last = next((i for i, (s, e) in enumerate(spans) if end <= e), len(spans) - 1)
    last = max(first, last)
    return text[spans[first][0] : spans[last][1]].strip()
