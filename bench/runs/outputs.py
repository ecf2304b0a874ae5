"""A run's outputs file: one output per line, and the sha256 its record stores to tell whether it changed."""

from __future__ import annotations

import hashlib

from bench.api.text import join_lines


def outputs_to_text(outputs: list[str]) -> str:
    """The outputs file's text: one output per line (an output with a newline inside is refused)."""
    bad = [i for i, line in enumerate(outputs) if "\n" in line or "\r" in line]
    if bad:
        raise ValueError(f"System produced outputs with a newline inside (items {bad[:5]}); outputs are one per line.")
    return join_lines(outputs)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
