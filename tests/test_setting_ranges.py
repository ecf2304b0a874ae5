"""Every numeric setting is range-checked before anything runs (issue 40, findings 2 and 3).

A range is declared once, beside its preset field (``systems.presets.ranged``); ``--set`` overrides are
checked against it where their names and types are, and ``--limit``/``--seed`` where a RunSpec is made.
A wrong number is one ``error:`` line naming the setting, the value and the range, exit code 2, and
nothing written: no record, no outputs file, no workdir.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from systems.presets import BudgetSize, Range, SettingRangeError, field_ranges, out_of_range, ranged, replace_fields

REPO = Path(__file__).resolve().parents[1]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")} if root.exists() else set()


def _bench(args: list[str], tmp_path: Path) -> tuple[int, str]:
    """``bench ARGS`` in a child with its caches under ``tmp_path/cache`` and records under ``tmp_path/results``."""
    env = {"COLUMNS": "400", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BENCH_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def _refused(args: list[str], tmp_path: Path, *needles: str) -> str:
    """Run ``args``; assert one error line holding every needle, exit 2, no traceback, and nothing written."""
    (tmp_path / "cache").mkdir(exist_ok=True)
    before, repo_results = _files(tmp_path), _files(REPO / "results")
    code, out = _bench(args, tmp_path)
    assert "Traceback" not in out, out[-3000:]
    assert code == 2, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out[-3000:]
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    assert _files(tmp_path / "cache") == set(), "a refused setting must not create a workdir or cache file"
    assert _files(tmp_path / "results") == set(), "a refused setting must not write a record or outputs"
    assert _files(tmp_path) == before, "nor a log, a lock or a split cache"
    assert _files(REPO / "results") == repo_results
    return errors[0]


# -- finding 2: --limit -1 decoded 29,999 examples and recorded "first -1"; --limit 0 left an empty outputs file


@pytest.mark.parametrize("limit", ["-1", "0"])
def test_run_refuses_a_limit_below_one_before_anything_is_written(limit: str, tmp_path: Path) -> None:
    _refused(["run", "--system", "copy_source", "--task", "quora", "--limit", limit,
              "--results-dir", str(tmp_path / "results")], tmp_path, f"--limit {limit}", "≥ 1", f"(got {limit})")


def test_queue_line_with_limit_zero_is_refused_before_any_run(tmp_path: Path) -> None:
    queue = tmp_path / "q.txt"
    queue.write_text("--system copy_source --task quora --limit 0\n")
    try:
        _refused(["queue", str(queue), "--results-dir", str(tmp_path / "results")], tmp_path, "--limit 0", "≥ 1")
    finally:
        queue.unlink()


def test_runspec_refuses_limits_and_seeds_out_of_range() -> None:
    from bench.api.errors import UserError
    from bench.runs import RunSpec

    for kwargs in ({"limit": -1}, {"limit": 0}, {"seed": -1}, {"seed": 2**32}):
        with pytest.raises(UserError, match="must be"):
            RunSpec("copy_source", "quora", **kwargs)  # type: ignore[arg-type]
    assert RunSpec("copy_source", "quora", limit=1).limit == 1


# -- finding 3: --set steps=-5 trained and recorded a BLEU-0 run; --set batch_size=0 failed late, misleadingly,
# -- after creating an empty workdir


def test_run_refuses_negative_steps_naming_field_value_and_range(tmp_path: Path) -> None:
    line = _refused(["run", "--system", "unilm", "--task", "quora", "--budget", "smoke", "--set", "steps=-5",
                     "--results-dir", str(tmp_path / "results")], tmp_path, "steps", "-5", "≥ 1")
    assert "--set steps=-5: steps must be ≥ 1" in line


def test_run_refuses_batch_size_zero_with_the_range_not_the_processes_message(tmp_path: Path) -> None:
    line = _refused(["run", "--system", "unilm", "--task", "quora", "--budget", "smoke", "--set", "batch_size=0",
                     "--results-dir", str(tmp_path / "results")], tmp_path, "batch_size must be ≥ 1", "(got 0)")
    assert "multiple of processes" not in line


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["latency", "--task", "quora", "--systems", "copy_source", "--n", "0"], ("--n 0", "≥ 1")),
        (["latency", "--task", "quora", "--systems", "copy_source", "--rounds", "0"], ("--rounds 0", "≥ 1")),
        (["latency", "--task", "quora", "--systems", "copy_source", "--min-items", "-3"], ("--min-items -3", "≥ 1")),
        (["latency", "--task", "quora", "--systems", "encoder_minilm_l6", "--set", "iterations=0"],
         ("iterations must be ≥ 1", "(got 0)")),
        (["calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "1e-4", "--steps", "10", "--dev",
          "0"], ("--dev 0", "≥ 1")),
        (["calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "1e-4", "--steps", "10",
          "--threads", "0"], ("--threads 0", "≥ 1")),
        (["run", "--system", "copy_source", "--task", "quora", "--seed", "-1"], ("--seed -1", "[0, 4294967295]")),
        (["run", "--system", "encoder_minilm_l6", "--task", "quora", "--set", "lr=0"], ("lr must be > 0", "(got 0)")),
        (["run", "--system", "fairseq_cmlm", "--task", "quora", "--set", "dropout=1.0"],
         ("dropout must be in [0, 1)",)),
    ],
    ids=["latency-n", "latency-rounds", "latency-min-items", "latency-set", "calibrate-dev", "calibrate-threads",
         "run-seed", "run-lr", "run-dropout"],
)
def test_other_numeric_options_are_refused_up_front(args: list[str], needles: tuple[str, ...],
                                                   tmp_path: Path) -> None:
    _refused([*args, "--results-dir", str(tmp_path / "results")], tmp_path, *needles)


def test_calibrate_checks_every_grid_point_before_the_first_trains(tmp_path: Path) -> None:
    """``--lr 1e-4,-1``: the second point's lr is refused before the first point's run starts."""
    _refused(["calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "1e-4,-1", "--steps", "10",
              "--results-dir", str(tmp_path / "results")], tmp_path, "lr must be > 0", "-1")


# -- the declarations: every numeric field of every registered family has a range; every preset is inside it


def _is_number(tp: object) -> bool:
    args = typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)
    kinds = {a for a in args if a is not type(None)}
    return bool(kinds) and kinds <= {int, float}


def _built(name: str, budget: str) -> object | None:
    """``name`` at ``budget`` (a generic preset given a model), or None where the budget is refused."""
    from systems import build
    from systems.hf_seq2seq.presets import PresetUnavailable

    try:
        return build(name, budget)
    except PresetUnavailable:
        try:
            return build(name, budget, {"model": "tiny-bart"})
        except PresetUnavailable:
            return None


def _family_systems() -> list[str]:
    from systems import SYSTEMS

    return [n for n in SYSTEMS.names() if SYSTEMS.meta(n).get("family") != "reference"]


@pytest.mark.parametrize("name", _family_systems())
def test_every_numeric_config_field_declares_a_range(name: str) -> None:
    """A numeric field added without ``ranged(...)`` fails here: every number a user can --set is checked."""
    system = _built(name, "smoke")
    assert system is not None
    cfg = system.cfg  # type: ignore[attr-defined]
    assert dataclasses.is_dataclass(cfg), f"{name}: its settings are not a preset dataclass"
    hints = typing.get_type_hints(type(cfg))
    numeric = {f.name for f in dataclasses.fields(cfg) if _is_number(hints[f.name])}
    assert numeric, name
    assert numeric - set(field_ranges(cfg)) == set(), f"{name}: numeric fields without a declared range"


@pytest.mark.parametrize("name", _family_systems())
def test_every_preset_is_inside_its_declared_ranges(name: str) -> None:
    from bench.api.system import BUDGETS

    for budget in BUDGETS:
        system = _built(name, budget)
        if system is None:
            continue
        cfg = system.cfg  # type: ignore[attr-defined]
        assert out_of_range(cfg) == [], (name, budget)
        if hasattr(cfg, "size_for"):  # the NAR family sizes its runs per task
            from systems.nar.presets import CPU_SIZES, PAPER_STEPS

            for task in {*CPU_SIZES, *PAPER_STEPS}:
                assert out_of_range(cfg.size_for(task)) == [], (name, budget, task)


def test_budget_sizes_declare_ranges_too() -> None:
    assert set(field_ranges(BudgetSize)) == {"steps", "batch_size", "max_source_len", "max_target_len",
                                             "train_examples", "lr"}
    assert out_of_range(BudgetSize(steps=0, batch_size=1, max_source_len=1, max_target_len=1,
                                   train_examples=None)) == ["steps=0 (must be ≥ 1)"]


# -- the mechanism


def test_range_text_and_membership() -> None:
    assert (str(Range(1)), str(Range(0, low_open=True)), str(Range(0, 1, high_open=True)), str(Range())) == (
        "≥ 1", "> 0", "in [0, 1)", "a finite number")
    assert 1 in Range(1) and 0 not in Range(1) and 0.5 in Range(0, 1, high_open=True)
    assert 1 not in Range(0, 1, high_open=True) and 0 not in Range(0, low_open=True)
    assert math.nan not in Range() and math.inf not in Range(0) and True not in Range(0)


@dataclasses.dataclass(frozen=True)
class _Config:
    steps: int = ranged(10, ge=1)
    lr: float | None = ranged(None, gt=0)
    name: str = "x"


def test_replace_fields_checks_the_range_of_each_override_after_its_type() -> None:
    assert replace_fields(_Config(), {"steps": 3, "lr": None}, "toy").steps == 3
    with pytest.raises(SettingRangeError, match=r"^--set steps=-5: steps must be ≥ 1 for toy \(got -5\)$"):
        replace_fields(_Config(), {"steps": -5}, "toy")
    with pytest.raises(SettingRangeError, match="lr must be > 0"):
        replace_fields(_Config(), {"lr": float("nan")}, "toy")
    with pytest.raises(ValueError, match="expected int"):
        replace_fields(_Config(), {"steps": "many"}, "toy")
