"""Whole tables at once: the run plan, the local process pool, and SLURM through submitit.

The launchers run real `bench run` children. Most tests use a tiny plugin system (``slow_steps``:
``steps`` x 0.2 s of "training" that saves its step after each one, so a killed run resumes) on
the example plugin's ``toy_pairs`` task, passed to the children as ``$BENCH_INCLUDE``; one test
runs real systems (copy_source, a smoke MIST and a decode-only variant of it) on Quora.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.launch.plan import Job, plan_specs, plan_table
from bench.runs import RunSpec, completed_record

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))
EXAMPLE_INCLUDE = REPO / "examples" / "bench_example_plugin" / "bench_include.py"
two_cores = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="--jobs 2 --threads-per-job 1 needs 2 cores")

SLOW_STEPS = '''
"""slow_steps: fit sleeps `steps` x 0.2 s, saving its step after each (resumable); decode = first 3 words."""
import json, os, time
from systems import SYSTEMS
from bench.api.system import System, SystemInfo


class SlowSteps(System):
    decode_only_overrides = ("suffix",)

    def __init__(self, budget, overrides):
        steps = int(overrides.get("steps", 10))
        if steps < 0:
            raise ValueError(f"slow_steps: steps must be >= 0, got {steps}")
        self.budget, self.steps, self.suffix, self.resumed_from = budget, steps, overrides.get("suffix", ""), None

    def describe(self):
        config = {"steps": self.steps, "suffix": self.suffix}
        if self.resumed_from is not None:
            config["resumed_from"] = self.resumed_from
        return SystemInfo(name="slow_steps", family="reference", iterations=1, citation="test", budget=self.budget,
                          config=config)

    def fit(self, task, workdir):
        state = workdir / "state.json"
        step = json.loads(state.read_text())["step"] if state.is_file() else 0
        self.resumed_from = step
        while step < self.steps:
            time.sleep(0.2)
            step += 1
            tmp = workdir / "state.json.tmp"
            tmp.write_text(json.dumps({"step": step}))
            os.replace(tmp, state)

    def decode(self, examples):
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example, forced_length=None):
        self.refuse_forced_length(forced_length)
        return " ".join(example.source.split()[:3]) + self.suffix


def make(budget, overrides):
    return SlowSteps(budget, overrides)


SYSTEMS.register("slow_steps", make, family="reference")
'''


def quiet(_: str) -> None:
    pass


def append(path: Path, text: str) -> None:
    with path.open("a") as fh:
        fh.write(text)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A private cache, results and logs, and the two plugins in $BENCH_INCLUDE for the children."""
    plugin = tmp_path / "plugin" / "slow_steps.py"
    plugin.parent.mkdir()
    plugin.write_text(SLOW_STEPS)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BENCH_INCLUDE", os.pathsep.join([str(EXAMPLE_INCLUDE), str(plugin)]))
    return {"results": tmp_path / "results", "logs": tmp_path / "logs", "plugin": plugin}


def toy_job(label: str, after: Job | None = None, **overrides: object) -> Job:
    """A job built by hand: the test process never registers the plugin (registries are process-wide)."""
    spec = RunSpec("slow_steps", "toy_pairs", budget="smoke", overrides=overrides)
    return Job(spec=spec, label=label, depends_on=(after.run_id,) if after else ())


def fake_record(spec: RunSpec, results: Path, total_s: float) -> None:
    from bench.store.records import RunRecord

    RunRecord(run_id=spec.run_id, created="2024-01-01T00:00:00+00:00", spec=spec.to_json(), harness={},
              environment={}, system={}, data={}, outputs={"path": f"outputs/{spec.run_id}.txt", "sha256": "0" * 64},
              model={}, output_stats={}, training_curve=None,
              scores={}, latency=None, timings={"total_s": total_s}).write(results)


# --- the plan --------------------------------------------------------------------------------------
def test_plan_of_mist6_runs_decode_only_rows_after_the_plain_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    plan = plan_table("mist", "6", "smoke", results)
    assert len(plan) == 10 and all(job.state == "pending" and job.estimate_s is None for job in plan)
    plain = {job.spec.task: job for job in plan if not job.spec.overrides}
    assert sorted(plain) == ["quora", "squad_qg"]
    assert all(job.depends_on == () for job in plain.values())
    decode_only = [job for job in plan if job.spec.overrides]
    assert len(decode_only) == 8
    for job in decode_only:
        assert set(job.spec.overrides) == {"decode", "iterations"}
        assert job.depends_on == (plain[job.spec.task].run_id,)  # the edge: the same task's plain run
    order = [job.run_id for job in plan]
    assert all(order.index(job.depends_on[0]) < order.index(job.run_id) for job in decode_only)

    for job in plain.values():
        fake_record(job.spec, results, total_s=61.5)
    again = {job.run_id: job for job in plan_table("mist", "6", "smoke", results)}
    assert {rid for rid, job in again.items() if job.state == "done"} == {j.run_id for j in plain.values()}
    assert all(job.estimate_s == 61.5 for job in again.values())  # same system, task and budget recorded


