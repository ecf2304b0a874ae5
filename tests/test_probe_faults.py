"""#46 §4's probe: faults (a full disk, bad bytes, crafted records, a hanging java, odd plugin files, names too
long, weights missing offline) are one line naming the file and the fix, never a traceback or a hang, and
nothing under results/, reports/ or the caches changes.

Each case runs ``bench`` in its own folder (``_work``): a copy of two committed records in ``WORK/results``, a
copy of reports/, and a cache whose ``splits`` link to the checkout's built splits. In-process tests below
cover what a subprocess cannot reach cheaply (a corrupt checkpoint, the errno table).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_bad_input_probe import DATA, REPO, RID, SPLITS, _state, _tree

pytestmark = pytest.mark.slow

GOOD = REPO / "results" / f"{RID}.json"


@dataclass(frozen=True)
class Fault:
    id: str
    args: tuple[str, ...]  # {work} is the case's folder
    names: str  # what the message must name
    codes: tuple[int, ...] = (2,)
    make: Callable[[Path], None] | None = None  # sets the fault up in the case's folder
    env: tuple[tuple[str, str], ...] = ()


def _record(work: Path, name: str = "crafted.json") -> Path:
    return work / "results" / name


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    def make(work: Path) -> None:
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return make


def _crafted(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    """A copy of a committed record, edited: a wrong type, a missing section."""
    def make(work: Path) -> None:
        rec = json.loads(GOOD.read_text())
        rec["run_id"] = "crafted"
        out = edit(rec)
        _record(work).write_text(json.dumps(rec if out is None else out))
    return make


def _set(path: str, value: object) -> Callable[[dict], None]:
    def edit(rec: dict) -> None:
        *parents, last = path.split(".")
        node = rec
        for key in parents:
            node = node[key]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return edit


def _plugin(source: str, name: str = "plug.py") -> Callable[[Path], None]:
    return _write(name, source.encode())


def _odd_folder(work: Path) -> None:
    """A plugin folder holding a FIFO, a dangling link and a folder, each named ``*.py``, beside one module
    (beside the case's folder, whose files the probe hashes: reading a FIFO would block the probe itself)."""
    folder = work.parent / "plugins"
    folder.mkdir()
    (folder / "good.py").write_text("X = 1\n")
    os.mkfifo(folder / "fifo.py")
    (folder / "dangling.py").symlink_to(folder / "nowhere.py")
    (folder / "dir.py").mkdir()


def _fifo(work: Path) -> None:
    os.mkfifo(work.parent / "pipe.py")


DEEP = b"[" * 100_000 + b"]" * 100_000
SHOW = ("show", "crafted", "--results-dir", "{work}/results")
TABLE = ("table", "--results-dir", "{work}/results", "--reports-dir", "{work}/reports")
EXPORT = ("export", "--results-dir", "{work}/results", "--out", "{work}/out.csv")
LONG = "x" * 300

FAULTS: list[Fault] = [
    # bad bytes or bad JSON in every kind of file the harness reads
    Fault("record not utf-8 (table)", TABLE, "crafted.json", make=_write("results/crafted.json", b'{"a": "\xff"}')),
    Fault("record not utf-8 (export)", EXPORT, "crafted.json", make=_write("results/crafted.json", b"\xff\xfe{")),
    Fault("record not json (show)", SHOW, "crafted.json", make=_write("results/crafted.json", b"{not json")),
    Fault("record nested deep (table)", TABLE, "crafted.json", make=_write("results/crafted.json", DEEP)),
    Fault("record nested deep (show)", SHOW, "crafted.json", make=_write("results/crafted.json", DEEP)),
    Fault("latency record not utf-8", TABLE, "bad.json", make=_write("results/latency/bad.json", b"\xff")),
    Fault("pvalues not json", TABLE, "pvalues.json", make=_write("results/significance/pvalues.json", b"{x")),
    Fault("pvalues nested deep", TABLE, "pvalues.json", make=_write("results/significance/pvalues.json", DEEP)),
    Fault("calibration not utf-8", TABLE, "bad.json", make=_write("results/calibration/bad.json", b"\xc3(")),
    Fault("ordering not json", TABLE, "bad.json", make=_write("results/ordering/bad.json", b"[1,")),
    Fault("queue not utf-8", ("queue", "{work}/q.txt", "--dry-run", "--results-dir", "{work}/results"), "q.txt",
          make=_write("q.txt", b"--system copy_source --task quora\xff\n")),
    # crafted records: wrong types, missing sections
    Fault("spec is a string", SHOW, "spec", make=_crafted(_set("spec", "x"))),
    Fault("scores is a list (table)", TABLE, "scores", make=_crafted(_set("scores", []))),
    Fault("metric is a string", TABLE, "metrics", make=_crafted(lambda r: next(iter(r["scores"].values()))
                                                                 ["metrics"].update(bleu4="27"))),
    Fault("outputs is a string (show)", SHOW, "outputs", make=_crafted(_set("outputs", "x"))),
    Fault("outputs is a string (table)", TABLE, "outputs", make=_crafted(_set("outputs", "x"))),
    Fault("data is a list (table)", TABLE, "data", make=_crafted(_set("data", []))),
    Fault("data missing (show)", SHOW, "data", make=_crafted(_set("data", KeyError))),
    Fault("record is a list", TABLE, "crafted.json", make=_crafted(lambda r: [r])),
    Fault("latency is a string", TABLE, "latency", make=_crafted(_set("latency", "fast"))),
    # plugins: odd files, sys.exit, a built-in name in another case or with -/_ swapped
    Fault("include fifo", ("--include", "{work}/../pipe.py", "ls", "tasks"), "pipe.py", make=_fifo),
    Fault("include odd folder", ("--include", "{work}/../plugins", "ls", "tasks"), "quora", codes=(0,),
          make=_odd_folder),
    Fault("plugin sys.exit", ("--include", "{work}/plug.py", "ls", "tasks"), "sys.exit",
          make=_plugin("import sys\nsys.exit(3)\n")),
    Fault("plugin exit()", ("--include", "{work}/plug.py", "ls", "tasks"), "plug.py",
          make=_plugin("raise SystemExit('bye')\n")),
    Fault("plugin re-registers in another case",
          ("--include", "{work}/plug.py", "ls", "systems"), "copy_source",
          make=_plugin("from systems import SYSTEMS\nSYSTEMS.register('Copy_Source', 'systems:build')\n")),
    Fault("plugin re-registers with - for _",
          ("--include", "{work}/plug.py", "ls", "systems"), "copy_source",
          make=_plugin("from systems import SYSTEMS\nSYSTEMS.register('copy-source', 'systems:build')\n")),
    Fault("plugin task name too long", ("--include", "{work}/plug.py", "ls", "tasks"), "at most",
          make=_plugin(f"from bench.data import TASKS\nTASKS.register('{LONG}', 'bench.data:TASKS')\n")),
    # names too long for the file system
    Fault("submit name too long", ("submit", "--name", LONG, "--task", "quora", "--hyp", "{work}/hyp.txt",
                                   "--results-dir", "{work}/results"), "--name"),
    # a java that never answers
    Fault("java hangs", ("score", "--task", "quora", "--limit", "2", "--hyp", "{work}/hyp.txt"),
          "BENCH_METEOR_TIMEOUT", env=(("PATH", "{work}/bin:" + os.environ.get("PATH", "")),
                                       ("BENCH_METEOR_TIMEOUT", "1")),
          make=_write("bin/java", b"#!/bin/sh\nexec sleep 600\n")),
    # a paper budget without its weights, offline (the cpu budget stops earlier: next case)
    Fault("weights offline", ("run", "--system", "mist_unilm", "--task", "quora", "--budget", "paper",
                              "--results-dir", "{work}/results"), "bench fetch", codes=(1,),
          env=(("HF_HUB_OFFLINE", "1"), ("BENCH_CHECKPOINTS", "{work}/none"))),
    # the cpu budget of a system whose backbone is not here: refused before any weights lookup, naming its stand-in
    Fault("cpu stand-in needed", ("run", "--system", "mist_unilm", "--task", "quora", "--budget", "cpu",
                                  "--results-dir", "{work}/results"), "cpu stand-in is mist_minilm_l6", codes=(2,),
          env=(("HF_HUB_OFFLINE", "1"), ("BENCH_CHECKPOINTS", "{work}/none"))),
]


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    for rec in (GOOD, REPO / "results" / "copy_source--quora--test--cpu--s42--bc548792.json"):
        shutil.copy2(rec, work / "results" / rec.name)
    (work / "hyp.txt").write_text("a question ?\nanother one ?\n")
    shutil.copytree(REPO / "reports", work / "reports")
    (work / "cache").mkdir()
    if SPLITS.is_dir():
        shutil.copytree(SPLITS, work / "cache" / "splits", copy_function=os.link)
    return work


def _run(args: list[str], work: Path, tmp_path: Path, env: dict[str, str] | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "BENCH_CACHE": str(work / "cache"), "COLUMNS": "400", "HOME": str(tmp_path / "home"),
            **(env or {})}
    full.pop("BENCH_INCLUDE", None)
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=full, capture_output=True,
                          text=True, timeout=timeout)


