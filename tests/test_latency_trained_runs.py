"""`bench latency --runs`: recorded runs' own trained models, timed paired, so a board row's speed-up is its own.

The end-to-end test trains two tiny smoke runs (the fp32 model and its int8 twin, which decodes that model), times
them by run id through the CLI, and checks what the record says (weights "trained", ``spec.runs``), that ``--deep``
re-derives it, and that the board reads the speed-up as the run's own. The refusals are one line each, naming the
run and the command that fixes it.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import pytest

from bench.store.latency import LatencyRecordError, read_latency_record, validate_latency_record

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
TINY = {"steps": 4, "train_examples": 64}
FAST = ["--n", "6", "--min-items", "6", "--rounds", "3", "--max-rounds", "3", "--warmup-items", "1", "--warmup-s",
        "0", "--min-duration-s", "0", "--device", "cpu"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    """A results folder with a tiny encoder_minilm_l6 run and its int8 twin's (one model, two runs)."""
    if not Path(os.environ.get("BENCH_DATA", DATA)).is_dir():
        pytest.skip("no data dir")
    from bench.runs import RunSpec
    from bench.runs.pipeline import execute

    root = tmp_path_factory.mktemp("trained")
    mp = pytest.MonkeyPatch()
    mp.setenv("BENCH_CACHE", str(root / "cache"))
    try:
        quiet = lambda _m: None  # noqa: E731
        fp32 = execute(RunSpec("encoder_minilm_l6", "quora", budget="smoke", overrides=TINY, limit=6),
                       results_dir=root / "results", say=quiet)
        int8 = execute(RunSpec("encoder_minilm_l6_int8", "quora", budget="smoke", overrides=TINY, limit=6),
                       results_dir=root / "results", say=quiet)
    finally:
        mp.undo()
    return root, fp32, int8


def _cli(args: list[str]) -> object:
    from typer.testing import CliRunner

    from bench.cli import app

    return CliRunner().invoke(app, args)


