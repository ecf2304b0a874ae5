"""Source layouts that more than one family feeds its encoder (no torch: data only)."""

from __future__ import annotations

from typing import Any

from bench.api.types import Example


def answer_window(tok: Any, ex: Example, budget: int) -> list[int]:
    """``answer [SEP] window``: the paragraph cropped to ``budget`` pieces with the answer inside
    (about a third of the room before it). Falls back to the head of ``ex.source`` when the example
    has no ``paragraph``/``answer``/``answer_start`` fields."""
    f = ex.fields
    if not all(k in f for k in ("paragraph", "answer", "answer_start")):
        return tok.encode(ex.source)[:budget]
    ans = tok.encode(f["answer"])[: budget // 4]
    start = int(f["answer_start"])
    before = tok.encode(f["paragraph"][:start])
    after = tok.encode(f["paragraph"][start:])
    room = budget - len(ans) - 1
    n_before = min(len(before), max(room // 3, room - len(after)))
    window = before[len(before) - n_before :] + after[: room - n_before]
    return [*ans, tok.sep_id, *window]
