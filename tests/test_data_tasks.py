"""Task registry, split counts of every task, and data-dir resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.data import TASKS, DataError, Split, Task, data_dir, load_split
from bench.data.sources import default_data_dir, present, read_sums

EXPECTED = {
    "squad_qg": {"train": 75_722, "dev": 10_570, "test": 11_877},
    "squad_qg_reversed": {"train": 75_722, "dev": 11_877, "test": 10_570},
    "quora": {"train": 100_000, "dev": 2_797, "test": 30_000},
    "xsum": {"test-refs": 11_334, "test-available": 4_034, "validation-available": 1_079},
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "bench-data-cache"  # shared by the data test modules


def test_registry_lists_the_four_tasks() -> None:
    assert TASKS.names() == ["quora", "squad_qg", "squad_qg_reversed", "xsum"]
    for name in TASKS:
        task = TASKS.get(name)
        assert isinstance(task, Task) and task.name == name and task.version >= 1
        assert task.default_recipes and task.max_source_len > 0 and task.max_target_len > 0
        assert task.citation and task.description


def test_default_recipes() -> None:
    assert TASKS.get("squad_qg").default_recipes == ("nqg", "unilm", "mist", "unilm-tok")
    assert TASKS.get("quora").default_recipes == ("mist-quora",)
    assert TASKS.get("xsum").default_recipes == ("rouge155", "rouge-pltrdy", "rouge-score")



def test_reversed_squad_is_squad_qg_with_dev_and_test_swapped() -> None:
    from dataclasses import fields

    base, rev = TASKS.get("squad_qg"), TASKS.get("squad_qg_reversed")
    own = {"name", "splits", "description", "citation", "reversed_dev_test", "train_from"}
    for f in fields(Task):
        if f.name not in own:
            assert getattr(rev, f.name) == getattr(base, f.name), f.name
    assert rev.reversed_dev_test and not base.reversed_dev_test and rev.split_names() == base.split_names()
    assert rev.train_from == "squad_qg" and base.train_from is None  # the same training split
    for mine, theirs in (("train", "train"), ("dev", "test"), ("test", "dev")):
        got, want = rev.split(mine), base.split(theirs)
        assert (got.name, got.count, got.sha256) == (mine, want.count, want.sha256)

def test_raw_files_are_all_listed_in_sha256sums() -> None:
    root = data_dir()
    sums = read_sums(root)
    for name in TASKS:  # `a|b`: the alternative present here (bench.data.sources.present)
        missing = [rel for rel in TASKS.get(name).raw_files if present(root, rel) not in sums]
        assert not missing, (name, missing)


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_split_counts(task: str, cache_dir: Path) -> None:
    for split, count in EXPECTED[task].items():
        assert TASKS.get(task).split(split).count == count
        loaded = load_split(task, split, cache_dir=cache_dir)
        assert isinstance(loaded, Split)
        assert (loaded.task, loaded.name, len(loaded)) == (task, split, count)
        assert len({ex.id for ex in loaded.examples}) == count, "ids must be unique within a split"
        assert loaded.sha256 == TASKS.get(task).split(split).sha256


def test_unknown_task_and_split_are_clear_errors() -> None:
    with pytest.raises(DataError, match="Did you mean 'squad_qg'"):
        load_split("squad_gq", "test")
    with pytest.raises(DataError, match="no split 'tset'.*Known splits: train, dev, test"):
        load_split("squad_qg", "tset")


def test_data_dir_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env = tmp_path / "explicit", tmp_path / "env"
    explicit.mkdir()
    env.mkdir()
    monkeypatch.setenv("BENCH_DATA", str(env))
    assert data_dir(explicit) == explicit.resolve()
    assert data_dir(str(explicit)) == explicit.resolve()
    assert data_dir() == env.resolve()
    monkeypatch.delenv("BENCH_DATA")
    assert data_dir() == default_data_dir()


def test_data_dir_error_lists_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path / "from-env"))
    with pytest.raises(DataError) as err:
        data_dir(tmp_path / "nope")
    msg = str(err.value)
    assert str(tmp_path / "nope") in msg and "not found" in msg
    assert str(tmp_path / "from-env") in msg and "--data-dir" in msg and "BENCH_DATA" in msg
    with pytest.raises(DataError, match="from-env.*not found"):
        data_dir()
