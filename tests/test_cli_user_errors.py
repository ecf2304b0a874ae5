"""A user's mistake gets one `error:` line and exit code 2 from `bench`, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

BAD = [
    (["compare", "a.txt", "b.txt", "--task", "quoar"], "Did you mean 'quora'"),
    (["reproduce", "mist:99"], "has no table '99'"),
    (["score", "--task", "xsum", "--split", "test", "--hyp", "README.md"], "--split test-refs"),
    (["run", "--system", "nope", "--task", "quora"], "nope"),
    (["run", "--system", "copy_source", "--task", "quora", "--set", "lr=abc"], "reference baseline has no settings"),
    (["run", "--system", "encoder_minilm_l6", "--task", "quora", "--set", "lr=abc"], "expected float | None, got str"),
    (["run", "--system", "unilm", "--task", "squad_qg", "--set", "steps=1.5"], "expected int, got float"),
    (["run", "--system", "fairseq_cmlm", "--task", "quora", "--set", "family=AR"], "Unknown override(s) ['family']"),
    (["table", "--paper", "nope"], "Unknown paper 'nope'"),
    (["table", "--table", "3"], "--table needs --paper"),
    (["order", "mist:nine"], "has no table"),
    (["show", "no-such-run"], "no record"),
    (["export", "--format", "xls"], "choose csv, parquet or jsonl"),
    (["calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "x", "--steps", "1"], "comma-separated"),
    # #39: a GPU this machine lacks, or a name that is no device, is one line before any work
    (["run", "--system", "copy_source", "--task", "quora", "--device", "cuda"], "torch sees none"),
    (["run", "--system", "copy_source", "--task", "quora", "--device", "gpu0"], "is not a device"),
    (["latency", "--task", "quora", "--systems", "copy_source", "--device", "cuda:1"], "torch sees none"),
    (["reproduce", "mist:1", "--launcher", "local", "--device", "cuda"], "torch sees none"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a[:2]) + f"#{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    if args[0] in ("run", "reproduce"):  # a case that got past its check would write here, not into results/
        (tmp_path / "results").mkdir()
        args = [*args, "--results-dir", str(tmp_path / "results")]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        # a narrow window: a piped error is one line however long the paths in it (CI's checkout is deeper)
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], out[-3000:]


def test_a_long_path_in_an_error_stays_on_one_line(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*[c * 60 for c in "abcde"])  # 300 characters of folders that are not there
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "score", "--task", "xsum", "--split", "test", "--hyp", "README.md"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BENCH_XSUM": str(deep)},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and str(deep) in lines[0], proc.stderr[-3000:]


def test_run_workdirs_follow_bench_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.runs import REPO_ROOT, RunSpec, build_system, training_workdir

    spec = RunSpec("copy_source", "quora")
    system = build_system(spec)
    monkeypatch.delenv("BENCH_CACHE", raising=False)
    assert training_workdir(spec, system).parent == REPO_ROOT / ".cache" / "runs"
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    assert training_workdir(spec, system).parent == tmp_path / "runs"
