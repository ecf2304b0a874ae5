"""Helpers every adapter's presets share: overrides by field name, seeded subsets, factories.

A named variant is a preset over one config dataclass (fairseq's ``register_model_architecture``
idea); these helpers keep the three things every family does with its presets identical.
"""

from __future__ import annotations

import random
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

#: the ``cpu`` budgets' training speed policy, one for every family (bench.precision; README "Training
#: speed"; benchmarks/bench_training.py measures it): bf16 where native, compiled blocks, length buckets
CPU_SPEED: dict[str, Any] = {"precision": "auto", "compile": True, "bucket_pool": 32, "pad_multiple": 8}

C = TypeVar("C")
S = TypeVar("S")
E = TypeVar("E")


@dataclass(frozen=True)
class BudgetSize:
    """How much one budget trains, the one sizing type of every family (a budget fixes updates, batch,
    examples and lengths, never wall time): the ``smoke``/``cpu`` presets of each family are a
    :class:`BudgetSize` applied to its config by :func:`sized`, so a table column's budget reads the
    same whichever family a row comes from.

    ``lr`` belongs here because a short schedule needs its own rate (a calibrated value, see
    ``results/calibration/``); None keeps the family's own. The lengths count a family's pieces for its
    source (CopyBERT: the whole question + paragraph window) and its target.
    """

    steps: int
    batch_size: int
    max_source_len: int
    max_target_len: int
    train_examples: int | None  # None: the whole training split
    lr: float | None = None  # None: the family's own learning rate
    # head: the source's first pieces (every paper) | answer: "answer [SEP]" + a paragraph window around the
    # answer (systems.source_windows), for SQuAD's "answer [SEP] paragraph" sources when a budget's source is short
    source_window: str = "head"


#: the source windows a family can read (BudgetSize.source_window)
SOURCE_WINDOWS = ("head", "answer")


def check_source_window(value: str | None, label: str = "", allow_none: bool = False) -> None:
    """Refuse a window no family reads (``None``: the budget's choice, where a family allows it)."""
    if value in SOURCE_WINDOWS or (allow_none and value is None):
        return
    where = f" for {label}" if label else ""
    raise ValueError(f"override source_window={value!r}{where}: choose 'head' or 'answer'")


def without_head_window(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without ``source_window`` when it is ``head`` (every paper's source): the field was added
    after runs were recorded, and leaving the default out keeps their training keys."""
    if config.get("source_window") == "head":
        del config["source_window"]
    return config


def sized(cfg: C, size: BudgetSize, names: Mapping[str, str] | None = None) -> C:
    """``cfg`` trained at ``size``: each size field set on the config field of the same name, or the one
    ``names`` maps it to (fairseq calls updates ``max_update``). A family without a ``source_window``
    field reads sources from their head; asking it for another window is an error, not a silent head."""
    names = dict(names or {})
    known = {f.name for f in fields(cfg)}  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for f in fields(size):
        value = getattr(size, f.name)
        target = names.get(f.name, f.name)
        if value is None and f.name == "lr":
            continue
        if target not in known:
            if f.name == "source_window" and value == "head":
                continue
            raise ValueError(f"{type(cfg).__name__} has no field for BudgetSize.{f.name}={value!r}")
        changes[target] = value
    return replace(cfg, **changes)  # type: ignore[type-var]


def replace_fields(cfg: C, overrides: Mapping[str, Any], label: str, frozen: tuple[str, ...] = ()) -> C:
    """``cfg`` with fields replaced by name. An unknown (or frozen) key is an error listing the known
    ones; a value of the wrong type is an error naming the field and the type it takes, before
    anything runs (``--set lr=abc`` must not train, or die later in a comparison)."""
    known = {f.name for f in fields(cfg)} - set(frozen)  # type: ignore[arg-type]
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"Unknown override(s) {bad} for {label}; known: {', '.join(sorted(known))}")
    if not overrides:
        return cfg
    hints = typing.get_type_hints(type(cfg))
    checked = {k: checked_value(k, v, hints[k], label) for k, v in overrides.items()}
    return replace(cfg, **checked)  # type: ignore[type-var]


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def checked_value(name: str, value: Any, tp: Any, label: str) -> Any:
    """``value`` if it fits the field type ``tp`` (ints are taken for floats, lists for tuples), else ValueError."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return checked_value(name, value, arg, label)
            except ValueError as exc:
                errors.append(exc)
        raise ValueError(
            f"override {name}={value!r} for {label}: expected {_type_name(tp)}, got {type(value).__name__}"
        )
    ok: bool
    if tp is Any:
        return value
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif tp is str:
        ok = isinstance(value, str)
    elif origin in (tuple, list) or tp in (tuple, list):
        ok = isinstance(value, list | tuple)
        value = tuple(value) if ok and (origin or tp) is tuple else value
    elif origin is dict or tp is dict:
        ok = isinstance(value, dict)
    else:
        return value  # a type this check does not know: the family validates it
    if not ok:
        raise ValueError(
            f"override {name}={value!r} for {label}: expected {_type_name(tp)}, got {type(value).__name__}"
        )
    return value


def seeded_subset(examples: Sequence[E], n: int | None, seed: int, *, keep_order: bool = True) -> list[E]:
    """A fixed, seeded subset (all of it when ``n`` is None or too large), so a budget's "N training
    examples" is the same N examples on every machine.

    ``keep_order``: the chosen examples in split order (every family but UniLM); False: the first ``n``
    of a seeded shuffle, in shuffled order, which is how UniLM's recorded runs chose theirs (kept so their
    training keys still name the data they were trained on).
    """
    if n is None or n >= len(examples):
        return list(examples)
    rng = random.Random(seed)
    if not keep_order:
        shuffled = list(examples)
        rng.shuffle(shuffled)
        return shuffled[:n]
    idx = sorted(rng.sample(range(len(examples)), n))
    return [examples[i] for i in idx]
