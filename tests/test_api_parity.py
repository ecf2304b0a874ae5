"""#58 API parity: each function of the Python API (docs/commands.md, "Python API") against its command-line twin,
run as a user runs it (a fresh `python -m bench` process): the same numbers, and the function takes no more than
twice the command's wall time (`bench.compare` once took 76-84 s on every call where the command answered from its
cache in 0.7 s). The command's time includes its interpreter's start-up, so the bound is one-sided: the function may
be faster, never much slower."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import bench

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: two committed runs over the same 2,000 Quora examples (mask-predict, 6 and 3 iterations)
A = "mist_minilm_l6--quora--test--cpu--s42--a5656ea2"
B = "mist_minilm_l6--quora--test--cpu--s42--f20bb2a6"
SLACK_S = 0.5  # timer noise on a shared machine, on top of the 2x

pytestmark = pytest.mark.skipif(not DATA.is_dir() or not (ROOT / "results" / f"{A}.json").is_file(),
                                reason="needs ../shared/data and the committed runs")


def cli(*args: str, stderr: list[str] | None = None) -> tuple[str, float]:
    """`bench ARGS` in a fresh process (this process's environment: the test's cache and workspace), its stdout
    and wall time; its stderr is appended to ``stderr`` when given."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, env={**os.environ, "COLUMNS": "300"})
    took = time.perf_counter() - started
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    if stderr is not None:
        stderr.append(out.stderr)
    return out.stdout, took


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def within_twice(api_s: float, cli_s: float) -> bool:
    return api_s <= 2 * cli_s + SLACK_S


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_compare_is_the_commands_json_from_the_same_cache(fresh_cache: Path) -> None:
    said: list[str] = []
    cli("compare", A, B, "--recipe", "sacrebleu", "--json", stderr=said)  # computed once, cached
    text, cli_s = cli("compare", A, B, "--recipe", "sacrebleu", "--json", stderr=said)
    assert "computing sacrebleu over 2,000 items" in said[0] and "not in the cache yet" in said[0]  # why it's slow
    assert said[1] == ""  # a hit says nothing
    api, api_s = timed(lambda: bench.compare(A, B, recipe="sacrebleu"))
    assert json.loads(json.dumps(api)) == json.loads(text)
    bleu = api["metrics"]["bleu4"]
    assert len(bleu["ci95_a_minus_b"]) == 2 and bleu["delta"] == pytest.approx(bleu["a"] - bleu["b"], abs=1e-6)
    assert within_twice(api_s, cli_s), f"bench.compare {api_s:.2f} s, bench compare {cli_s:.2f} s"
    assert bench.compare(A.rsplit("--", 1)[1], B.rsplit("--", 1)[1], recipe="sacrebleu") == api  # the short ids


def test_load_results_is_what_export_writes(fresh_cache: Path) -> None:
    import pandas as pd

    out = fresh_cache / "runs.csv"
    _, cli_s = cli("export", "--format", "csv", "--out", str(out))
    df, api_s = timed(bench.load_results)
    written = pd.read_csv(out)
    assert list(written.columns) == list(df.columns) and len(written) == len(df)
    key = ["run_id", "recipe"]
    mine, theirs = df.set_index(key).sort_index(), written.set_index(key).sort_index()
    assert list(mine.index) == list(theirs.index)
    for metric in ("bleu4", "rouge2", "bleu4_ci_low"):
        for x, y in zip(mine[metric], theirs[metric], strict=True):
            assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, abs=1e-9)
    assert set(df.results_dir) >= {"results"}
    assert within_twice(api_s, cli_s), f"bench.load_results {api_s:.2f} s, bench export {cli_s:.2f} s"


def test_load_split_is_the_split_data_show_names(fresh_cache: Path) -> None:
    cli("data", "build", "--task", "quora")  # both read the same cached split
    text, cli_s = cli("data", "show", "--task", "quora", "--split", "test", "-n", "0")
    split, api_s = timed(lambda: bench.load_split("quora", "test"))
    assert f"{len(split):,} examples, sha256 {split.sha256[:16]}" in text
    assert within_twice(api_s, cli_s), f"bench.load_split {api_s:.2f} s, bench data show {cli_s:.2f} s"


def test_run_records_what_the_command_records(fresh_cache: Path) -> None:
    args = ("--system", "copy_source", "--task", "quora", "--limit", "30")
    _, cli_s = cli("run", *args, "--results-dir", str(fresh_cache / "by-cli"))
    rec, api_s = timed(lambda: bench.run("copy_source", "quora", limit=30, results_dir=fresh_cache / "by-api"))
    (path,) = (fresh_cache / "by-cli").glob("copy_source--quora--*.json")
    mine = json.loads(path.read_text())
    assert rec["run_id"] == mine["run_id"] and rec["outputs"]["sha256"] == mine["outputs"]["sha256"]
    assert {r: s["metrics"] for r, s in rec["scores"].items()} == {r: s["metrics"] for r, s in mine["scores"].items()}
    assert within_twice(api_s, cli_s), f"bench.run {api_s:.2f} s, bench run {cli_s:.2f} s"
