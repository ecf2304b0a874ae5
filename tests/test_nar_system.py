"""The System adapter end to end on the smoke budget: fit, decode, decode_one, reuse, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_training import qg_examples

from bench.api.system import System
from bench.api.types import TaskInfo

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def task() -> TaskInfo:
    return TaskInfo("squad_qg", qg_examples(256, 0), qg_examples(16, 1), 464, 48)


@pytest.fixture(scope="module")
def trained(task: TaskInfo, tmp_path_factory: pytest.TempPathFactory) -> tuple[System, Path]:
    from systems import build

    work = tmp_path_factory.mktemp("mist_smoke")
    system = build("mist_minilm_l6", "smoke", {})
    system.fit(task, work)
    return system, work


def test_fit_decode_and_decode_one_agree(trained: tuple[System, Path], task: TaskInfo) -> None:
    system, work = trained
    assert isinstance(system, System)
    info = system.describe()
    assert info.family == "NAR" and info.iterations == 1 and info.budget == "smoke"
    assert info.config["train"]["steps"] == 40
    examples = list(task.dev)
    outs = system.decode(examples)
    assert len(outs) == len(examples) and all(isinstance(o, str) for o in outs)
    assert all("[SEP]" not in o and " ##" not in o for o in outs)
    for ex, want in zip(examples[:4], outs[:4], strict=True):
        assert system.decode_one(ex) == want
    assert system.last_iterations == 1
    assert (work / "checkpoints").is_dir() and (work / "nar_model.json").is_file()


def test_forced_length_and_iterative_reuse(trained: tuple[System, Path], task: TaskInfo) -> None:
    from systems import build

    system, work = trained
    ex = task.dev[0]
    assert getattr(system, "supports_forced_length", False)
    forced = system.decode_one(ex, forced_length=3)
    assert len(forced.split()) <= 3
    for method, k in (("mist_iter", 3), ("mask_predict", 6)):
        other = build("mist_minilm_l6", "smoke", {"init_from": str(work), "decode": method, "iterations": k})
        other.fit(task, work.parent / f"reuse_{method}")  # loads, does not train
        assert not (work.parent / f"reuse_{method}" / "checkpoints").exists()
        assert other.describe().family == "semi-NAR"
        out = other.decode([ex])
        assert other.last_iterations == k
        assert out == [other.decode_one(ex)]
    same = build("encoder_minilm_l6", "smoke", {"init_from": str(work)})
    same.fit(task, work.parent / "reuse_single")
    assert same.decode(list(task.dev)) == system.decode(list(task.dev))


def test_overrides_are_checked() -> None:
    from systems import build

    with pytest.raises(ValueError, match="Unknown override"):
        build("encoder_unilm", "smoke", {"lerning_rate": 1})
    with pytest.raises(ValueError, match="decode"):
        build("encoder_unilm", "smoke", {"decode": "beam"})
    with pytest.raises(ValueError, match="budget"):
        build("encoder_unilm", "gpu", {})
    paper = build("encoder_unilm", "paper", {}).cfg
    assert (paper.lr, paper.warmup, paper.backbone) == (3e-5, 500, "unilm1.2-base-uncased")
    size = paper.size_for("squad_qg")
    assert (size.steps, size.batch_size, size.max_source_len, size.max_target_len) == (30_005, 64, 464, 48)
    assert paper.size_for("quora").steps == 50_005


def test_init_from_missing_workdir_is_a_clear_error(task: TaskInfo, tmp_path: Path) -> None:
    from systems import build

    system = build("mist_minilm_l6", "smoke", {"init_from": str(tmp_path / "nope")})
    with pytest.raises(FileNotFoundError, match="init_from"):
        system.fit(task, tmp_path / "w")


def test_static_mixing_trains_on_original_plus_mixed(
    trained: tuple[System, Path], task: TaskInfo, tmp_path: Path
) -> None:
    from systems import build

    _, work = trained
    system = build("static_mix_minilm_l6", "smoke", {"mix_from": str(work), "steps": 4})
    system.fit(task, tmp_path)
    assert system.describe().config["train"]["n_pairs"] == 2 * 256
    import json

    mixed = json.loads((tmp_path / "mixed_sources.json").read_text())
    enc = system.encoder
    assert all(s[0] == enc.cls and enc.sep in s for s in mixed)
    assert len(system.decode(list(task.dev[:3]))) == 3


def test_decode_only_overrides_reuse_the_trained_workdir(trained: tuple[System, Path], task: TaskInfo) -> None:
    """`bench run --set decode=mist_iter` shares the plain run's workdir; fitting there must not train again."""
    from bench.runs import RunSpec, training_spec, training_workdir
    from systems import build

    system, work = trained
    iterative = build("mist_minilm_l6", "smoke", {"decode": "mist_iter", "iterations": 3})
    decode_only = {"decode": "mist_iter", "iterations": 3}
    spec = RunSpec("mist_minilm_l6", "quora", budget="cpu", overrides=decode_only, limit=50)
    plain = RunSpec("mist_minilm_l6", "quora", budget="cpu")
    assert training_spec(spec, iterative) == plain
    plain_system = build("mist_minilm_l6", "smoke", {})
    assert training_workdir(spec, iterative) == training_workdir(plain, plain_system)
    trained_lr = RunSpec("mist_minilm_l6", "quora", overrides={"lr": 1e-3, "iterations": 6})
    assert training_spec(trained_lr, iterative).overrides == {"lr": 1e-3}

    before = sorted(p.name for p in (work / "checkpoints").iterdir())
    log_before = (work / "train_log.jsonl").read_text() if (work / "train_log.jsonl").exists() else None
    iterative.fit(task, work)  # resumes at the final step: nothing to train
    assert sorted(p.name for p in (work / "checkpoints").iterdir()) == before
    if log_before is not None:
        assert (work / "train_log.jsonl").read_text() == log_before
    ex = task.dev[0]
    assert iterative.decode([ex]) == [iterative.decode_one(ex)]
    assert iterative.last_iterations == 3
