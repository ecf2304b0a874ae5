"""Bad input never writes (#40): a typo'd folder, edited outputs, an unwritable cache or a directory given as
a file is one line and an exit code, and results/ and reports/ stay byte-identical."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench.api.atomic import atomic_path, write_bytes_atomic, write_json_atomic, write_text_atomic
from bench.store.integrity import sealed

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))
#: a small committed record (copy_source on the first 2,000 Quora test examples) and its outputs
RUN = "copy_source--quora--test--cpu--s42--af654a53"


def bench(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "1000", **(env or {})})


def snapshot(*dirs: Path) -> dict[str, str]:
    """sha256 of every file under ``dirs``: equal before and after means nothing was written or deleted."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in dirs for p in sorted(d.rglob("*")) if p.is_file()}


def one_error_line(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == code, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), out[-3000:]
    return errors[0]


# --- finding 1 (and 9): a folder that does not exist is an error, for every command that reads it -----------
READERS = [
    ["table"],
    ["table", "--check"],
    ["table", "--paper", "mist", "--table", "1"],
    ["export", "--out", "never-written.csv"],
    ["show", RUN],
    ["compare", RUN, RUN],
    ["status", "mist:1", "--logs", "no-such-logs"],  # no launch logs either: nothing was ever launched there
    ["order", "mist:3"],
    ["rescore"],
]


@pytest.mark.parametrize("args", READERS, ids=[" ".join(a[:2]) for a in READERS])
def test_a_typo_in_results_dir_is_an_error_and_writes_nothing(args: list[str]) -> None:
    before = snapshot(REPO / "results", REPO / "reports")
    proc = bench(*args, "--results-dir", "resluts")
    one_error_line(proc, 2, "--results-dir resluts: does not exist", "Did you mean 'results'?")
    assert snapshot(REPO / "results", REPO / "reports") == before
    assert not (REPO / "resluts").exists() and not (REPO / "never-written.csv").exists()


def test_export_of_a_missing_results_dir_writes_no_file(tmp_path: Path) -> None:
    proc = bench("export", "--results-dir", "/nonexistent", "--out", str(tmp_path / "r.csv"))
    one_error_line(proc, 2, "/nonexistent: does not exist")
    assert list(tmp_path.iterdir()) == []


def test_data_show_names_a_missing_data_dir() -> None:
    proc = bench("data", "show", "--task", "quora", "--data-dir", "/nonexistent-data")
    assert proc.returncode == 2 and "/nonexistent-data" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture()
def copies(tmp_path: Path) -> Path:
    """results/ and reports/ copied to ``tmp_path`` (outputs left out: records name the committed ones)."""
    shutil.copytree(REPO / "results", tmp_path / "results", ignore=shutil.ignore_patterns("outputs"))
    shutil.copytree(REPO / "reports", tmp_path / "reports")
    return tmp_path


def test_table_refuses_to_drop_what_reports_show(copies: Path) -> None:
    (copies / "empty").mkdir()
    before = snapshot(copies)
    proc = bench("table", "--results-dir", "empty", "--reports-dir", "reports", cwd=copies)
    line = one_error_line(proc, 2, "bench table would delete", "recorded run(s)", "--prune", "nothing was written")
    assert "calibration-" in line and snapshot(copies) == before
    (copies / "results" / f"{RUN}.json").unlink()  # one record gone (deleted by hand, or a refile)
    before = snapshot(copies)
    proc = bench("table", "--results-dir", "results", "--reports-dir", "reports", cwd=copies)
    line = one_error_line(proc, 2, "would drop 1 recorded run(s) that reports shows today", "--prune")
    assert RUN in line and "delete" not in line and snapshot(copies) == before


