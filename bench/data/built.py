"""What a task builder hands back to the cache layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.api.types import Example


@dataclass
class Built:
    """Examples per split, plus any user-supplied files read that ``SHA256SUMS`` does not cover.

    ``extra_sources`` are hashed into the cache manifest so that a changed user copy (e.g. a full
    XSum) makes the cache stale even though no checksum list vouches for it.
    """

    splits: dict[str, list[Example]]
    extra_sources: dict[str, Path] = field(default_factory=dict)


def read_lines(path: Path) -> list[str]:
    """Lines of a text file split on ``\\n`` only (not Unicode line separators), final newline dropped."""
    text = path.read_text(encoding="utf-8")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []
