import json
import multiprocessing as mp
import os

import pytest

from bench.api.atomic import write_json_atomic
from bench.runs import RunSpec, parse_overrides


def test_interrupted_write_leaves_previous_record_intact(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"status": "complete", "score": 1.0})

    def killed(_fd):
        raise KeyboardInterrupt("simulated kill during write")

    monkeypatch.setattr(os, "fsync", killed)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(path, {"status": "complete", "score": 2.0})
    assert json.loads(path.read_text()) == {"status": "complete", "score": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"], "temporary file left behind"


def test_unserialisable_record_never_replaces_previous(tmp_path):
    path = tmp_path / "run.json"
    write_json_atomic(path, {"ok": True})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"ok": True}


def _writer(path: str, tag: int, n: int) -> None:
    from pathlib import Path

    for i in range(n):
        write_json_atomic(Path(path), {"writer": tag, "i": i, "pad": "x" * 20000})


def test_two_processes_writing_at_once_never_corrupt(tmp_path):
    path = tmp_path / "rec.json"
    write_json_atomic(path, {"writer": -1, "i": -1, "pad": ""})
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), t, 60)) for t in (0, 1)]
    for p in procs:
        p.start()
    reads = 0
    while any(p.is_alive() for p in procs):
        obj = json.loads(path.read_text())  # must always parse
        assert obj["writer"] in (-1, 0, 1)
        reads += 1
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert json.loads(path.read_text())["i"] == 59
    assert not [p for p in tmp_path.iterdir() if p.name != "rec.json"]


def test_run_id_is_stable_and_depends_on_every_field():
    a = RunSpec("unilm", "squad_qg", budget="cpu", overrides={"b": 1, "a": 2})
    b = RunSpec("unilm", "squad_qg", budget="cpu", overrides={"a": 2, "b": 1})
    assert a.run_id == b.run_id
    assert a.run_id.startswith("unilm--squad_qg--test--cpu--s42--")
    variants = [RunSpec("unilm", "squad_qg", budget="smoke", overrides={"a": 2, "b": 1}),
                RunSpec("unilm", "squad_qg", budget="cpu", overrides={"a": 3, "b": 1}),
                RunSpec("unilm", "squad_qg", budget="cpu", overrides={"a": 2, "b": 1}, seed=1),
                RunSpec("unilm", "quora", budget="cpu", overrides={"a": 2, "b": 1})]
    assert len({a.run_id, *(v.run_id for v in variants)}) == 5
    assert RunSpec.from_json(a.to_json()) == a


def test_parse_overrides_types_and_errors():
    assert parse_overrides(["steps=100", "decode=mist_iter", "flag=true", "lr=3e-5"]) == {
        "steps": 100, "decode": "mist_iter", "flag": True, "lr": 3e-5}
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["steps"])
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["=3"])


def test_every_set_reader_reads_an_override_the_same_way():
    """One parser: `bench latency --set` (per system or for all) types a value as `bench run --set` does."""
    from bench.latency.prepare import parse_system_overrides

    items = ["steps=100", "decode=mist_iter", "flag=true", "lr=3e-5", 'tiny={"hidden": 32}', "name=a=b", "q= 7"]
    assert parse_system_overrides(items, ["a", "b"]) == {"a": parse_overrides(items), "b": parse_overrides(items)}
    assert parse_system_overrides([f"b.{item}" for item in items], ["a", "b"]) == {"a": {}, "b": parse_overrides(items)}


def test_record_output_paths_are_repo_relative_inside_the_checkout(tmp_path):
    from bench.runs import REPO_ROOT, display_path

    demo_output = REPO_ROOT / ".cache" / "demo" / "results" / "outputs" / "x.txt"
    assert display_path(demo_output) == ".cache/demo/results/outputs/x.txt"
    assert display_path(tmp_path / "x.txt") == str((tmp_path / "x.txt").resolve())


def test_dirty_means_code_not_recorded_results(tmp_path, monkeypatch) -> None:
    """Re-recording a committed record (--force) must not mark the next run in that worktree dirty."""
    import subprocess

    import bench.runs.provenance as provenance

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "reports").mkdir()
    for name in ("code.py", "results/r.json", "reports/t.md"):
        (tmp_path / name).write_text("a\n")
    git("add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x")
    monkeypatch.setattr(provenance, "REPO_ROOT", tmp_path)
    assert provenance.harness_info()["dirty"] is False
    (tmp_path / "results/r.json").write_text("b\n")
    (tmp_path / "reports/t.md").write_text("b\n")
    assert provenance.harness_info()["dirty"] is False
    (tmp_path / "code.py").write_text("b\n")
    state = provenance.code_state(provenance.harness_info())
    assert state["dirty"] is True and state["diff_sha256"]
