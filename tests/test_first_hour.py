"""#47, a newcomer's first hour: the headline command's spec trains on what this machine has (XSum at smoke: the
recovered validation documents), every other budget refuses in one line saying what would make it run, a cpu run
of a system without its backbone names its cpu stand-in, and `bench ls systems` says both."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.api.errors import DataError
from bench.api.types import Example, Split
from bench.cli import app
from bench.runs.identity import build_system, model_spec, model_workdir
from bench.runs.resolve import StandInNeeded, budgets_here, check_weights_here, with_training_split
from bench.runs.spec import RunSpec


@pytest.fixture(autouse=True)
def _no_full_xsum_and_no_paper_weights(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This machine's situation, whatever the tester's: no full XSum, and no paper checkpoint but MiniLM-L6."""
    import bench.api.checkpoints as checkpoints

    monkeypatch.delenv("BENCH_XSUM", raising=False)
    real = checkpoints.find_local_checkpoint
    monkeypatch.setattr(checkpoints, "find_local_checkpoint",
                        lambda name: real(name) if name == "minilm-l6" else None)


def test_xsum_smoke_trains_on_the_recovered_validation_documents() -> None:
    from bench.data.training import training_split

    assert training_split("xsum", "smoke") == "validation-available"
    assert training_split("quora", "smoke") is None and training_split("squad_qg", "cpu") is None


@pytest.mark.parametrize("budget", ["cpu", "paper"])
def test_xsum_without_training_documents_is_one_line_naming_fetch_and_the_smoke_default(budget: str) -> None:
    from bench.data.training import training_split

    with pytest.raises(DataError) as err:
        training_split("xsum", budget)
    message = str(err.value)
    assert "\n" not in message and "204,045 training documents are not on this machine" in message
    assert "`bench fetch --data`" in message and "default budget, smoke" in message
    assert "test-refs" not in message  # test-only splits do not help a run that must train


def test_the_training_split_is_part_of_the_spec_and_the_run_id() -> None:
    plain = RunSpec("mist_unilm", "xsum", "test-available")
    assert "train_split" not in plain.to_json()  # runs on the task's own train split keep their ids
    smoke = with_training_split(plain)
    assert smoke.train_split == "validation-available" and smoke.run_id != plain.run_id
    assert RunSpec.from_json(smoke.to_json()) == smoke
    trained, key = model_spec(smoke, build_system(smoke))
    assert "xsum@validation-available" in model_workdir(trained, key).name


def test_a_system_that_trains_nothing_names_no_training_split() -> None:
    spec = RunSpec("lead1", "xsum", "test-available", budget="cpu")
    assert with_training_split(spec) == spec


def test_training_examples_drop_the_documents_without_a_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.data
    from bench.data import TASKS
    from bench.runs.pipeline import training_examples

    exs = tuple(Example(id=str(i), source=f"doc {i}", target="" if i % 2 else f"sum {i}") for i in range(6))
    split = Split(task="xsum", name="validation-available", examples=exs, sha256="x", partial=True)
    monkeypatch.setattr(bench.data, "load_split", lambda task, name, data_dir=None: split)
    spec = RunSpec("mist_unilm", "xsum", train_split="validation-available")
    train, dev = training_examples(spec, TASKS.get("xsum"), None)
    assert [ex.id for ex in train] == ["0", "2", "4"] and dev == train


def test_a_cpu_run_without_the_backbone_names_its_stand_in_in_one_line() -> None:
    spec = RunSpec("mist_unilm", "xsum", "test-available", budget="cpu")
    with pytest.raises(StandInNeeded) as err:
        check_weights_here(spec)
    message = str(err.value)
    assert "\n" not in message and "unilm1.2-base-uncased has no offline copy" in message
    assert "`bench run --system mist_minilm_l6 --task xsum --budget cpu`" in message and "--stand-in" in message
    assert check_weights_here(spec, use_stand_in=True).system == "mist_minilm_l6"
    for ok in (RunSpec("mist_minilm_l6", "quora", budget="cpu"), RunSpec("mist_unilm", "quora")):
        assert check_weights_here(ok) == ok  # its own weights are here / smoke builds a tiny random model


def test_the_stand_ins_are_the_rows_cpu_systems_of_the_paper_tables() -> None:
    """One mapping, two places: a paper row that names another cpu system names the system's own stand-in."""
    from bench.papers import all_tables

    pairs = {(row.system, row.cpu_system) for table in all_tables() for row in table.rows
             if row.system and row.cpu_system and row.cpu_system != row.system}
    for system, cpu_system in sorted(pairs):
        stand_in = build_system(RunSpec(system, "quora", budget="cpu")).cpu_stand_in
        assert stand_in in (None, cpu_system), f"{system}: stand-in {stand_in}, the tables say {cpu_system}"
    assert ("mist_unilm", "mist_minilm_l6") in pairs


def test_budgets_here_and_the_stand_in() -> None:
    assert budgets_here("mist_unilm") == (["smoke"], "mist_minilm_l6")
    assert budgets_here("mist_minilm_l6") == (["smoke", "cpu", "paper"], None)
    assert budgets_here("lead3") == (["smoke", "cpu", "paper"], None)


def test_ls_systems_shows_budgets_and_stand_in_within_80_columns() -> None:
    result = CliRunner().invoke(app, ["ls", "systems"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if ln.startswith("mist_unilm "))
    assert line.split() == ["mist_unilm", "NAR", "smoke", "mist_minilm_l6"]
    assert max(len(ln) for ln in result.output.splitlines()) <= 80


def test_bench_run_at_cpu_names_the_stand_in_and_writes_nothing(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    result = CliRunner().invoke(app, ["run", "--system", "mist_unilm", "--task", "xsum", "--budget", "cpu",
                                      "--results-dir", str(results)], env={"COLUMNS": "400"})
    assert result.exit_code == 2
    assert "its cpu stand-in is mist_minilm_l6" in result.output
    assert list(results.iterdir()) == []


def test_lead3_is_the_first_three_sentences() -> None:
    from systems.baselines import first_sentence, lead_sentences

    doc = "One here. Two there! Three?\nFour. Five."
    assert lead_sentences(doc, 3) == "One here. Two there! Three?"
    assert lead_sentences("A.\n\nB. C. D.", 3) == "A. B. C."
    assert first_sentence(doc) == "One here."