def _check(proc: subprocess.CompletedProcess[str], codes: tuple[int, ...], names: str) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode in codes, f"exit {proc.returncode}, expected {codes}:\n{out[-3000:]}"
    assert names in " ".join(out.split()), f"the message does not name {names!r}:\n{out[-3000:]}"


def _unchanged(before: dict[str, object], after: dict[str, object]) -> None:
    changed = {k: sorted(set(before[k].items()) ^ set(after[k].items()))[:5]  # type: ignore[attr-defined]
               for k in before if before[k] != after[k]}
    assert not changed, f"written: {changed}"


def _but_runs(state: dict[str, object]) -> dict[str, object]:
    """``state`` without the cache's training workdirs: a run's own folder, where a journal lets it resume."""
    return {k: {p: v for p, v in t.items() if not p.startswith("cache/runs")}  # type: ignore[attr-defined]
            for k, t in state.items()}


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_is_one_line_and_writes_nothing(fault: Fault, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    if fault.make is not None:
        fault.make(work)
    args = [a.replace("{work}", str(work)) for a in fault.args]
    env = {k: v.replace("{work}", str(work)) for k, v in fault.env}
    before = _state(work)
    proc = _run(args, work, tmp_path, env, timeout=120)  # a hang fails here, not in CI's global timeout
    _check(proc, fault.codes, fault.names)
    _unchanged(before, _state(work))


# --- a full disk: a small tmpfs as the results folder, then as $BENCH_CACHE ----------------------------------
@pytest.fixture()
def full_disk(tmp_path: Path):
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True,
                       capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("cannot mount a small tmpfs here (needs root): the full-disk probe runs where it can")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30)


