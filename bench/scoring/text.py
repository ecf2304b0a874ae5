"""Text preparation used by the scoring recipes, reimplemented from docs/protocols.md §2-§3.

Every quirk of the reference scripts is kept on purpose: the goal is parity with the published
numbers, not pretty text. ``ascii_only=True`` reproduces the Python-2 originals (UniLM
``qg/eval.py``), whose byte strings split, strip, lowercase and test digits/upper case on ASCII only;
``ascii_only=False`` is the Python-3 ports (GLGE, MIST) with Unicode semantics.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

from bench.api.text import remove_repeat

_ASCII_WS = " \t\n\r\x0b\x0c"
_ASCII_SPLIT = re.compile(f"[{re.escape(_ASCII_WS)}]+")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_DIGITS = frozenset(string.digits)

# Exact-token replacements applied before any other rule (PTB brackets, [UNK], XML escapes).
TOKEN_MAP = {
    "(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-",
    "[UNK]": "UNK", "&": "&amp;", "<": "&lt;", ">": "&gt;",
}


def split_ws(text: str, ascii_only: bool) -> list[str]:
    """``str.split()``; Python-2 byte strings split on ASCII whitespace only (not NBSP etc.)."""
    if not ascii_only:
        return text.split()
    return [t for t in _ASCII_SPLIT.split(text) if t]


def strip_ws(text: str, ascii_only: bool) -> str:
    return text.strip(_ASCII_WS) if ascii_only else text.strip()


def lower(text: str, ascii_only: bool) -> str:
    """Python-2 ``str.lower`` on UTF-8 bytes touches A-Z only; Python 3 lowercases all of Unicode."""
    return text.translate(_ASCII_LOWER) if ascii_only else text.lower()


def _isdigit(s: str, ascii_only: bool) -> bool:
    if ascii_only:
        return bool(s) and all(c in _DIGITS for c in s)
    return s.isdigit()


def _is_digit_or_comma(s: str, ascii_only: bool) -> bool:
    """The originals' ``_is_digit``: every char a digit or ','; vacuously true for ''."""
    return all(c == "," or _isdigit(c, ascii_only) for c in s)


def _isupper(s: str, ascii_only: bool) -> bool:
    if ascii_only:  # bytes.isupper: >=1 cased (ASCII letter) char and no lowercase ASCII letter
        return any("A" <= c <= "Z" for c in s) and not any("a" <= c <= "z" for c in s)
    return s.isupper()


def _single_upper(s: str, ascii_only: bool) -> bool:
    """``len(tok) == 1 and tok.isupper()``; with bytes, len counts UTF-8 bytes."""
    n = len(s.encode("utf-8")) if ascii_only else len(s)
    return n == 1 and _isupper(s, ascii_only)


def _is_punct(s: str) -> bool:
    """``s in string.punctuation``: a *substring* test, so '' and e.g. '()' count as punctuation."""
    return s in string.punctuation


def fix_tokenization(text: str, ascii_only: bool = True) -> str:
    """Re-tokenize a WordPiece-detokenized hypothesis towards Du et al.'s PTB-style references.

    Rules, in priority order: exact-token map (brackets -> ``-lrb-`` ..., ``[UNK]`` -> ``UNK``,
    ``& < >`` -> XML entities); ``"`` alternates `````/``''``; ``x n ' t`` -> ``x n't`` (drops the
    ``n`` ending the previous token, which may leave an empty token); ``' s|d|ll`` glued; a lone
    ``'`` alternates `````/``'``; ``. . .`` -> ``...``; ``3 , 000`` -> ``3,000``; ``3 . 03`` ->
    ``3.03``; ``U . S .`` -> ``U.S.`` (quirk: advances two tokens only, so the final ``.`` is
    emitted again); dashes: ``- -`` -> ``--``, a leading/trailing ``-`` kept, ``a - b`` -> ``a-b``
    unless either side is punctuation (substring test against ``string.punctuation``).
    """
    toks = split_ws(text, ascii_only)
    out: list[str] = []
    left_quote = False
    left_single = False
    prev_dash = False
    i = 0
    n = len(toks)
    while i < n:
        tok = toks[i]
        dash_now = False
        nxt = toks[i + 1] if i + 1 < n else None
        if tok in TOKEN_MAP:
            out.append(TOKEN_MAP[tok])
            i += 1
        elif tok == '"':
            out.append("''" if left_quote else "``")
            left_quote = not left_quote
            i += 1
        elif tok == "'" and out and out[-1].endswith("n") and nxt == "t":
            out[-1] = out[-1][:-1]
            out.append("n't")
            i += 2
        elif tok == "'" and nxt in ("s", "d", "ll"):
            out.append("'" + nxt)
            i += 2
        elif tok == "'":
            out.append("'" if left_single else "`")
            left_single = not left_single
            i += 1
        elif tok == "." and i < n - 2 and toks[i + 1] == "." and toks[i + 2] == ".":
            out.append("...")
            i += 3
        elif (tok == "," and out and _is_digit_or_comma(out[-1], ascii_only) and nxt is not None
              and _is_digit_or_comma(nxt, ascii_only)):
            out[-1] += "," + nxt
            i += 2
        elif (tok == "." and out and _isdigit(out[-1], ascii_only) and nxt is not None
              and _isdigit(nxt, ascii_only)):
            out[-1] += "." + nxt
            i += 2
        elif (tok == "." and out and _single_upper(out[-1], ascii_only) and i < n - 2
              and _single_upper(toks[i + 1], ascii_only) and toks[i + 2] == "."):
            k = i + 3
            while k + 2 < n and _single_upper(toks[k + 1], ascii_only) and toks[k + 2] == ".":
                k += 2
            out[-1] += "".join(toks[i:k])
            i += 2  # quirk kept: not k, so the token at i+2 ('.') is emitted again
        elif tok == "-":
            if nxt == "-":
                out.append("--")
                i += 2
            elif i == n - 1 or i == 0:
                out.append("-")
                i += 1
            elif not _is_punct(out[-1]) and not _is_punct(toks[i + 1][0]):
                out[-1] += "-"
                i += 1
                dash_now = True
            else:
                out.append("-")
                i += 1
        elif prev_dash and out and not _is_punct(tok[0]):
            out[-1] += tok
            i += 1
        else:
            out.append(tok)
            i += 1
        prev_dash = dash_now
    return " ".join(out)


def merge_wordpieces(text: str) -> str:
    """Join BERT WordPieces: ``"play ##ing"`` -> ``"playing"`` (plain ``" ##"`` removal)."""
    return text.replace(" ##", "")


def mist_clean(text: str) -> str:
    """MIST hypothesis cleaning before scoring: merge ``##``, delete every ``[SEP]``, remove_repeat."""
    return remove_repeat(merge_wordpieces(text).replace("[SEP]", ""))


_BERT = None


@lru_cache(maxsize=65536)
def bert_basic_tokenize(text: str) -> str:
    """BERT BasicTokenizer (uncased): clean, strip accents, lowercase, split punctuation.

    Uses the ``tokenizers`` BertNormalizer + BertPreTokenizer (the same rules as BERT's Python
    BasicTokenizer) so the refs equal UniLM's WordPiece refs after ``##`` merging.
    """
    global _BERT
    if _BERT is None:
        from tokenizers.normalizers import BertNormalizer
        from tokenizers.pre_tokenizers import BertPreTokenizer

        _BERT = (BertNormalizer(lowercase=True), BertPreTokenizer())
    norm, pre = _BERT
    return " ".join(tok for tok, _ in pre.pre_tokenize_str(norm.normalize_str(text)))
