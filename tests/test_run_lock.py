"""#40: one process at a time per run id and per training workdir; a second one waits (saying for whom)
or refuses with --no-wait; a lock left by a killed process is taken over; nothing is left behind.

Real processes throughout (flock is per open file, so threads in one process contend too), and no
timing assertions beyond generous timeouts: a test that needs the lock held holds it itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from bench.runs.lock import LockBusy, held, run_lock_path, workdir_lock_path

REPO = Path(__file__).resolve().parents[1]


def quiet(_msg: str) -> None:
    pass


def test_a_held_lock_refuses_without_wait_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "locks" / "a.lock"
    with held(path, "first") as me:
        holder = json.loads(path.read_text())
        assert holder["pid"] == os.getpid() and holder["what"] == "first" and holder["since"] == me.since
        with pytest.raises(LockBusy, match=rf"held by pid {os.getpid()} on .* since .*\(first\).*--no-wait"):
            with held(path, "second", wait=False, say=quiet):
                pass
    assert not (tmp_path / "locks").exists()  # the file and the folder made for it are gone


def test_a_waiter_says_once_for_whom_and_gets_the_lock_when_it_is_released(tmp_path: Path) -> None:
    path = tmp_path / "w.lock"
    said: list[str] = []
    order: list[str] = []
    release = threading.Event()

    def first() -> None:
        with held(path, "first holder", say=quiet):
            order.append("first in")
            release.wait(60)
            order.append("first out")

    t = threading.Thread(target=first)
    t.start()
    while not order:
        time.sleep(0.01)
    waiter = threading.Thread(target=lambda: _take(path, said, order))
    waiter.start()
    deadline = time.monotonic() + 60
    while not said and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(said) == 1 and said[0].startswith("[lock] waiting for pid") and "(first holder)" in said[0]
    release.set()
    t.join(60)
    waiter.join(60)
    assert order == ["first in", "first out", "second in"] and len(said) == 1
    assert not path.exists()


def _take(path: Path, said: list[str], order: list[str]) -> None:
    with held(path, "second", say=said.append, poll_s=0.05):
        order.append("second in")


def test_a_lock_whose_holder_was_killed_is_taken_over_with_a_message(tmp_path: Path) -> None:
    path = tmp_path / "stale.lock"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from bench.runs.lock import held
        with held(Path({str(path)!r}), "doomed run"):
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    dead = json.loads(path.read_text())["pid"]
    said: list[str] = []
    with held(path, "next", wait=False, say=said.append):
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert len(said) == 1 and "taking over the stale lock" in said[0] and f"pid {dead}" in said[0]
    assert "(doomed run) has ended" in said[0]
    assert not path.exists()


def test_locks_are_exclusive_between_processes(tmp_path: Path) -> None:
    """Four processes add to one counter file under the lock, read-modify-write with a pause in between:
    without mutual exclusion increments are lost."""
    counter, lock = tmp_path / "n.txt", tmp_path / "n.lock"
    counter.write_text("0")
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from bench.runs.lock import held
        for _ in range(5):
            with held(Path({str(lock)!r}), "adder", say=lambda m: None, poll_s=0.01):
                n = int(Path({str(counter)!r}).read_text())
                time.sleep(0.02)
                Path({str(counter)!r}).write_text(str(n + 1))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    assert counter.read_text() == "20" and not lock.exists()


def test_an_unwritable_lock_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    from bench.runs.lock import LockError

    with pytest.raises(LockError, match="a file of that name is in the way"):
        with held(tmp_path / "afile" / ".locks" / "r.lock", "x"):
            pass


def test_the_run_lock_folder_goes_with_the_last_lock_whoever_made_it(tmp_path: Path) -> None:
    first, second = held(run_lock_path(tmp_path, "a"), "a"), held(run_lock_path(tmp_path, "b"), "b")
    first.__enter__()  # makes results/.locks
    second.__enter__()
    first.__exit__(None, None, None)  # cannot remove it: b's lock is in it
    assert sorted(p.name for p in (tmp_path / ".locks").iterdir()) == ["b.lock"]
    second.__exit__(None, None, None)
    assert list(tmp_path.iterdir()) == []


def test_lock_paths_sit_beside_the_record_and_beside_the_workdir(tmp_path: Path) -> None:
    assert run_lock_path(tmp_path, "rid") == tmp_path / ".locks" / "rid.lock"
    assert workdir_lock_path(tmp_path / "runs" / "m--cfg1") == tmp_path / "runs" / "m--cfg1.lock"


# --- bench run, end to end: the example plugin's lead_words on toy_pairs trains and scores in seconds ------

PLUGIN = REPO / "examples" / "bench_example_plugin" / "bench_include.py"
SPEC_ARGS = ["--system", "lead_words", "--task", "toy_pairs", "--budget", "smoke"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "BENCH_CACHE": str(tmp_path / "cache"), "BENCH_INCLUDE": str(PLUGIN), "COLUMNS": "400"}


def _spec_ids(env: dict[str, str]) -> tuple[str, Path]:
    """The run id and training workdir of SPEC_ARGS under ``env``'s cache (asked of a child: the plugin
    registers its names in the process that includes it)."""
    script = textwrap.dedent("""
        import json
        from bench.env.plugins import include_paths_from_env, include
        for p in include_paths_from_env():
            include(p)
        from bench.runs import RunSpec, build_system, training_workdir
        spec = RunSpec("lead_words", "toy_pairs", "test", budget="smoke")
        print(json.dumps([spec.run_id, str(training_workdir(spec, build_system(spec)))]))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    run_id, workdir = json.loads(out.splitlines()[-1])
    return run_id, Path(workdir)