def test_full_results_disk_is_one_line(full_disk: Path, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    results = full_disk / "results"
    results.mkdir()
    shutil.copy2(GOOD, results / GOOD.name)  # what was written before must survive
    before, kept = _state(work), _tree(results)
    proc = _run(["run", "--system", "copy_source", "--task", "quora", "--budget", "smoke", "--limit", "2000",
                 "--results-dir", str(results)], work, tmp_path)
    _check(proc, (1,), str(results))
    assert "space" in proc.stderr
    _unchanged(_but_runs(before), _but_runs(_state(work)))  # the run's own workdir keeps its decode journal
    after = _tree(results)
    assert after[GOOD.name] == kept[GOOD.name]
    assert not [name for name in after if ".tmp" in name], after  # no temporary file left behind


def test_full_cache_disk_is_one_line(full_disk: Path, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    before = _state(work)
    proc = _run(["data", "show", "--task", "quora", "-n", "1"], work, tmp_path,
                {"BENCH_CACHE": str(full_disk / "cache")})
    _check(proc, (1,), "BENCH_CACHE")
    assert str(full_disk) in " ".join(proc.stderr.split())
    _unchanged(before, _state(work))


# --- in process: the errno table, corrupt checkpoints ---------------------------------------------------------
def test_os_problem_by_errno(tmp_path: Path) -> None:
    import errno

    from bench.api.atomic import NameTooLong, NoSpace, os_problem
    from bench.api.errors import EnvironmentProblem, UserError

    full = os_problem(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "r.json")))
    assert isinstance(full, NoSpace) and "r.json" in str(full) and "Free space" in str(full)
    unnamed = os_problem(OSError(errno.ENOSPC, "No space left on device"))
    assert isinstance(unnamed, EnvironmentProblem)
    long = os_problem(OSError(errno.ENAMETOOLONG, "File name too long", "/x/" + "y" * 300))
    assert isinstance(long, NameTooLong) and isinstance(long, UserError) and len(str(long)) < 400
    other = os_problem(OSError(errno.EIO, "Input/output error", "/dev/x"))
    assert isinstance(other, EnvironmentProblem) and "/dev/x" in str(other)
    assert os_problem(OSError(errno.EIO, "Input/output error")) is None  # names nothing: a bug, with traceback


