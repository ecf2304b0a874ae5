"""The declared System contract (#17): every registered system honours it, and bench reads it directly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.api.errors import UserError
from bench.api.registry import RegistryError
from bench.api.system import System, check_system
from systems import SYSTEMS, build

ROOT = Path(__file__).resolve().parents[1]
CAPABILITIES = ("needs_training", "decode_only_overrides", "supports_forced_length", "supports_random_weights",
                "latency_probe", "last_iterations", "selects_on_dev", "model_siblings")


@pytest.mark.parametrize("name", SYSTEMS.names())
def test_every_registered_system_subclasses_the_contract(name: str) -> None:
    system = build(name, "smoke")
    assert isinstance(system, System)
    for attr in CAPABILITIES:
        assert hasattr(system, attr), (name, attr)
    assert isinstance(system.decode_only_overrides, tuple | list)
    assert set(system.model_siblings) <= set(SYSTEMS.names()), (name, system.model_siblings)  # names, not typos
    assert system.describe().name  # describe works before fit


def test_a_factory_that_returns_something_else_is_a_one_line_error() -> None:
    class NotASystem:
        def decode_one(self, example):
            return ""

    with pytest.raises(RegistryError, match="does not subclass bench.api.system.System"):
        check_system("plugin_x", NotASystem())


def test_systems_without_a_forced_length_mode_refuse_one() -> None:
    from bench.api.errors import LengthForcedUnsupported
    from bench.api.types import Example

    copy = build("copy_source", "smoke")
    ex = Example("e1", "how do i learn ?", "how can i learn ?")
    assert copy.decode_one(ex) == "how do i learn ?"
    with pytest.raises(LengthForcedUnsupported, match="forced length"):
        copy.decode_one(ex, forced_length=5)


def test_random_weights_is_refused_where_the_family_has_no_such_mode(tmp_path: Path) -> None:
    """#17 finding 1: UniLM's `weights` is a weight-file path; `weights=random` used to train 40 updates."""
    from bench.latency.prepare import prepare

    with pytest.raises(UserError, match=r"not a mode of unilm.*encoder_minilm_l6"):
        prepare(["unilm", "encoder_minilm_l6"], "smoke", {"unilm": {"weights": "random"}}, "quora", tmp_path)
    assert build("encoder_minilm_l6", "smoke").supports_random_weights
    assert not build("unilm", "smoke").supports_random_weights


def test_bench_never_probes_a_system_with_getattr() -> None:
    """The contract is read as declared attributes; a `getattr(system, ..., default)` would hide a typo."""
    pattern = re.compile(r"getattr\((self\.)?(system|sys_|s|built\[\w+\]|info|describe)\b")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "bench").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_task_recipes_are_the_single_source() -> None:
    """#17 finding 2: the scorer's recipe list is the task's; a default outside it is refused at definition."""
    from dataclasses import replace

    from bench.data import TASKS
    from bench.scoring import applicable_recipes

    for name in TASKS.names():
        task = TASKS.get(name)
        assert applicable_recipes(name) == list(task.recipes)
        assert set(task.default_recipes) <= set(task.recipes)
    quora = TASKS.get("quora")
    with pytest.raises(ValueError, match="not among its applicable recipes"):
        replace(quora, default_recipes=("mist-quora", "bleurt"))


def test_an_unregistered_recipe_fails_before_fit() -> None:
    from dataclasses import replace

    from bench.data import TASKS
    from bench.runs import check_recipes

    quora = TASKS.get("quora")
    check_recipes(quora)
    broken = replace(quora, default_recipes=("mist-qora",), recipes=("mist-qora",))
    with pytest.raises(RegistryError, match="Did you mean 'mist-quora'"):
        check_recipes(broken)


def test_random_weights_needs_no_training_split(tmp_path: Path) -> None:
    """A speed column times the untrained architecture: XSum's training split (user data) is not needed."""
    from bench.api.types import Example, TaskInfo

    tiny = {"hidden": 32, "layers": 2, "heads": 2, "intermediate": 64}
    system = build("encoder_minilm_l6", "smoke", {"weights": "random", "tiny": tiny})
    assert not system.needs_training
    system.fit(TaskInfo("xsum", (), (), 464, 48), tmp_path)
    out = system.decode_one(Example("e", "a short document .", "x"), forced_length=5)
    assert len(out.split()) <= 5 and system.last_iterations == 1


def test_latency_records_keep_every_family_s_config() -> None:
    """#17 finding 1: the latency record used to keep only config keys two families use."""
    from bench.api.system import SystemInfo
    from bench.latency.record import system_summary

    info = SystemInfo("copybert_twohop", "AR", "n", "test", config={"copy": "two-hop", "beam_size": 5, "train": {}})
    assert system_summary(info)["config"] == {"copy": "two-hop", "beam_size": 5, "train": {}}


#: presets that do not build from the budget alone, by design (README "Systems"), as (system, budget) -> the
#: overrides that make them build, or None where the budget is refused outright. Either way the error is a
#: UserError whose message matches the pattern (it says why and what to run instead); nothing else may refuse.
DOCUMENTED_REFUSALS: dict[tuple[str, str], tuple[str, dict | None]] = {
    ("hf_seq2seq", "cpu"): ("--set model=", {"model": "bert2bert:minilm-l6"}),  # any HF model: name one
    ("bart_large", "cpu"): ("does not fit a 2-core CPU budget", None),
    ("prophetnet_large", "cpu"): ("does not fit a 2-core CPU budget", None),
}


@pytest.mark.parametrize("name", sorted(SYSTEMS.names()))
def test_every_training_config_is_plain_json_and_blind_to_runtime_fields(name: str) -> None:
    """The training key names the workdir a model resumes from: it must be the same in every process
    (no object reprs), and thread counts must not retrain a model."""
    import json

    from bench.runs import training_config, training_key

    for budget in ("smoke", "cpu"):
        base: dict = {}
        if (name, budget) in DOCUMENTED_REFUSALS:
            reason, needs = DOCUMENTED_REFUSALS[name, budget]
            with pytest.raises(UserError, match=re.escape(reason)):
                build(name, budget, {})
            if needs is None:
                continue
            base = needs
        system = build(name, budget, base)
        json.dumps(training_config(system, "quora"), sort_keys=True)  # no default=str needed: no addresses in keys
        if "threads" in system.describe().config:
            assert training_key(build(name, budget, {**base, "threads": 1}), "quora") == training_key(system, "quora")