def _bench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)


def test_bench_run_no_wait_refuses_while_the_same_run_is_running(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "results"
    run_id, _ = _spec_ids(env)
    with held(run_lock_path(results, run_id), f"bench run {run_id}"):
        proc = _bench(env, "run", *SPEC_ARGS, "--results-dir", str(results), "--no-wait")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, out
    assert "Traceback" not in out and f"held by pid {os.getpid()}" in out and "since" in out
    assert f"(bench run {run_id})" in out
    assert not results.exists()  # the lock folder (and the results folder made for it) are gone again


def test_bench_run_no_wait_refuses_while_its_model_is_being_trained(tmp_path: Path, env: dict[str, str]) -> None:
    """Two run ids can share one model: the workdir has its own lock, held while fitting."""
    results = tmp_path / "results"
    _, workdir = _spec_ids(env)
    with held(workdir_lock_path(workdir), "training for bench run another-run-id"):
        proc = _bench(env, "run", *SPEC_ARGS, "--results-dir", str(results), "--no-wait")
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1 and "Traceback" not in out, out
    assert f"{workdir.name}.lock is held by pid {os.getpid()}" in out and "another-run-id" in out
    assert not results.exists()


def test_a_second_bench_run_waits_for_the_first_then_finds_it_complete(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "results"
    run_id, _ = _spec_ids(env)
    lock = run_lock_path(results, run_id)
    with held(lock, f"bench run {run_id}"):
        waiter = subprocess.Popen([sys.executable, "-m", "bench", "run", *SPEC_ARGS, "--results-dir", str(results)],
                                  cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert waiter.stdout is not None
        seen = ""
        deadline = time.monotonic() + 300
        while "[lock] waiting for" not in seen and time.monotonic() < deadline and waiter.poll() is None:
            seen += waiter.stdout.readline()
        assert "[lock] waiting for" in seen and f"pid {os.getpid()}" in seen, seen
        first = _bench(env, "run", *SPEC_ARGS, "--results-dir", str(results), "--no-wait")  # held: refused
        assert first.returncode == 1
    rest, _ = waiter.communicate(timeout=600)
    out = " ".join((seen + rest).split())
    assert waiter.returncode == 0, out
    assert out.count("[lock] waiting for") == 1 and "[decode]" in out
    assert (results / f"{run_id}.json").is_file() and not (results / ".locks").exists()
    again = _bench(env, "run", *SPEC_ARGS, "--results-dir", str(results))
    assert again.returncode == 0 and "[skip]" in again.stdout


def test_two_identical_runs_started_together_decode_once(tmp_path: Path, env: dict[str, str]) -> None:
    """Finding 4 as reported: both start at once; one does the work, the other waits or finds it done."""
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "bench", "run", *SPEC_ARGS, "--results-dir", str(results)]
    procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert sum("[decode]" in o for o in outs) == 1 and sum("[skip]" in o for o in outs) == 1, outs
    assert len(list(results.glob("*.json"))) == 1 and not (results / ".locks").exists()
