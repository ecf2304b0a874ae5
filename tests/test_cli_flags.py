"""#40 findings 8, 10, 11 and 13, from the side of what now works: a record's path for `bench show`, a dry run
that refuses exactly as its launch, submissions that cannot pose as a system, `-n` on `data show`.
(The refusals themselves are cases of tests/test_bad_input_probe.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RID = "copy_source--quora--test--cpu--s42--af654a53"


def bench(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "300"})


@pytest.mark.skipif(not DATA.is_dir() or not (REPO / "results" / f"{RID}.json").is_file(),
                    reason="needs ../shared/data and the recorded run")
def test_show_takes_a_record_path_as_well_as_a_run_id() -> None:
    by_id = bench("show", RID, "-n", "2")
    by_path = bench("show", f"results/{RID}.json", "-n", "2")
    assert by_id.returncode == 0 and by_path.returncode == 0, by_path.stderr
    assert by_path.stdout == by_id.stdout and f"record: results/{RID}.json" in by_path.stdout
    missing = bench("show", f"results/{RID[:-2]}xx.json")
    assert missing.returncode == 2 and "Similar:" in missing.stderr and RID in missing.stderr


@pytest.mark.parametrize("command", [
    ("reproduce", "mist:6", "--budget", "smoke", "--launcher", "local"),
    ("queue", "QUEUE", "--launcher", "local"),
])
def test_a_dry_run_refuses_exactly_as_its_launch(command: tuple[str, ...], tmp_path: Path) -> None:
    """Finding 11: more threads than any machine has cores; the launch refuses before it starts a run."""
    queue = tmp_path / "queue.txt"
    queue.write_text("--system copy_source --task quora --budget smoke --limit 5\n")
    args = [str(queue) if a == "QUEUE" else a for a in command]
    args += ["--jobs", "64", "--threads-per-job", "64", "--results-dir", str(tmp_path / "results")]
    dry, real = bench(*args, "--dry-run"), bench(*args)
    assert dry.returncode == real.returncode == 2, dry.stdout + dry.stderr
    assert dry.stderr == real.stderr
    assert "--jobs 64 x --threads-per-job 64 = 4096 threads" in " ".join(dry.stderr.split())
    assert not (tmp_path / "results").exists()


def test_a_dry_run_says_how_the_launch_will_spread_the_runs(tmp_path: Path) -> None:
    out = bench("reproduce", "mist:6", "--budget", "smoke", "--launcher", "local", "--jobs", "1",
                "--threads-per-job", "1", "--dry-run", "--results-dir", str(tmp_path / "results"))
    assert out.returncode == 0 and "local launcher: 1 job(s) at a time, 1 thread(s) each" in out.stdout


def test_a_submission_cannot_take_a_registered_systems_name() -> None:
    from bench.workflows.submit import SubmissionError, check_name

    for taken in ("copy_source", "COPY_SOURCE", "mist_unilm"):
        with pytest.raises(SubmissionError, match="is the registered system .*bench ls systems.*_submitted"):
            check_name(taken)
    check_name("nqg_du2017")  # the shipped submissions' names stay free


@pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data")
def test_data_show_takes_n_as_the_readme_writes_it() -> None:
    out = bench("data", "show", "--task", "quora", "--split", "test", "-n", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("'target'") == 2