def test_prune_drops_on_purpose(tmp_path: Path) -> None:
    from bench.report import render_all
    from bench.report.build import ReportDropError

    results, reports = tmp_path / "results", tmp_path / "reports"
    shutil.copytree(REPO / "tests" / "fixtures" / "records", results)
    render_all(results, reports)
    (reports / "pareto-gone_task.json").write_text("{}\n", encoding="utf-8")  # a report no record makes now
    before = snapshot(reports)
    with pytest.raises(ReportDropError, match=r"delete 1 report file\(s\) .*pareto-gone_task.json.*--prune"):
        render_all(results, reports)
    assert snapshot(reports) == before
    render_all(results, reports, prune=True)
    assert not (reports / "pareto-gone_task.json").exists()
    assert render_all(results, reports, check=True) == []


# --- finding 5: every reader checks the outputs hash --------------------------------------------------------
@pytest.fixture()
def edited(tmp_path: Path) -> Path:
    """A results dir holding one record whose outputs (a copy in ``tmp_path``) were edited after scoring."""
    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    rec = json.loads((REPO / "results" / f"{RUN}.json").read_text(encoding="utf-8"))
    out = results / "outputs" / f"{RUN}.txt"
    out.write_bytes((REPO / rec["outputs"]["path"]).read_bytes())
    rec["outputs"]["path"] = str(out)
    (results / f"{RUN}.json").write_text(json.dumps(sealed(rec), indent=2), encoding="utf-8")  # as a writer seals it
    from bench.store.records import load_records

    assert [r["run_id"] for r in load_records(results)] == [RUN]  # intact: accepted
    out.write_text("an edited line\n" + out.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    return results


def test_table_and_export_refuse_edited_outputs(edited: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "reports", tmp_path / "reports")
    before = snapshot(edited, tmp_path / "reports")
    out = str(edited / "outputs" / f"{RUN}.txt")
    proc = bench("table", "--results-dir", str(edited), "--reports-dir", str(tmp_path / "reports"))
    one_error_line(proc, 2, out, "sha256 differs", "git checkout", "--force")
    proc = bench("export", "--results-dir", str(edited), "--out", str(tmp_path / "r.csv"))
    one_error_line(proc, 2, out, "sha256 differs")
    assert snapshot(edited, tmp_path / "reports") == before and not (tmp_path / "r.csv").exists()


def test_run_does_not_take_a_record_with_edited_outputs_as_complete(edited: Path) -> None:
    from bench.runs import RunSpec, completed_record
    from bench.runs.lookup import RunLookupError, outputs_text
    from bench.runs.pipeline import reusable_record
    from bench.store.records import OutputsChangedError, read_record

    spec = RunSpec.from_json(read_record(edited / f"{RUN}.json")["spec"])
    with pytest.raises(OutputsChangedError, match="--force"):  # reproduce, queue and status ask this
        completed_record(spec, edited)
    assert reusable_record(spec, edited, force=True, say=lambda _m: None) is None  # --force is the fix
    with pytest.raises(RunLookupError, match="git checkout"):  # show / compare name the fix too
        outputs_text(read_record(edited / f"{RUN}.json"))
    proc = bench("run", "--system", "copy_source", "--task", "quora", "--split", "test", "--budget", "cpu",
                 "--limit", "2000", "--results-dir", str(edited))
    one_error_line(proc, 2, "sha256 differs", "bench run --system copy_source --task quora --split test "
                   "--budget cpu --seed 42 --limit 2000 --force")


# --- finding 6: an unwritable cache, a directory as --out, and no temporary file on any failure --------------
SHIM = '''
import builtins, errno, io, os, sys
RO = os.path.realpath(sys.argv.pop(1))


def _ro(p):
    try:
        p = os.path.realpath(os.fsdecode(p))
    except TypeError:
        return False
    return p == RO or p.startswith(RO + os.sep)


def _deny(p):
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(p))


_mkdir, _open, _bopen = os.mkdir, os.open, builtins.open


def mkdir(p, *a, **k):
    return _deny(p) if _ro(p) else _mkdir(p, *a, **k)


def oopen(p, flags, *a, **k):
    return _deny(p) if _ro(p) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) else _open(p, flags, *a, **k)


def bopen(p, mode="r", *a, **k):
    ro = isinstance(p, (str, bytes, os.PathLike)) and _ro(p) and any(c in mode for c in "wax+")
    return _deny(p) if ro else _bopen(p, mode, *a, **k)


os.mkdir, os.open, builtins.open, io.open = mkdir, oopen, bopen, bopen
sys.argv[0] = "bench"
from bench.cli import main

main()
'''


@pytest.mark.parametrize("args", [["data", "show", "--task", "quora"],
                                  ["run", "--system", "copy_source", "--task", "quora", "--split", "test"]],
                         ids=["data show", "run"])
def test_a_read_only_cache_is_one_line_and_exit_1(args: list[str], tmp_path: Path) -> None:
    """A read-only $BENCH_CACHE, as root too: root writes through permissions, so the folder is also made
    read-only in the process (a shim that refuses writes under it, as the kernel does for other users)."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    shim = tmp_path / "shim.py"
    shim.write_text(SHIM, encoding="utf-8")
    env = {**os.environ, "COLUMNS": "1000", "BENCH_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    where = ["--results-dir", str(tmp_path / "res")] if args[0] == "run" else []
    proc = subprocess.run([sys.executable, str(shim), str(cache), *args, *where],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    one_error_line(proc, 1, f"cannot write {cache}", "$BENCH_CACHE")
    cache.chmod(0o755)
    assert list(cache.iterdir()) == []


def test_export_to_a_directory_is_one_line_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    proc = bench("export", "--out", str(target))
    one_error_line(proc, 2, f"{target} is a directory")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]


def test_no_temporary_file_is_left_on_any_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"ok": 1})

    class Boom(Exception):
        pass

    def writer_fails(tmp: Path) -> None:
        tmp.write_text("half", encoding="utf-8")
        raise Boom

    with pytest.raises(Boom), atomic_path(path) as tmp:
        writer_fails(tmp)

    def replace_fails(_src: object, _dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace_fails)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomic(path, "new\n")
    with pytest.raises(OSError, match="No space left"), atomic_path(tmp_path / "p.png") as tmp:
        tmp.write_bytes(b"png")
    monkeypatch.undo()
    (tmp_path / "d").mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory"):
        write_bytes_atomic(tmp_path / "d", b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "r.json"]
    assert json.loads(path.read_text(encoding="utf-8")) == {"ok": 1}


# --- finding 7: files respect the umask -----------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o027, 0o077])
def test_every_atomic_writer_respects_the_umask(umask: int, tmp_path: Path) -> None:
    from bench.data.cache import atomic_write
    from bench.store.records import RunRecord, load_records

    old = os.umask(umask)
    try:
        write_json_atomic(tmp_path / "a.json", {"x": 1})
        write_text_atomic(tmp_path / "outputs" / "a.txt", "x\n")
        atomic_write(tmp_path / "split.jsonl", b"{}\n")
        with atomic_path(tmp_path / "b.csv") as tmp:
            tmp.write_text("a,b\n", encoding="utf-8")
        rec = RunRecord.from_json(load_records(REPO / "results")[0])
        written = [*(tmp_path / n for n in ("a.json", "outputs/a.txt", "split.jsonl", "b.csv")),
                   rec.write(tmp_path / "results")]
    finally:
        os.umask(old)
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


# --- finding 9: export filters name what is known ------------------------------------------------------
@pytest.mark.parametrize(("flag", "typo", "meant"), [("--task", "qoura", "quora"),
                                                     ("--system", "copy_sorce", "copy_source"),
                                                     ("--budget", "cpuu", "cpu")])
def test_export_filter_typo_is_an_error_with_a_suggestion(flag: str, typo: str, meant: str, tmp_path: Path) -> None:
    proc = bench("export", flag, typo, "--out", str(tmp_path / "r.csv"))
    one_error_line(proc, 2, f"'{typo}'", f"Did you mean '{meant}'?")
    assert list(tmp_path.iterdir()) == []


def test_export_filters_still_select(tmp_path: Path) -> None:
    proc = bench("export", "--task", "quora", "--system", "copy_source", "--out", str(tmp_path / "r.csv"))
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) > 1 and all(",copy_source,quora," in line for line in lines[1:])
