"""Queue files (#22): one `bench run` per line, planned and launched like a paper table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.launch.queue import QueueFileError, read_queue
from bench.runs import RunSpec

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))


def test_lines_become_specs_with_comments_and_a_leading_bench_run(tmp_path: Path) -> None:
    q = tmp_path / "q.txt"
    q.write_text(
        "# the SQuAD rows\n\n"
        "--system unilm --task squad_qg --budget cpu --limit 2000\n"
        "bench run --system unilm --task squad_qg --budget cpu --limit 2000 --set beam_size=3  # decode-only\n"
        "--system copy_source --task quora --split dev --seed 7\n"
    )
    specs = read_queue(q)
    assert specs == [
        RunSpec("unilm", "squad_qg", budget="cpu", limit=2000),
        RunSpec("unilm", "squad_qg", budget="cpu", limit=2000, overrides={"beam_size": 3}),
        RunSpec("copy_source", "quora", split="dev", seed=7),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--task quora", ":1:"),
        ("--system a --task b --epochs 3", "unknown option(s) ['--epochs', '3']"),
        ("--system a --task b --set lr", ":1:"),
        ("--system 'a --task b", ":1:"),
    ],
)
def test_a_bad_line_names_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    q = tmp_path / "q.txt"
    q.write_text(line + "\n")
    import re

    with pytest.raises(QueueFileError, match=re.escape(message)) as err:
        read_queue(q)
    assert str(q) in str(err.value)


def test_an_empty_or_missing_queue_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(QueueFileError, match="no runs"):
        read_queue(tmp_path / "empty.txt")
    with pytest.raises(QueueFileError, match="no such queue file"):
        read_queue(tmp_path / "missing.txt")


@pytest.mark.skipif(not DATA.is_dir(), reason=f"data dir {DATA} not found")
def test_bench_queue_runs_the_file_and_skips_what_is_done(tmp_path: Path) -> None:
    q = tmp_path / "q.txt"
    q.write_text("--system copy_source --task quora --limit 30\n--system copy_source --task quora --limit 40\n")
    env = {**os.environ, "BENCH_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "bench", "queue", str(q), "--jobs", "1", "--threads-per-job", "1",
           "--results-dir", str(tmp_path / "results")]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert len(list((tmp_path / "results").glob("copy_source--quora--test--smoke--*.json"))) == 2
    again = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert again.returncode == 0 and again.stdout.count("done (skipped)") == 2
