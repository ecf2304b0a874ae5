"""What every adapter's presets share: the config base, overrides by field name, ranges, budget sizes, seeded subsets.

A named variant is a preset over one config dataclass (fairseq's ``register_model_architecture``
idea); each family keeps its variant table as ``VARIANTS`` in its ``presets.py``, derives its config from
:class:`FamilyConfig` (the settings every family has, such as ``threads``, declared here once), and these
helpers keep what every family does with its presets identical.
"""

from __future__ import annotations

import math
import random
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, MISSING, dataclass, field, fields, replace
from typing import Any, TypeVar

from bench.api.errors import UserError
from bench.api.system import MAX_SEED as MAX_SEED  # re-exported: every family's ``seed`` is ranged to it

#: the ``cpu`` budgets' training speed policy, one for every family (docs/budgets.md "Training speed";
#: benchmarks/bench_training.py measures it): ``precision=auto`` with ``compile`` allowed lets the training speed
#: probe (systems.training.speed_probe) choose eager/compiled x fp32/bf16 by timing them on the machine; buckets
CPU_SPEED: dict[str, Any] = {"precision": "auto", "compile": True, "bucket_pool": 32, "pad_multiple": 8}

C = TypeVar("C")
S = TypeVar("S")
E = TypeVar("E")


class SettingRangeError(UserError, ValueError):
    """A numeric setting outside the range its field declares (``--set steps=-5``): refused before anything
    runs, so a bogus value never trains, never makes a workdir and never becomes a record."""


@dataclass(frozen=True)
class Range:
    """The values one numeric setting may take: optional lower/upper bounds, each closed or open, and always
    finite (JSON overrides parse ``NaN`` and ``Infinity``, which no setting means)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False  # True: ``low`` itself is refused (lr > 0)
    high_open: bool = False  # True: ``high`` itself is refused (dropout < 1)

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return self.high is None or not (value > self.high or (self.high_open and value == self.high))

    def __str__(self) -> str:
        low, high = _num(self.low), _num(self.high)
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '≥'} {low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '≤'} {high}"
        return "a finite number"


def _num(x: float | None) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def ranged(default: Any = MISSING, *, ge: float | None = None, gt: float | None = None, le: float | None = None,
           lt: float | None = None, default_factory: Any = MISSING) -> Any:
    """A dataclass field that declares the range of its numeric setting (``steps: int = ranged(1000, ge=1)``):
    the one place a range is written; :func:`replace_fields` refuses an override outside it."""
    rng = Range(low=gt if gt is not None else ge, high=lt if lt is not None else le,
                low_open=gt is not None, high_open=lt is not None)
    return field(default=default, default_factory=default_factory, metadata={"range": rng})


@dataclass(frozen=True)
class FamilyConfig:
    """The settings every family's config has, declared once: each family's config dataclass derives from this.
    Its fields are keyword-only, so a family's own fields keep their order and their positions."""

    _: KW_ONLY
    #: torch threads, and the OpenMP/MKL threads of a child process (fairseq-train), while the system fits and
    #: decodes (applied by :func:`bench.api.threads.using_threads`); None: the process's own (``bench run
    #: --threads``). A runtime setting: not part of the training key (bench.runs RUNTIME_FIELDS), so it never moves
    #: a workdir.
    threads: int | None = ranged(None, ge=1)


#: the decode compute types of every family whose config derives from :class:`QuantizableConfig`, named as
#: CTranslate2 names its own (``fairseq_transformer_ct2``), so one ``--set compute_type=int8`` sets both sides of a
#: speed comparison; the first is the default. What each does: :mod:`systems.compute`.
COMPUTE_TYPES = ("float32", "int8", "float16", "bfloat16")
#: the compute types that get a registered twin of every quantizable system (``fairseq_nat_int8`` is
#: ``fairseq_nat`` at ``compute_type=int8``): one latency run can then time a system at both compute types
TWIN_COMPUTE_TYPES = ("int8",)


def check_compute_type(value: Any, label: str) -> str:
    """``value`` if it is a compute type (:data:`COMPUTE_TYPES`), else a one-line error naming the choices."""
    if value not in COMPUTE_TYPES:
        raise ValueError(f"{label}: --set compute_type={value!r}; choose one of {', '.join(COMPUTE_TYPES)}")
    return str(value)


@dataclass(frozen=True)
class QuantizableConfig(FamilyConfig):
    """The config base of a family that can decode at another compute type than the fp32 it trains in: the
    ``compute_type`` setting, decode-only (an int8 run decodes the fp32 run's trained model; never trained in)."""

    _: KW_ONLY
    #: float32 (the model as trained) | int8 (CPU) | float16 | bfloat16 (GPU): systems.compute
    compute_type: str = "float32"


