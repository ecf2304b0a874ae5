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


@dataclass(frozen=True)
class _Family:
    steps: int = 1
    max_update: int = 1
    batch_size: int = 1
    lr: float = 0.5
    max_source_len: int = 9
    max_target_len: int = 9
    train_examples: int | None = 7


def test_sized_sets_the_budget_fields_by_name_and_none_keeps_the_familys_own() -> None:
    from systems.presets import BudgetSize, sized

    size = BudgetSize(steps=300, batch_size=16, max_source_len=8, max_target_len=32, train_examples=None)
    out = sized(_Family(), size)
    assert (out.steps, out.batch_size, out.max_source_len, out.max_target_len) == (300, 16, 8, 32)
    assert out.lr == 0.5 and out.train_examples is None  # lr None keeps; train_examples None is "all of it"
    renamed = sized(_Family(), size, {"steps": "max_update"})
    assert (renamed.max_update, renamed.steps) == (300, 1)
    with pytest.raises(ValueError, match="no field for BudgetSize.source_window='answer'"):
        sized(_Family(), BudgetSize(1, 1, 1, 1, None, source_window="answer"))


@pytest.mark.parametrize(
    ("system", "module", "cpu_size", "names"),
    [
        ("unilm", "systems.unilm.presets", "CPU_SIZE_V1", {}),
        ("copybert_selfcopy", "systems.copybert.presets", "CPU_SIZE",
         {"max_source_len": "max_seq_length", "max_target_len": "max_query_length"}),
        ("erniegen_base", "systems.erniegen.presets", "CPU_SIZE", {}),
        ("fairseq_nat", "systems.fairseq_nat.presets", "CPU_SIZE", {"steps": "max_update"}),
        ("bert2bert_minilm_l6", "systems.hf_seq2seq.presets", "CPU_SIZE", {}),
    ],
)
def test_every_familys_smoke_and_cpu_presets_are_a_declared_budget_size(
    system: str, module: str, cpu_size: str, names: dict
) -> None:
    """One sizing mechanism: each family declares its budgets as BudgetSize values (NAR per task, in
    ``CPU_SIZES``) and a built system trains exactly at them."""
    import importlib

    from systems import build
    from systems.presets import BudgetSize

    mod = importlib.import_module(module)
    for budget, const in (("smoke", "SMOKE_SIZE"), ("cpu", cpu_size)):
        size = getattr(mod, const)
        assert isinstance(size, BudgetSize)
        config = build(system, budget).describe().config
        for f in fields(size):
            value = getattr(size, f.name)
            if value is None and f.name == "lr":
                continue
            if f.name == "source_window" and "source_window" not in config:
                assert value == "head"
                continue
            assert config[names.get(f.name, f.name)] == value, (system, budget, f.name)
    from systems.nar.presets import CPU_SIZES, SMOKE_SIZE

    assert isinstance(SMOKE_SIZE, BudgetSize) and all(isinstance(s, BudgetSize) for s in CPU_SIZES.values())


#: every model family under systems/ (a package with a system.py), by its registry factory module
FAMILIES = ("copybert", "erniegen", "fairseq_ct2", "fairseq_nat", "hf_seq2seq", "nar", "unilm")


def test_every_family_keeps_one_convention() -> None:
    """#41: presets live in ``<family>/presets.py``, the variant table is ``VARIANTS``, and the config derives from
    the shared :class:`FamilyConfig` (so ``threads`` is declared once, in systems/presets.py)."""
    import importlib
    from pathlib import Path

    import systems
    from systems import SYSTEMS
    from systems.presets import MAX_SEED, FamilyConfig, field_ranges

    root = Path(systems.__file__).parent
    assert sorted(p.parent.name for p in root.glob("*/system.py")) == sorted(FAMILIES)
    for family in FAMILIES:
        assert not (root / family / "config.py").exists(), family
        mod = importlib.import_module(f"systems.{family}.presets")
        assert isinstance(mod.VARIANTS, dict) and mod.VARIANTS and not hasattr(mod, "SYSTEMS"), family
        owner = importlib.import_module(f"systems.{getattr(mod, 'CONFIG_FAMILY', family)}.presets")
        configs = [v for v in vars(owner).values() if isinstance(v, type) and issubclass(v, FamilyConfig)
                   and v.__module__ == owner.__name__]  # the family's own (not the shared bases it imports)
        assert len(configs) == 1, (family, configs)
        assert field_ranges(configs[0])["seed"].high == MAX_SEED, family
        for name in mod.VARIANTS:
            assert name in SYSTEMS, (family, name)


def test_threads_are_applied_in_one_place_and_restored() -> None:
    """`using_threads` sets torch's threads and the OpenMP/MKL variables a child process (fairseq-train) reads,
    then restores both; None leaves everything as it is."""
    import os

    import torch

    from bench.api.threads import THREAD_VARS, using_threads

    before, env = torch.get_num_threads(), {v: os.environ.get(v) for v in THREAD_VARS}
    n = 1 if before != 1 else 2
    with using_threads(n):
        assert torch.get_num_threads() == n and all(os.environ[v] == str(n) for v in THREAD_VARS)
    assert torch.get_num_threads() == before and {v: os.environ.get(v) for v in THREAD_VARS} == env
    with using_threads(None):
        assert torch.get_num_threads() == before and {v: os.environ.get(v) for v in THREAD_VARS} == env
