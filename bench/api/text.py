"""Text post-processing a system applies to its own outputs, shared with the scorer that applies it to others'."""

from __future__ import annotations


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