@pytest.mark.slow
def test_recorded_runs_are_timed_with_their_own_models_and_the_board_reads_the_speedup_as_theirs(
        two_runs: tuple[Path, dict, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.latency.rederive import rederive_latency
    from bench.report.reproduces import run_speed
    from bench.store.latency import load_latency_records

    root, fp32, int8 = two_runs
    monkeypatch.setenv("BENCH_CACHE", str(root / "cache"))
    out = _cli(["latency", "--runs", f"{fp32['run_id']},{int8['run_id']}", "--baseline", "encoder_minilm_l6",
                *FAST, "--record", "--results-dir", str(root / "results")])
    assert out.exit_code == 0, out.output  # type: ignore[attr-defined]
    assert "[load] encoder_minilm_l6_int8: the model of run" in out.output  # type: ignore[attr-defined]
    assert "decoded 6 of the split's 30000 examples" in " ".join(out.output.split())  # type: ignore[attr-defined]
    [rec] = load_latency_records(root / "results")
    assert rec["spec"]["weights"] == "trained" and "--trained--free--" in rec["latency_id"]
    assert rec["spec"]["runs"] == {"encoder_minilm_l6": fp32["run_id"], "encoder_minilm_l6_int8": int8["run_id"]}
    assert rec["spec"]["budget"] == "smoke" and rec["spec"]["length_forced"] is False
    assert rederive_latency(rec).differences == []
    # a board's speed column is the speed-up over the AR baseline: a timing against a NAR baseline (here the int8
    # model against its own float32 one) is not shown there; against an AR baseline it is the run's own
    assert run_speed(int8, [rec]) is None
    rec = copy.deepcopy(rec)
    rec["systems"]["encoder_minilm_l6"]["system"]["family"] = "AR"
    speed = run_speed(int8, [rec])
    assert speed is not None and speed.own and speed.latency_id == rec["latency_id"]
    assert speed.mean == rec["systems"]["encoder_minilm_l6_int8"]["speedup"]["mean"]
    assert "this run's model vs run" in speed.source and "trained models" in speed.source
    base = run_speed(fp32, [rec])
    assert base is not None and base.own and base.baseline and base.mean == 1.0
    # the record is sealed: a run id pointed elsewhere or at a path is refused at load
    bad = copy.deepcopy(rec)
    bad["spec"]["runs"]["encoder_minilm_l6"] = "../../elsewhere"
    with pytest.raises(LatencyRecordError, match="spec.runs"):
        validate_latency_record(bad)


def test_a_run_whose_model_is_gone_names_the_command_that_trains_it_again(
        two_runs: tuple[Path, dict, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, fp32, _ = two_runs
    elsewhere = tmp_path / "cache"
    shutil.copytree(root / "cache", elsewhere, ignore=shutil.ignore_patterns("runs"))
    monkeypatch.setenv("BENCH_CACHE", str(elsewhere))
    out = _cli(["latency", "--runs", fp32["run_id"], *FAST, "--results-dir", str(root / "results")])
    text = " ".join(out.output.split())  # type: ignore[attr-defined]
    assert out.exit_code != 0 and "Traceback" not in text  # type: ignore[attr-defined]
    assert "is not on this machine" in text and "bench run --system encoder_minilm_l6 --task quora" in text
    assert "--set steps=4" in text


def test_runs_that_do_not_belong_in_one_timing_are_refused_in_one_line(two_runs: tuple[Path, dict, dict],
                                                                       tmp_path: Path) -> None:
    root, fp32, _ = two_runs
    results = str(root / "results")
    cases = [
        (["--runs", f"{fp32['run_id']},{fp32['run_id']}"], f"--runs names {fp32['run_id']} twice"),
        (["--runs", fp32["run_id"], "--systems", "encoder_minilm_l6"], "leave --systems and --task out"),
        (["--runs", fp32["run_id"], "--weights", "random"], "--runs with --weights random"),
        (["--runs", "no_such_run"], "no_such_run"),
        (["--runs", fp32["run_id"], "--baseline", "fairseq_transformer"], "the baseline is one of the runs"),
        ([], "give --task and --systems"),
    ]
    for args, line in cases:
        out = _cli(["latency", *args, *FAST, "--results-dir", results])
        text = " ".join(out.output.split())  # type: ignore[attr-defined]
        assert out.exit_code != 0 and line in text and "Traceback" not in text, (args, text)


def test_the_store_checks_spec_runs_against_the_timed_systems() -> None:
    from bench.store.paired import runs_problems

    spec = {"systems": ["a", "b"], "task": "quora", "split": "test", "budget": "cpu", "weights": "trained",
            "runs": {"a": "a--quora--test--cpu--s42--12345678", "b": "b--quora--test--cpu--s42--12345678"}}
    assert list(runs_problems(spec)) == []
    assert list(runs_problems({k: v for k, v in spec.items() if k not in ("runs", "weights")})) == []
    wrong = [
        ({**spec, "runs": {**spec["runs"], "c": "x"}}, "not one of 'spec.systems'"),
        ({**spec, "runs": {**spec["runs"], "a": "../x"}}, "must be a run id"),
        ({**spec, "runs": {**spec["runs"], "a": 5}}, "must be a run id"),
        ({**spec, "runs": {}}, "non-empty object"),
        ({**spec, "runs": ["a"]}, "non-empty object"),
        ({**spec, "weights": "random"}, "must be 'trained'"),
    ]
    for bad, why in wrong:
        assert any(why in p.what for p in runs_problems(bad)), (bad, why)


@pytest.mark.slow
def test_a_timed_model_whose_outputs_are_not_the_runs_is_invalid(two_runs: tuple[Path, dict, dict], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's recorded outputs are the reference every timed output must equal: a model that decodes otherwise
    is not the run's model, and its speed-up must not stand on the run's row."""
    from bench.data import load_split
    from bench.latency.plan import run_latency
    from bench.workflows.trained_latency import plan_runs

    root, fp32, int8 = two_runs
    monkeypatch.setenv("BENCH_CACHE", str(root / "cache"))
    plan, inputs = plan_runs([fp32["run_id"], int8["run_id"]], baseline="encoder_minilm_l6",
                             results_dir=root / "results", say=lambda _m: None, n=4, rounds=3, min_items=4,
                             max_rounds=3, warmup_items=1, warmup_s=0.0, min_duration_s=0.0,
                             aa="encoder_minilm_l6_int8")
    assert inputs.references == {}  # 6 of 30,000 examples: named, not compared
    n = len(load_split("quora", "test").examples)
    forged = {"encoder_minilm_l6_int8": ["not what the run wrote"] * n}
    done = run_latency(plan, device="cpu", say=lambda _m: None, loaders=inputs.loaders, reference_outputs=forged,
                       record_to=tmp_path / "results")
    # the A/A control runs on the int8 system, so its reasons break the design: the record says so and
    # the store, which judges every verdict again at load, agrees (it refused this record once)
    rec = read_latency_record(done.record)
    assert rec["aa"]["system"] == "encoder_minilm_l6_int8" and rec["aa"]["verdict"] == "INVALID"
    systems = done.report.to_json()["systems"]
    entry = systems["encoder_minilm_l6_int8"]
    assert entry["verdict"] == "INVALID" and any("outputs differ from the quality run" in r
                                                 for r in entry["invalid_reasons"])
    assert systems["encoder_minilm_l6"]["verdict"] != "INVALID"