def test_atomic_write_names_its_target_on_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from bench.api import atomic

    target = tmp_path / "kept.json"
    target.write_text("before\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(OSError) as caught:
        atomic.write_text_atomic(target, "after\n")
    assert caught.value.filename == str(target)
    assert target.read_text() == "before\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.json"]


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupt_safetensors_names_the_file_and_fresh(damage: str, tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    import torch
    from safetensors.torch import save_file

    from bench.api.checkpoints import CorruptCheckpoint
    from systems.backbone.loading import read_state_dict

    path = tmp_path / "model.safetensors"
    save_file({"w": torch.zeros(64, 64)}, str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" * 8)
    with pytest.raises(CorruptCheckpoint) as caught:
        read_state_dict(path)
    assert str(path) in str(caught.value) and "--fresh" in str(caught.value)


def test_corrupt_torch_bin_names_the_file(tmp_path: Path) -> None:
    import torch

    from bench.api.checkpoints import CorruptCheckpoint
    from systems.backbone.loading import read_state_dict

    path = tmp_path / "pytorch_model.bin"
    torch.save({"w": torch.zeros(8)}, path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CorruptCheckpoint, match="pytorch_model.bin"):
        read_state_dict(path)


def test_corrupt_training_checkpoint_names_the_file(tmp_path: Path) -> None:
    import torch

    from bench.api.checkpoints import CorruptCheckpoint
    from systems.training.checkpoint import MARKER, load_checkpoint, read_state

    (tmp_path / MARKER).write_text("")
    (tmp_path / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{trunc")
    with pytest.raises(CorruptCheckpoint, match="model.safetensors"):
        load_checkpoint(tmp_path, torch.nn.Linear(2, 2), restore_rng=False)
    (tmp_path / "state.json").write_bytes(b"\xff")
    with pytest.raises(CorruptCheckpoint, match="state.json"):
        read_state(tmp_path)


def test_fairseq_manifest_not_json_is_one_line(tmp_path: Path) -> None:
    from bench.api.errors import UserError
    from systems.fairseq_nat.checkpoints import MANIFEST, Manifest

    (tmp_path / MANIFEST).write_text("[" * 100_000)
    with pytest.raises(UserError, match=MANIFEST):
        Manifest(tmp_path)


def test_include_hashes_only_regular_py_files(tmp_path: Path) -> None:
    """A FIFO named ``*.py`` would block the hash's read for ever; links and folders are not code either."""
    from bench.env.plugins import python_files

    _odd_folder(tmp_path / "work")
    (tmp_path / "plugins" / "sub").mkdir()
    (tmp_path / "plugins" / "sub" / "deep.py").write_text("")
    (tmp_path / "plugins" / "link.py").symlink_to(tmp_path / "plugins" / "good.py")
    names = [p.name for p in python_files(tmp_path / "plugins", recursive=True)]
    assert names == ["good.py", "link.py", "deep.py"] or sorted(names) == ["deep.py", "good.py", "link.py"]
    assert [p.name for p in python_files(tmp_path / "plugins")] == ["good.py", "link.py"]
