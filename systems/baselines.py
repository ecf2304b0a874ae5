"""Reference baselines: no model, so they exercise data -> outputs -> scorer -> record on real data.

``copy_source`` returns the input as the output (Quora: the identity paraphrase; SQuAD QG: the
sentence containing the answer). ``lead1`` and ``lead3`` return the first one or three sentences of an XSum
document (Narayan et al. 2018 report both). They give the floor any trained system must beat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.types import Example, TaskInfo

_WS = re.compile(r"\s+")
# A sentence ends at . ! or ? followed by whitespace and an upper-case letter, digit or quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def one_line(text: str) -> str:
    """Collapse all whitespace (outputs are one per line)."""
    return _WS.sub(" ", text).strip()


def first_sentence(document: str) -> str:
    """The lead sentence of a document: the first line, cut at the first sentence end."""
    return lead_sentences(document, 1)


def lead_sentences(document: str, n: int) -> str:
    """The first ``n`` sentences of a document, read line by line (a line ends a sentence too), joined by a space."""
    out: list[str] = []
    for line in document.splitlines():
        line = one_line(line)
        if line:
            out += _SENTENCE_END.split(line)[: n - len(out)]
        if len(out) >= n:
            break
    return " ".join(out)


class CopySource(System):
    """Output = the source: the identity paraphrase (Quora) or the answer sentence (SQuAD QG)."""

    needs_training = False

    def __init__(self, budget: str) -> None:
        self.budget = check_budget(budget)

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name="copy_source", family="reference", iterations=0, budget=self.budget,
            citation="identity baseline: the source question (Quora) or the answer sentence (SQuAD QG)",
        )

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        return None

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        sentence = example.fields.get("sentence")
        return one_line(sentence if sentence else example.source)


class Lead1(System):
    """Output = the first sentence of the document (the classic summarisation floor); ``Lead1(budget, 3)`` is
    LEAD-3, the first three."""

    needs_training = False

    def __init__(self, budget: str, sentences: int = 1) -> None:
        self.budget = check_budget(budget)
        self.sentences = sentences

    @property
    def name(self) -> str:
        return f"lead{self.sentences}"

    def describe(self) -> SystemInfo:
        return SystemInfo(
            name=self.name, family="reference", iterations=0, budget=self.budget,
            citation=f"LEAD-{self.sentences} baseline (Narayan et al., 2018, XSum)",
        )

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        return None

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        if not example.source.strip():
            raise ValueError(f"{self.name}: example {example.id} has no document text (use a split with documents, "
                             "e.g. xsum 'test-available', not 'test-refs').")
        return lead_sentences(example.source, self.sentences)


def _no_settings(name: str, overrides: Mapping[str, Any]) -> None:
    """A reference baseline has nothing to set (the harness always passes ``seed``): any other override
    would only make a second run id for identical outputs."""
    bad = sorted(set(overrides) - {"seed"})
    if bad:
        raise ValueError(f"Unknown override(s) {bad} for {name}: a reference baseline has no settings.")


def copy_source(budget: str, overrides: Mapping[str, Any]) -> CopySource:
    _no_settings("copy_source", overrides)
    return CopySource(budget)


def lead1(budget: str, overrides: Mapping[str, Any]) -> Lead1:
    _no_settings("lead1", overrides)
    return Lead1(budget)


def lead3(budget: str, overrides: Mapping[str, Any]) -> Lead1:
    _no_settings("lead3", overrides)
    return Lead1(budget, 3)
