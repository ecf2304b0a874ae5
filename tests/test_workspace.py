"""#58 item 1: a user's runs land in the workspace, never in the committed results/ by accident; evidence is promoted
on purpose; commands that only read leave every committed file byte-identical; commands that show runs see the
workspace's and the committed ones (docs/commands.md, "Where runs go")."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
COMMITTED = ("results", "reports")
SHOWN = "copybert_selfcopy--squad_qg--test--cpu--s42--9b7c5e3b"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data")


def snapshot() -> dict[str, str]:
    """sha256 of every file under the committed folders (bytes, not git's view: a rewrite with the same bytes is
    fine, a changed byte is not)."""
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in COMMITTED for p in sorted((ROOT / folder).rglob("*")) if p.is_file()
            and ".locks" not in p.parts}


def bench(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=900, env={**os.environ, "COLUMNS": "120", **(env or {})})


def test_a_latency_record_goes_to_the_workspace_and_a_copy_of_it_is_evidence(tmp_path: Path) -> None:
    """`bench latency --record` makes a record like `bench run` does: into the workspace, saying so, with the `cp`
    that makes it evidence (a timing record's id is its content, so the copy is read as the same record)."""
    from bench.store.latency import load_latency_records

    before = snapshot()
    workspace = tmp_path / "workspace"
    timed = bench("latency", "--task", "quora", "--systems", "copy_source,lead1", "--baseline", "copy_source",
                  "--n", "4", "--min-items", "4", "--rounds", "3", "--max-rounds", "3", "--warmup-items", "1",
                  "--warmup-s", "0", "--min-duration-s", "0", "--device", "cpu", "--record",
                  env={"BENCH_RESULTS": str(workspace)})
    assert timed.returncode == 0, timed.stderr[-2000:]
    (record,) = (workspace / "latency").glob("quora--test--smoke--*.json")
    assert snapshot() == before, "bench latency --record without --results-dir changed the committed results"
    said = timed.stderr.splitlines()
    assert f"Not committed: this latency record is in {workspace} (your workspace)" in " ".join(said)
    cp = next(line.split() for line in said if line.strip().startswith("cp "))
    assert cp == ["cp", str(record), "results/latency/"]
    evidence = tmp_path / "evidence" / "latency"
    evidence.mkdir(parents=True)
    subprocess.run([*cp[:2], str(evidence)], check=True)
    assert [r["latency_id"] for r in load_latency_records(evidence.parent)] == [record.stem]


def test_the_headline_run_and_bench_run_write_only_the_workspace(tmp_path: Path) -> None:
    import bench as api

    before = snapshot()
    workspace = tmp_path / "workspace"
    env = {"BENCH_RESULTS": str(workspace)}
    run = bench("run", "--system", "copy_source", "--task", "quora", "--limit", "20", env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    (record,) = workspace.glob("copy_source--quora--test--smoke--*.json")
    assert "Not committed" in run.stdout and f"bench promote {record.stem}" in " ".join(run.stdout.split())
    os.environ["BENCH_RESULTS"], saved = str(workspace), os.environ["BENCH_RESULTS"]
    try:
        rec = api.run("lead1", "squad_qg", limit=20)
    finally:
        os.environ["BENCH_RESULTS"] = saved
    assert (workspace / f"{rec['run_id']}.json").is_file()
    assert snapshot() == before, "a run without --results-dir changed the committed results or reports"

    short = record.stem.rsplit("--", 1)[1]
    shown = bench("show", short, "-n", "0", env=env)  # the workspace run, by the short id the pages show
    assert shown.returncode == 0 and record.stem in shown.stdout and "Not committed" in shown.stdout
    listed = bench("ls", "runs", "--task", "quora", env=env)
    assert "(workspace)" in listed.stdout and record.stem in listed.stdout and "results/ (committed)" in listed.stdout
    committed = bench("show", SHOWN, "-n", "0", env=env)  # the evidence is still seen beside the workspace
    assert committed.returncode == 0 and "Not committed" not in committed.stdout


def test_read_only_commands_leave_every_committed_file_byte_identical(tmp_path: Path) -> None:
    before = snapshot()
    env = {"BENCH_RESULTS": str(tmp_path / "workspace"), "BENCH_CACHE": str(tmp_path / "cache")}
    for args in (("table", "--check"), ("show", SHOWN, "-n", "2"), ("leaderboard", "squad_qg"), ("ls", "runs"),
                 ("status", "mist:6"), ("table", "--paper", "mist", "--table", "3")):
        out = bench(*args, env=env)
        assert out.returncode == 0, (args, out.stderr[-2000:])
    assert snapshot() == before


def test_table_prints_one_short_summary_and_says_wrote_only_for_a_changed_file(tmp_path: Path) -> None:
    """On a copy of the committed reports (whose record links the first rewrite moves to this folder): a rewrite
    that changes nothing says so in a few lines; one after an edit names exactly the file it rewrote."""
    import shutil

    reports = tmp_path / "reports"
    shutil.copytree(ROOT / "reports", reports)
    first = bench("table", "--reports-dir", str(reports))
    assert first.returncode == 0, first.stderr[-2000:]
    assert len(first.stdout.splitlines()) <= 40, first.stdout
    same = bench("table", "--reports-dir", str(reports))
    assert len(same.stdout.splitlines()) <= 10 and "wrote" not in same.stdout, same.stdout
    assert "0 file(s) changed" in same.stdout and "from results/ (committed)" in same.stdout
    edited = reports / "mist-table3.md"
    edited.write_text(edited.read_text() + "a line bench table did not write\n")  # still its file (its header)
    again = bench("table", "--reports-dir", str(reports))
    wrote = [ln for ln in again.stdout.splitlines() if ln.startswith("wrote")]
    assert wrote == [f"wrote {reports / 'mist-table3.md'}"] and "1 file(s) changed" in again.stdout


def test_promote_copies_a_workspace_run_into_the_evidence_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.store.records import read_record
    from bench.workflows.promote import PromoteError, promote

    workspace, evidence = tmp_path / "workspace", tmp_path / "evidence"
    evidence.mkdir()
    monkeypatch.setenv("BENCH_RESULTS", str(workspace))
    run = CliRunner().invoke(app, ["run", "--system", "copy_source", "--task", "quora", "--limit", "20"])
    assert run.exit_code == 0, run.output
    (record,) = workspace.glob("copy_source--*.json")
    dest = promote(record.stem.rsplit("--", 1)[1], dest=evidence)  # a short id
    rec = read_record(dest)  # sealed again, and its outputs beside it match its sha256
    assert dest == evidence / record.name and (evidence / "outputs" / f"{record.stem}.txt").is_file()
    assert rec["outputs"]["path"].endswith(f"evidence/outputs/{record.stem}.txt")
    assert json.loads(record.read_text())["scores"] == rec["scores"]
    with pytest.raises(PromoteError, match="exists"):
        promote(record.stem, dest=evidence)
    missing = CliRunner().invoke(app, ["promote", "nope0000"])
    assert missing.exit_code == 2 and "no record" in missing.output


def test_a_run_the_evidence_holds_is_not_run_again_into_the_workspace(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.runs import RunSpec
    from bench.runs.pipeline import execute

    evidence, workspace = tmp_path / "evidence", tmp_path / "workspace"
    spec = RunSpec(system="copy_source", task="quora", split="test", budget="smoke", limit=20)
    said: list[str] = []
    first = execute(spec, results_dir=evidence, say=said.append)
    again = execute(spec, results_dir=workspace, done_in=[evidence], say=said.append)
    assert again["run_id"] == first["run_id"] and not workspace.joinpath(f"{spec.run_id}.json").exists()
    assert any("[skip]" in s and "complete in" in s for s in said)
    forced = execute(spec, results_dir=workspace, done_in=[evidence], force=True, say=said.append)
    assert workspace.joinpath(f"{forced['run_id']}.json").is_file()