#: the quality-run batch size at ``compute_type=int8`` when ``decode_batch_size`` is not set: batch 1, the batch the
#: latency meter times. Why: int8 rounds each activation to one of 255 levels, so the last-bit float32 noise a padded
#: batch brings (attention sums over padding, other GEMM blocking) flips some roundings and grows into other tokens.
#: Trained mist_minilm_l6 on Quora: 6 of 300 items decoded differently batched than alone at int8, 0 at float32; the
#: meter then refused the int8 row (timed outputs differ from the quality run's). At batch 1 the quality run decodes
#: what the meter times, so its score is the deployed int8 model's and the check holds exactly.
INT8_DECODE_BATCH_SIZE = 1


def int8_decode_batch(cfg: Any, overrides: Mapping[str, Any]) -> Any:
    """``cfg`` with ``decode_batch_size`` :data:`INT8_DECODE_BATCH_SIZE` when it decodes at int8 and the batch size
    was not set explicitly (an explicit ``--set decode_batch_size=N`` is the user's, and the meter's check says
    what it costs); any other config as it is."""
    if getattr(cfg, "compute_type", "float32") != "int8" or "decode_batch_size" in overrides:
        return cfg
    return replace(cfg, decode_batch_size=INT8_DECODE_BATCH_SIZE)


def compute_twins(variants: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Registered twin name -> (variant, compute type) for every variant: ``{"fairseq_nat_int8": ("fairseq_nat",
    "int8"), ...}``. A twin is a preset like any other: its variant's preset with ``compute_type`` set."""
    return {f"{v}_{c}": (v, c) for v in variants for c in TWIN_COMPUTE_TYPES}


def resolve_twin(name: str, overrides: Mapping[str, Any], twins: Mapping[str, tuple[str, str]]
                 ) -> tuple[str, dict[str, Any]]:
    """``(variant, overrides)`` that build ``name``: a twin's variant with its compute type added to the overrides
    (an override that contradicts the twin's name is refused in one line); any other name as it is."""
    if name not in twins:
        return name, dict(overrides)
    variant, compute = twins[name]
    asked = overrides.get("compute_type", compute)
    if asked != compute:
        raise ValueError(f"{name} is {variant} at compute_type={compute}; --set compute_type={asked!r} contradicts "
                         f"its name: run {variant} with --set compute_type={asked} instead")
    return variant, {**overrides, "compute_type": compute}


def field_ranges(cls: Any) -> dict[str, Range]:
    """The declared range of each field of the dataclass ``cls`` (or of an instance's class) that has one."""
    return {f.name: f.metadata["range"] for f in fields(cls) if "range" in f.metadata}


def check_range(name: str, value: Any, rng: Range, label: str = "") -> None:
    """Refuse ``value`` for the setting ``name`` unless it lies in ``rng`` (None: the field's "unset")."""
    if value is None or value in rng:
        return
    where = f" for {label}" if label else ""
    raise SettingRangeError(f"--set {name}={value}: {name} must be {rng}{where} (got {value})")


def out_of_range(obj: Any) -> list[str]:
    """``name=value (range)`` for each field of the dataclass instance ``obj`` outside its declared range:
    for tests that hold every preset to the ranges its overrides are held to."""
    return [f"{name}={getattr(obj, name)!r} (must be {rng})" for name, rng in field_ranges(obj).items()
            if getattr(obj, name) is not None and getattr(obj, name) not in rng]


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

    steps: int = ranged(ge=1)
    batch_size: int = ranged(ge=1)
    max_source_len: int = ranged(ge=1)
    max_target_len: int = ranged(ge=1)
    train_examples: int | None = ranged(ge=1)  # None: the whole training split
    lr: float | None = ranged(None, gt=0)  # None: the family's own learning rate
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
    ones; a value of the wrong type is an error naming the field and the type it takes, and a number
    outside its field's declared range (:func:`ranged`) one naming the range, before anything runs
    (``--set lr=abc`` or ``--set steps=-5`` must not train, or die later in a comparison)."""
    known = {f.name for f in fields(cfg)} - set(frozen)  # type: ignore[arg-type]
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"Unknown override(s) {bad} for {label}; known: {', '.join(sorted(known))}")
    if not overrides:
        return cfg
    hints = typing.get_type_hints(type(cfg))
    checked = {k: checked_value(k, v, hints[k], label) for k, v in overrides.items()}
    ranges = field_ranges(cfg)
    for k, v in overrides.items():
        if k in ranges:
            check_range(k, v, ranges[k], label)
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