def test_specs_that_train_nothing_wait_for_nothing() -> None:
    a = RunSpec("copy_source", "quora", limit=20)
    b = RunSpec("copy_source", "quora", limit=30)
    plan = plan_specs([a, b, a])
    assert [job.run_id for job in plan] == [a.run_id, b.run_id] and all(not job.depends_on for job in plan)


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "bench", "reproduce", "mist:6", "--budget", "smoke",
                          "--launcher", "local", "--dry-run", "--results-dir", str(tmp_path / "results")],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "250"}, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("pending") == 10 and "decode=mist_iter iterations=3" in out.stdout
    assert re.search(r"mist_3/squad .* #1 +pending", out.stdout), out.stdout  # after #1, on its line
    assert not (tmp_path / "results").exists()


def test_command_line_reads_back_as_the_same_spec() -> None:
    from bench.launch.command import bench_argv
    from bench.runs import parse_overrides

    spec = RunSpec("mist_minilm_l6", "quora", budget="smoke", limit=20,
                   overrides={"decode": "mist_iter", "iterations": 3, "tag": "3", "lr": 1e-4})
    argv = bench_argv(spec, results_dir=Path("r"), threads=1)
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    opts = {argv[i]: argv[i + 1] for i in range(4, len(argv) - 1, 1) if argv[i].startswith("--") and argv[i] != "--set"}
    back = RunSpec(opts["--system"], opts["--task"], opts["--split"], opts["--budget"], parse_overrides(sets),
                   int(opts["--seed"]), int(opts["--limit"]))
    assert back.run_id == spec.run_id and opts["--threads"] == "1"


def test_include_paths_travel_to_children(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import bench.env.plugins
    from bench.launch.command import child_env

    monkeypatch.delenv("BENCH_INCLUDE", raising=False)
    assert "BENCH_INCLUDE" not in child_env()
    monkeypatch.setattr(bench.env.plugins, "_INCLUDED", [tmp_path / "a.py"])
    monkeypatch.setenv("BENCH_INCLUDE", str(tmp_path / "b.py"))
    env = child_env(threads=2)
    assert env["BENCH_INCLUDE"].split(os.pathsep) == [str(tmp_path / "a.py"), str(tmp_path / "b.py")]
    assert env["OMP_NUM_THREADS"] == "2"


# --- the local launcher ----------------------------------------------------------------------------
def test_local_refuses_more_threads_than_cores(tmp_path: Path) -> None:
    from bench.launch.local import LaunchError, check_threads, resolve_pool

    with pytest.raises(LaunchError, match=r"--jobs 2 x --threads-per-job 2 = 4 threads, but this machine has 2"):
        check_threads(2, 2, cpus=2)
    assert resolve_pool(None, None, cpus=8) == (8, 1) and resolve_pool(2, None, cpus=8) == (2, 4)
    n = (os.cpu_count() or 1) + 1
    out = subprocess.run([sys.executable, "-m", "bench", "reproduce", "mist:6", "--budget", "smoke", "--launcher",
                          "local", "--jobs", str(n), "--threads-per-job", "1", "--results-dir", str(tmp_path)],
                         capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, "COLUMNS": "300"})
    assert out.returncode == 2 and "error:" in out.stderr and "CPU cores" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_local_recovers_a_killed_job_and_skips_it_once_done(toy: dict[str, Path]) -> None:
    """Kill the child mid-fit: the job is failed (signal 9, log path); a relaunch resumes its training."""
    from bench.launch.joblog import log_path
    from bench.launch.local import run_local
    from bench.launch.status import job_status

    job = toy_job("slow", steps=30)
    log = log_path(toy["logs"], job.run_id)

    def kill_mid_fit(outcome: object, pid: int) -> None:
        def killer() -> None:
            deadline = time.time() + 60
            while time.time() < deadline and "[fit]" not in (log.read_text() if log.exists() else ""):
                time.sleep(0.1)
            time.sleep(1.5)  # a few steps saved
            os.kill(pid, signal.SIGKILL)
        threading.Thread(target=killer, daemon=True).start()

    (out,) = run_local([job], results_dir=toy["results"], logs=toy["logs"], n_jobs=1, threads=1, poll_s=0.1,
                       on_start=kill_mid_fit)
    assert out.state == "failed" and out.rc == -signal.SIGKILL
    assert str(log) in out.detail and "killed by signal 9" in out.detail
    status = job_status(job, toy["results"], toy["logs"])
    assert status.state == "failed" and "killed by signal 9" in status.detail

    (out,) = run_local([job], results_dir=toy["results"], logs=toy["logs"], n_jobs=1, threads=1, poll_s=0.1)
    assert out.state == "done", log.read_text()[-2000:]
    record = completed_record(job.spec, toy["results"])
    assert record is not None and 0 < record["system"]["config"]["resumed_from"] < 30  # resumed, not restarted
    assert job_status(job, toy["results"], toy["logs"]).state == "done"

    lines = len(log.read_text().splitlines())
    (out,) = run_local([job], results_dir=toy["results"], logs=toy["logs"], n_jobs=1, threads=1, poll_s=0.1)
    assert out.state == "complete" and len(log.read_text().splitlines()) == lines  # skipped: nothing launched


