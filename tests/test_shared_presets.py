"""The helpers every family's presets share: one training-subset rule, one config -> trainer mapping."""

from __future__ import annotations

import random
from dataclasses import dataclass, fields

import pytest

pytest.importorskip("torch")

from systems.presets import seeded_subset
from systems.training import TrainConfig, train_config


def test_seeded_subset_keeps_split_order_and_is_fixed_by_the_seed() -> None:
    items = list(range(100))
    a = seeded_subset(items, 10, seed=3)
    assert a == sorted(a) and len(set(a)) == 10
    assert a == seeded_subset(items, 10, seed=3) != seeded_subset(items, 10, seed=4)
    assert seeded_subset(items, None, seed=3) == items == seeded_subset(items, 500, seed=3)


def test_seeded_subset_shuffled_mode_is_unilms_recorded_rule() -> None:
    """UniLM's recorded runs took the first n of a seeded shuffle: the shared helper must pick the very same
    examples in the same order, or their training keys would name data they were not trained on."""
    items = [f"ex{i}" for i in range(50)]
    legacy = list(items)
    random.Random(42).shuffle(legacy)
    assert seeded_subset(items, 20, 42, keep_order=False) == legacy[:20]
    assert seeded_subset(items, 50, 42, keep_order=False) == items  # all of it: no shuffle, as before


@dataclass(frozen=True)
class _FamilyConfig:
    lr: float = 3e-4
    batch_size: int = 16
    steps: int = 100
    warmup: float = 0.05
    beam_size: int = 4  # a decoding knob: not the trainer's
    precision: str = "bf16"


def test_train_config_takes_same_named_fields_and_explicit_values_win() -> None:
    tcfg = train_config(_FamilyConfig(), steps=250, log_every=7)
    assert (tcfg.lr, tcfg.batch_size, tcfg.warmup, tcfg.precision) == (3e-4, 16, 0.05, "bf16")
    assert (tcfg.steps, tcfg.log_every) == (250, 7)
    defaults = TrainConfig(steps=1, batch_size=1)
    given = {"lr", "batch_size", "steps", "warmup", "precision", "log_every"}
    untouched = {f.name for f in fields(TrainConfig)} - given
    assert all(getattr(tcfg, n) == getattr(defaults, n) for n in untouched)


def test_train_config_rejects_a_field_the_trainer_does_not_have() -> None:
    with pytest.raises(TypeError):
        train_config(_FamilyConfig(), beam_size=2)
