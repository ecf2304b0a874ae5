"""bench.launch.dispatch.launch: the one path of `bench reproduce` and `bench queue` from a request to runs
(checked before planned, planned before launched) and the one summary of runs that failed or never started."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.launch.dispatch import LaunchRequest, launch
from bench.launch.local import LaunchError, Outcome
from bench.launch.plan import Job
from bench.runs import RunSpec


def _plan() -> list[Job]:
    return [Job(spec=RunSpec("copy_source", "quora", limit=n), label=f"row{n}") for n in (5, 6, 7)]


def test_a_dry_run_is_checked_and_planned_but_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.launch.local as local

    monkeypatch.setattr(local, "run_local", lambda *a, **k: pytest.fail("a dry run started runs"))
    done = launch("mist:6", _plan, LaunchRequest("local", jobs=1, threads=1, dry_run=True), results_dir=tmp_path)
    assert [j.label for j in done.plan] == ["row5", "row6", "row7"]
    assert done.pool.line == "local launcher: 1 job(s) at a time, 1 thread(s) each"
    assert done.logs == tmp_path.resolve().parent / ".cache" / "launch" and done.failure() is None


def test_refusals_come_before_the_plan(tmp_path: Path) -> None:
    def no_plan() -> list[Job]:
        raise AssertionError("planned a launch that is refused")

    with pytest.raises(LaunchError, match=r"^--jobs 0: jobs must be ≥ 1 \(got 0\)$"):
        launch("mist:6", no_plan, LaunchRequest("local", jobs=0, dry_run=True), results_dir=tmp_path)
    with pytest.raises(LaunchError, match=r"--gpus -1: gpus must be ≥ 0"):
        launch("mist:6", no_plan, LaunchRequest("slurm", gpus=-1, dry_run=True), results_dir=tmp_path)
    with pytest.raises(LaunchError, match="--launcher inline: q.txt is run in parallel"):
        launch("q.txt", no_plan, LaunchRequest("inline"), results_dir=tmp_path, inline_ok=False)


def test_local_outcomes_give_one_failure_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.launch.local as local

    def run_local(plan: list[Job], **kw: object) -> list[Outcome]:
        assert kw["n_jobs"] == 1 and kw["threads"] == 1 and kw["logs"] == tmp_path / "logs"
        return [Outcome(job, tmp_path / "x.log", state=s) for job, s in zip(plan, ("done", "failed", "skipped"),
                                                                              strict=True)]

    said: list[str] = []
    monkeypatch.setattr(local, "run_local", run_local)
    done = launch("mist:6", _plan, LaunchRequest("local", jobs=1, threads=1, logs=tmp_path / "logs"),
                  results_dir=tmp_path, say=said.append)
    assert said == [f"local launcher: 1 job(s) at a time, 1 thread(s) each; logs in {tmp_path / 'logs'}"]
    assert (done.count("done"), done.count("failed"), done.count("skipped")) == (1, 1, 1)
    failure = done.failure()
    assert failure is not None and failure.startswith("1 run(s) of mist:6 failed and 1 did not start")
    assert str(tmp_path / "logs") in failure and "run the same command again" in failure


def test_inline_runs_the_plan_in_order_in_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bench.runs.pipeline as pipeline

    ran: list[RunSpec] = []
    monkeypatch.setattr(pipeline, "execute", lambda spec, **kw: ran.append(spec))
    done = launch("mist:6", _plan, LaunchRequest("inline"), results_dir=tmp_path, say=lambda _: None)
    assert ran == [job.spec for job in _plan()] and done.failure() is None