@two_cores
def test_local_skips_the_dependents_of_a_failed_job(toy: dict[str, Path]) -> None:
    from bench.launch.local import run_local

    bad = toy_job("bad", steps=-1)
    after_bad = toy_job("after-bad", after=bad, steps=-1, suffix="!")
    good = toy_job("good", steps=0)
    outs = {o.job.label: o for o in run_local([bad, after_bad, good], results_dir=toy["results"], logs=toy["logs"],
                                              n_jobs=2, threads=1, poll_s=0.1)}
    assert outs["bad"].state == "failed" and "steps must be >= 0" in outs["bad"].detail
    assert outs["after-bad"].state == "skipped" and outs["after-bad"].started is None
    assert outs["good"].state == "done"


@two_cores
def test_reproduce_local_reports_failures_and_status_shows_them(tmp_path: Path) -> None:
    """Through the CLI: both plain MIST runs of mist:6 fail (no data), their 8 decode-only runs are not
    started; the command exits 1 naming what to do, and `bench status` shows each failure's log and error."""
    env = {**os.environ, "COLUMNS": "400", "BENCH_CACHE": str(tmp_path / "cache")}
    common = ["--budget", "smoke", "--results-dir", str(tmp_path / "results")]
    (tmp_path / "results").mkdir()  # an explicit --results-dir is a folder that exists (docs/commands.md)
    out = subprocess.run([sys.executable, "-m", "bench", "reproduce", "mist:6", *common, "--launcher", "local",
                          "--jobs", "2", "--threads-per-job", "1", "--data-dir", str(tmp_path / "no-data")],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "2 run(s) of mist:6 failed and 8 did not start" in out.stderr and "Traceback" not in out.stderr
    assert len(re.findall(r"│ failed +│", out.stdout)) == 2 and len(re.findall(r"│ skipped +│", out.stdout)) == 8
    assert "error: Data directory not found" in out.stdout  # each failure's last error line, in the live view
    logs = tmp_path / ".cache" / "launch"  # beside the results dir
    assert len(list(logs.glob("*.log"))) == 2
    status = subprocess.run([sys.executable, "-m", "bench", "status", "mist:6", *common], capture_output=True,
                            text=True, cwd=REPO, env=env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip().endswith("2 failed, 8 skipped"), status.stdout
    flat = re.sub(r"[\s│]", "", status.stdout)  # the table folds long cells over several lines
    for log in logs.glob("*.log"):
        assert re.sub(r"\s", "", f"{log}: error: Data directory not found") in flat, status.stdout


def test_status_reads_records_and_logs(tmp_path: Path) -> None:
    from bench.launch import joblog
    from bench.launch.status import job_status

    results, logs = tmp_path / "results", tmp_path / "logs"
    jobs = [Job(RunSpec("copy_source", "quora", limit=n), f"j{n}") for n in range(1, 6)]
    state = lambda job: job_status(job, results, logs)  # noqa: E731
    assert state(jobs[0]).state == "not started"
    fake_record(jobs[0].spec, results, 1.0)
    assert (state(jobs[0]).state, state(jobs[0]).detail) == ("done", jobs[0].run_id)

    running = joblog.log_path(logs, jobs[1].run_id)
    joblog.mark_launch(running, ["bench", "run"], "local")
    joblog.mark_pid(running, os.getpid())
    append(running, "[fit] training\nstep 3/10\n")
    assert (state(jobs[1]).state, state(jobs[1]).detail) == ("running", f"pid {os.getpid()}: step 3/10")

    dead = subprocess.Popen(["true"])
    dead.wait()
    stopped = joblog.log_path(logs, jobs[2].run_id)
    joblog.mark_launch(stopped, ["bench", "run"], "local")
    joblog.mark_pid(stopped, dead.pid)
    assert state(jobs[2]).state == "stopped"

    failed = joblog.log_path(logs, jobs[3].run_id)
    failed.parent.mkdir(parents=True, exist_ok=True)
    failed.write_text("old attempt\n")
    joblog.mark_launch(failed, ["bench", "run"], "local")
    append(failed, "[fit] x\nValueError: bad lr\nscoring...\n")
    joblog.mark_exit(failed, 1)
    assert state(jobs[3]).state == "failed" and state(jobs[3]).detail == f"{failed}: ValueError: bad lr"

    queued = joblog.log_path(logs, jobs[4].run_id)
    joblog.mark_submitted(queued, "77_1", ["bench", "run"])
    assert (state(jobs[4]).state, state(jobs[4]).detail) == ("queued", "slurm job 77_1")


@pytest.mark.slow
@two_cores
def test_local_runs_real_systems_in_dependency_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """copy_source and a smoke MIST side by side (--jobs 2 --threads-per-job 1), then a decode-only MIST
    that loads the checkpoint the plain run trained; a second launch runs nothing."""
    if not (DATA / "quora").is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.launch.local import run_local

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCH_INCLUDE", raising=False)
    results, logs = tmp_path / "results", tmp_path / "logs"
    copy = RunSpec("copy_source", "quora", budget="smoke", limit=20)
    mist = RunSpec("mist_minilm_l6", "quora", budget="smoke", limit=20)
    mist3 = RunSpec("mist_minilm_l6", "quora", budget="smoke", limit=20,
                    overrides={"decode": "mist_iter", "iterations": 3})
    plan = plan_specs([mist3, copy, mist], results)  # the decode-only run first: the plan reorders it
    assert [job.run_id for job in plan] == [mist.run_id, mist3.run_id, copy.run_id]
    assert plan[1].depends_on == (mist.run_id,) and plan[0].depends_on == plan[2].depends_on == ()

    outs = {o.job.run_id: o for o in run_local(plan, results_dir=results, logs=logs, n_jobs=2, threads=1,
                                               data_dir=DATA, poll_s=0.2)}
    assert all(o.state == "done" for o in outs.values()), {o.job.label: o.detail for o in outs.values()}
    first, second, other = outs[mist.run_id], outs[mist3.run_id], outs[copy.run_id]
    assert other.started is not None and first.ended is not None and other.started < first.ended  # side by side
    assert second.started is not None and second.started >= first.ended  # after the run it decodes
    records = {rid: completed_record(o.job.spec, results) for rid, o in outs.items()}
    assert records[mist3.run_id]["model"]["workdir"] == records[mist.run_id]["model"]["workdir"]
    assert records[mist.run_id]["environment"]  # written by the child `bench run`

    sizes = {p.name: p.stat().st_size for p in logs.iterdir()}
    again = run_local(plan_specs([mist3, copy, mist], results), results_dir=results, logs=logs, n_jobs=2, threads=1)
    assert all(o.state == "complete" for o in again)
    assert {p.name: p.stat().st_size for p in logs.iterdir()} == sizes


# --- SLURM through submitit ------------------------------------------------------------------------
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`srun` (so submitit sees a cluster), an `sbatch` that accepts every job and numbers it from 1001,
    and a `sacct` that reports the states written in ``tmp_path/sacct-states`` (``JobID|State|`` lines)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    counter = tmp_path / "sbatch-counter"
    (bin_dir / "sbatch").write_text(
        f'#!/bin/sh\nn=$(cat "{counter}" 2>/dev/null || echo 1000)\nn=$((n+1))\necho $n > "{counter}"\n'
        'echo "Submitted batch job $n"\n')
    (bin_dir / "sacct").write_text(f'#!/bin/sh\necho "JobID|State|NodeList"\ncat "{tmp_path / "sacct-states"}" '
                                   '2>/dev/null\nexit 0\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_sbatch_script_has_partition_gpus_cpus_and_afterok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import submitit
    from submitit.slurm.slurm import _make_sbatch_string

    from bench.launch.slurm import SlurmOptions, dependency_parameters, executor_parameters

    fake_slurm(tmp_path, monkeypatch)
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    options = SlurmOptions(partition="gpu", time_min=90, gpus=1, cpus_per_task=4, parallelism=2)
    executor.update_parameters(**executor_parameters(options, name="bench-mist_3"),
                               **dependency_parameters(["1234", "1235_0"]))
    text = _make_sbatch_string(command="python -m bench run", folder=tmp_path / "submitit",
                               **executor._executor.parameters)
    for line in ("--partition=gpu", "--gpus-per-node=1", "--cpus-per-task=4", "--time=90", "--job-name=bench-mist_3",
                 "--dependency=afterok:1234:1235_0", "--kill-on-invalid-dep=yes"):
        assert f"#SBATCH {line}\n" in text, text
    executor.update_parameters(**dependency_parameters([]))  # the next job waits for nothing
    assert "--dependency" not in _make_sbatch_string(command="x", folder=tmp_path / "submitit",
                                                     **executor._executor.parameters)
    fresh = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    fresh.update_parameters(**executor_parameters(SlurmOptions()), **dependency_parameters([]))
    plain = _make_sbatch_string(command="x", folder=tmp_path / "submitit", **fresh._executor.parameters)
    assert "--dependency" not in plain and "--gpus-per-node" not in plain and "--partition" not in plain


def test_slurm_submission_of_mist6_chains_afterok_and_status_reads_it(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench reproduce mist:6 --launcher slurm` through the real SlurmExecutor (a fake `sbatch`):
    the plain runs go in one array, every decode-only run waits for its plain run's array task."""
    fake_slurm(tmp_path, monkeypatch)
    results, logs = tmp_path / "results", tmp_path / "logs"
    env = {**os.environ, "COLUMNS": "300", "BENCH_CACHE": str(tmp_path / "cache")}
    common = ["--budget", "smoke", "--results-dir", str(results), "--logs", str(logs)]
    out = subprocess.run([sys.executable, "-m", "bench", "reproduce", "mist:6", *common, "--launcher", "slurm",
                          "--partition", "gpu", "--gpus", "1", "--cpus-per-task", "4", "--time-min", "90",
                          "--jobs", "2"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    job_ids = {}
    for log in logs.glob("*.log"):
        (line,) = log.read_text().splitlines()
        job_ids[log.stem] = re.search(r"slurm job (\S+):", line).group(1)
    plan = plan_table("mist", "6", "smoke", results)
    assert set(job_ids) == {job.run_id for job in plan}
    scripts = logs / "submitit"
    array = (scripts / "1001_submission.sh").read_text()
    assert "#SBATCH --array=0-1%2\n" in array and "#SBATCH --partition=gpu\n" in array
    assert "#SBATCH --gpus-per-node=1\n" in array and "#SBATCH --cpus-per-task=4\n" in array
    assert "--dependency" not in array
    for job in plan:
        if not job.depends_on:
            assert job_ids[job.run_id] in ("1001_0", "1001_1")
            continue
        script = (scripts / f"{job_ids[job.run_id]}_submission.sh").read_text()
        assert f"#SBATCH --dependency=afterok:{job_ids[job.depends_on[0]]}\n" in script, script
        assert "#SBATCH --kill-on-invalid-dep=yes\n" in script and "#SBATCH --partition=gpu\n" in script

    status = subprocess.run([sys.executable, "-m", "bench", "status", "mist:6", *common], capture_output=True,
                            text=True, cwd=REPO, env=env, timeout=120)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip().endswith("10 queued") and "slurm job 1001_0" in status.stdout

    from bench.launch import joblog  # the first array task fails on its node: its dependents will never run

    first = next(rid for rid, jid in job_ids.items() if jid == "1001_0")
    joblog.mark_launch(logs / f"{first}.log", ["bench", "run"], "slurm")
    append(logs / f"{first}.log", "RuntimeError: CUDA out of memory\n")
    joblog.mark_exit(logs / f"{first}.log", 1)
    status = subprocess.run([sys.executable, "-m", "bench", "status", "mist:6", *common], capture_output=True,
                            text=True, cwd=REPO, env=env, timeout=120)
    assert status.stdout.strip().endswith("1 failed, 5 queued, 4 skipped"), status.stdout
    assert "CUDA out of memory" in status.stdout

    # relaunch: SLURM (sacct) still holds 5 jobs; the failed one and its 4 cancelled dependents go again
    waiting = {job.run_id for job in plan if job.depends_on == (first,)}
    (tmp_path / "sacct-states").write_text("".join(
        f"{jid}|{'CANCELLED by 0' if rid in waiting else 'FAILED' if rid == first else 'PENDING'}|\n"
        for rid, jid in job_ids.items()))
    again = subprocess.run([sys.executable, "-m", "bench", "reproduce", "mist:6", *common, "--launcher", "slurm",
                            "--partition", "gpu"], capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("submitted earlier") == 5, again.stdout
    resubmitted = {}
    for log in logs.glob("*.log"):
        ids = re.findall(r"^=== submitted \S+ slurm job (\S+):", log.read_text(), re.M)
        assert len(ids) == (2 if log.stem in waiting | {first} else 1)
        if len(ids) == 2:
            resubmitted[log.stem] = ids[1]
    assert resubmitted[first] == "1010"  # alone: a plain job, no array
    for rid in waiting:
        script = (scripts / f"{resubmitted[rid]}_submission.sh").read_text()
        assert "#SBATCH --dependency=afterok:1010\n" in script


def test_slurm_path_on_submitits_local_executor_runs_in_dependency_order(toy: dict[str, Path]) -> None:
    from bench.launch.slurm import SlurmOptions, submit_plan

    trainer = toy_job("trainer", steps=5)
    decoder = toy_job("decoder", after=trainer, steps=5, suffix=" ?")
    bad = toy_job("bad", steps=-1)
    after_bad = toy_job("after-bad", after=bad, steps=-1, suffix="!")
    subs = {s.plan.label: s for s in submit_plan([trainer, decoder, bad, after_bad], results_dir=toy["results"],
                                                 logs=toy["logs"], options=SlurmOptions(time_min=10), threads=1,
                                                 cluster="local", say=quiet, poll_s=0.2)}
    assert subs["trainer"].state == subs["decoder"].state == "done", {k: s.detail for k, s in subs.items()}
    assert subs["bad"].state == "failed" and "steps must be >= 0" in subs["bad"].detail
    assert subs["after-bad"].state == "skipped" and subs["after-bad"].job is None

    def launched_at(job: Job) -> str:
        text = (toy["logs"] / f"{job.run_id}.log").read_text()
        return re.findall(r"^=== (?:launch|exit \S+) (\S+)", text, re.M)[-1 if job is trainer else 0]

    assert launched_at(decoder) >= launched_at(trainer)  # the decoder launched once the trainer had exited
    rec = completed_record(decoder.spec, toy["results"])
    assert rec is not None and rec["system"]["config"]["resumed_from"] == 5  # the trainer's model, not retrained
    outputs = (toy["results"] / "outputs" / f"{decoder.run_id}.txt").read_text().splitlines()
    assert len(outputs) == 6 and all(line.endswith(" ?") for line in outputs)  # its own decode setting


@pytest.mark.slow
@two_cores
@pytest.mark.skipif(not DATA.is_dir(), reason=f"data dir {DATA} not found")
def test_reproduce_mist6_smoke_table_with_two_local_jobs(tmp_path: Path) -> None:
    """#22's done-when: a whole smoke table through the local launcher, dependency order, then a final table."""
    import json

    env = {**os.environ, "BENCH_CACHE": str(tmp_path / "cache")}
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "bench", "reproduce", "mist:6", "--budget", "smoke", "--launcher", "local",
           "--jobs", "2", "--threads-per-job", "1", "--results-dir", str(results)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "MIST Table 6" in out.stdout and "Mask-Predict" in out.stdout  # the rendered table
    records = [json.loads(p.read_text()) for p in results.glob("*.json")]
    plain = {r["spec"]["task"]: r for r in records if not r["spec"].get("overrides")}
    decoded = [r for r in records if r["spec"].get("overrides")]
    assert set(plain) == {"squad_qg", "quora"} and len(decoded) == 8
    for rec in decoded:  # every iterative decode started after, and decoded the model of, its plain run
        base = plain[rec["spec"]["task"]]
        assert rec["model"]["workdir"] == base["model"]["workdir"]
        assert rec["created"] >= base["created"]
    again = subprocess.run([*cmd, "--dry-run"], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert again.returncode == 0 and again.stdout.count("done (skipped)") == 10
