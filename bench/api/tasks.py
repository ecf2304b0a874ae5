"""What a task author writes: a :class:`Task` (its splits with expected counts and pinned sha256, recipes, max
lengths, and the ``module:function`` builder), and what the builder returns (:class:`Built`).

Why a versioned, declarative record: a published number is only comparable when its split is the same, so each
split states its expected count (and, once pinned, the sha256 of its canonical content); changing how a split is
built means bumping ``version``, which invalidates caches and makes every stored result name the split version it
was computed on. Register a task with ``bench.data.TASKS.register`` (or the ``bench.tasks`` entry-point group).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from bench.api.errors import DataError
from bench.api.types import Example

TaskFamily = Literal["qg", "paraphrase", "summarization"]


@dataclass(frozen=True)
class SplitSpec:
    """One split of a task.

    ``partial``: a named subset of the official split (never to be presented as the full set).
    ``optional``: needs a source the shared data does not ship (e.g. full XSum); built only when
    the user supplies it. ``references_only``: sources are empty; usable only to score outputs
    produced elsewhere. ``sha256``: pinned canonical content hash at this task version (None when
    the content depends on user-supplied files).
    """

    name: str
    count: int
    partial: bool = False
    note: str = ""
    sha256: str | None = None
    optional: bool = False
    references_only: bool = False

    def describe(self) -> str:
        """Short label for listings, e.g. ``11,877`` or ``4,034, partial``."""
        tags = [f"{self.count:,}"]
        if self.partial:
            tags.append("partial")
        if self.references_only:
            tags.append("references only")
        if self.optional:
            tags.append("needs user data")
        return ", ".join(tags)


@dataclass(frozen=True)
class Task:
    """A benchmark task: its splits, scoring defaults and the function that builds it."""

    name: str
    version: int
    family: TaskFamily
    splits: Mapping[str, SplitSpec]  # name -> spec, in canonical order; build with ``splits(...)``
    #: the recipes a run records (scored at the end of every ``bench run``); a subset of ``recipes``
    default_recipes: tuple[str, ...]
    #: every recipe that applies to the task, in the order a protocol-sensitivity table shows them;
    #: the single source the scorer, ``bench score --all-recipes`` and ``bench rescore`` read
    recipes: tuple[str, ...]
    max_source_len: int
    max_target_len: int
    description: str
    citation: str
    builder: str  # "module:function", imported only when the task is built
    raw_files: tuple[str, ...]  # paths under the data dir, verified against SHA256SUMS before a build
    key_field: str = ""  # fields[...] name holding the scoring group key, if any
    reversed_dev_test: bool = False  # builder option: swap dev and test (Zhao et al. 2018)
    #: the task whose training split this task's is (same builder, files and pinned sha256): a system whose
    #: weights do not depend on the dev split trains one model for both (bench.runs.training_task)
    train_from: str | None = None
    #: a folder holding ``raw_files`` and their ``SHA256SUMS`` that ships with the task (a plugin's
    #: own data); None: the shared data directory (``--data-dir`` / ``$BENCH_DATA``)
    data_root: str | None = None

    def __post_init__(self) -> None:
        extra = [r for r in self.default_recipes if r not in self.recipes]
        if extra:
            raise ValueError(
                f"Task '{self.name}': default recipes {extra} are not among its applicable recipes "
                f"{list(self.recipes)}; add them to `recipes` (a recorded score must be one the task declares)."
            )

    def split(self, name: str) -> SplitSpec:
        """The spec of split ``name``; an unknown name is a ``DataError`` listing the known ones."""
        if name not in self.splits:
            known = ", ".join(self.splits)
            raise DataError(f"Task '{self.name}' has no split '{name}'. Known splits: {known}.")
        return self.splits[name]

    def split_names(self) -> list[str]:
        return list(self.splits)


def splits(*specs: SplitSpec) -> Mapping[str, SplitSpec]:
    """A read-only ``{name: spec}`` in the given order."""
    return MappingProxyType({spec.name: spec for spec in specs})


@dataclass
class Built:
    """Examples per split, plus any user-supplied files read that ``SHA256SUMS`` does not cover.

    ``extra_sources`` are hashed into the cache manifest so that a changed user copy (e.g. a full
    XSum) makes the cache stale even though no checksum list vouches for it.
    """

    splits: dict[str, list[Example]]
    extra_sources: dict[str, Path] = field(default_factory=dict)


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 text file by the one rule (:func:`bench.api.text.split_lines`: ``\\n`` only, not Unicode
    line separators nor a lone ``\\r``; read as bytes, so no newline translation happens first). Bytes that are
    not UTF-8 are one line naming the file (:func:`bench.api.reading.read_text`)."""
    from bench.api.reading import read_text
    from bench.api.text import split_lines
    from bench.api.textfile import DATA

    return split_lines(read_text(path, "restore it from its source (`bench data verify` names altered files)",
                                 translate_newlines=False, limits=DATA))
