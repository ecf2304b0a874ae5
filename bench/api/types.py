"""Typed values that flow between stages: raw sources -> Split -> system -> outputs -> scorer."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Example:
    """One task item as raw text; systems tokenize it themselves.

    ``source`` is the standard system input for the task (SQuAD QG: ``"answer [SEP] paragraph"``,
    Quora: the question, XSum: the document); ``target`` is the raw reference. ``fields`` holds the
    structured parts and scoring keys (e.g. ``paragraph``, ``answer``, ``answer_start``,
    ``sentence``, ``du_key``, ``du_ref``) so recipes and systems can use what they need.
    """

    id: str
    source: str
    target: str
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Split:
    """An ordered, checksummed list of examples.

    ``partial`` marks a split that is a named subset of the official one (e.g. XSum
    ``test-available``); it must never be presented as the full set.
    """

    task: str
    name: str
    examples: tuple[Example, ...]
    sha256: str
    partial: bool = False
    note: str = ""

    def __len__(self) -> int:
        return len(self.examples)

    def sources(self) -> list[str]:
        return [ex.source for ex in self.examples]

    def targets(self) -> list[str]:
        return [ex.target for ex in self.examples]

    def field(self, name: str) -> list[str]:
        """Column ``name`` of ``fields``; a clear error if some example lacks it."""
        out = []
        for i, ex in enumerate(self.examples):
            if name not in ex.fields:
                raise KeyError(f"{self.task}/{self.name}: example {i} ({ex.id}) has no field '{name}'")
            out.append(ex.fields[name])
        return out


@dataclass(frozen=True)
class TaskInfo:
    """The parts of a task a system needs: name, train/dev splits (empty where only its settings are asked), max
    lengths and family."""

    name: str
    train: Sequence[Example]
    dev: Sequence[Example]
    max_source_len: int
    max_target_len: int
    #: the task's family (``qg``, ``summarization``, ``paraphrase``): a system may read it (answer windows exist
    #: only in question generation), never the task's name
    family: str = ""


_ENCODER = json.JSONEncoder(ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def canonical_line(ex: Example) -> str:
    record = {"id": ex.id, "source": ex.source, "target": ex.target, "fields": dict(ex.fields)}
    return _ENCODER.encode(record) + "\n"


def encode(examples: Iterable[Example]) -> bytes:
    return "".join(canonical_line(ex) for ex in examples).encode("utf-8")


def split_sha256(examples: Iterable[Example]) -> str:
    """The split's content hash: sha256 of its canonical JSONL bytes (= its cache file's hash)."""
    return hashlib.sha256(encode(examples)).hexdigest()
