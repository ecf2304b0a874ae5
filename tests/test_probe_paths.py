"""#46 §1's probe: paths are the harness's, not the record's.

Each case runs ``bench`` against a copy of a committed record (and its outputs) in its own folder, with a
record, an ``--out`` or a ``--reports-dir`` that points where it must not. A victim file outside the tree must
not be deleted, the sentinel line in it must appear in no output, the exit code is the one for bad input, the
message names the field or file, and results/, reports/, the caches and the case's folder are byte-identical
afterwards (the pattern of ``tests/test_bad_input_probe.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.data.cache import cache_root
from bench.store.integrity import sealed

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SPLITS = cache_root()
RID = "copy_source--quora--test--cpu--s42--af654a53"  # committed: copy_source on 2,000 Quora test examples
SUB = "nqg_du2017--squad_qg--test--external--589acdee"  # committed: a --no-copy submission (data folder)
REFILE = "erniegen_base--squad_qg_reversed--test--cpu--s42--278f9138"  # `refile --set steps=6000` succeeds
SENTINEL = "SENTINEL-46-never-read-out"

pytestmark = pytest.mark.slow  # about 40 `bench` processes


def _tree(root: Path, sizes_under: Path | None = None) -> dict[str, object]:
    """Every entry under ``root`` (links not followed): a file's sha256 (size and mtime under ``sizes_under``)."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = "dir"
            elif sizes_under is not None and sizes_under in path.parents:
                st = path.stat()
                out[rel] = (st.st_size, st.st_mtime_ns)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _state(tmp: Path) -> dict[str, object]:
    return {"results/": _tree(REPO / "results"), "reports/": _tree(REPO / "reports"),
            "the case's folders": _tree(tmp, sizes_under=tmp / "work" / "cache")}


def _copy_record(run_id: str, results: Path, with_outputs: bool = True) -> Path:
    """A committed record (and its outputs) copied into ``results``; returns the record's copy."""
    (results / "outputs").mkdir(parents=True, exist_ok=True)
    dest = results / f"{run_id}.json"
    shutil.copy2(REPO / "results" / f"{run_id}.json", dest)
    if with_outputs and (REPO / "results" / "outputs" / f"{run_id}.txt").is_file():
        shutil.copy2(REPO / "results" / "outputs" / f"{run_id}.txt", results / "outputs" / f"{run_id}.txt")
    return dest


def _edit(record: Path, **outputs: object) -> None:
    """The record's ``outputs`` edited, and sealed again (a forger's fresh digest, #57): only its paths are probed."""
    rec = json.loads(record.read_text(encoding="utf-8"))
    rec["outputs"].update(outputs)
    record.write_text(json.dumps(sealed(rec), indent=2), encoding="utf-8")


@pytest.fixture(scope="module", autouse=True)
def _built_splits() -> None:
    """Build the probed tasks' splits first, so no case's cache changes because it built one."""
    if DATA.is_dir():
        from bench.data import TASKS, load_split

        for task in ("quora", "squad_qg"):
            for split in TASKS.get(task).splits:
                load_split(task, split)


@dataclass
class Case:
    """A prepared folder: ``work/results`` (records), ``work/cache`` ($BENCH_CACHE), ``outside/`` (victims)."""

    tmp: Path
    work: Path
    results: Path
    outside: Path
    victim: Path

    def bench(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "BENCH_CACHE": str(self.work / "cache"), "COLUMNS": "400",
               "HOME": str(self.tmp / "home")}
        env.pop("BENCH_INCLUDE", None)
        return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)


@pytest.fixture()
def case(tmp_path: Path) -> Case:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work, outside = tmp_path / "work", tmp_path / "outside"
    results = work / "results"
    _copy_record(RID, results)
    (work / "cache").mkdir()
    if SPLITS.is_dir():
        shutil.copytree(SPLITS, work / "cache" / "splits", copy_function=os.link)
    (outside / "outputs").mkdir(parents=True)
    victim = outside / "victim.txt"
    victim.write_text(f"{SENTINEL}\n" * 2000, encoding="utf-8")  # as many lines as the record's outputs
    (outside / "outputs" / f"{RID}.txt").write_text(f"{SENTINEL}\n" * 2000, encoding="utf-8")
    return Case(tmp_path, work, results, outside, victim)


def check(case: Case, proc: subprocess.CompletedProcess[str], code: int, names: str,
          before: dict[str, object]) -> None:
    """The probe's checks: exit code, no traceback, the message names ``names``, nothing read out or changed."""
    out = proc.stdout + proc.stderr
    flat = " ".join(out.split())
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == code, f"exit {proc.returncode}, expected {code}:\n{out[-3000:]}"
    assert names in flat, f"the message does not name {names!r}:\n{out[-3000:]}"
    assert SENTINEL not in out and "root:x:0:0" not in out, "a file outside the results folder was read out"
    assert case.victim.is_file() and (case.outside / "outputs" / f"{RID}.txt").is_file(), "a victim was deleted"
    after = _state(case.tmp)
    changed = {k: sorted(set(before[k].items()) ^ set(after[k].items()))[:5]  # type: ignore[attr-defined]
               for k in before if before[k] != after[k]}
    assert not changed, f"written: {changed}"


# --- a record's stored outputs.path is never followed out of its folder ---------------------------------------
def _absolute(c: Case, rid: str) -> None:
    _edit(c.results / f"{rid}.json", path=str(c.victim))


def _climbing(c: Case, rid: str) -> None:
    _edit(c.results / f"{rid}.json", path=os.path.relpath(c.victim, REPO))


def _climbing_with_the_right_name(c: Case, rid: str) -> None:
    (c.outside / "outputs" / f"{rid}.txt").write_text(f"{SENTINEL}\n", encoding="utf-8")
    _edit(c.results / f"{rid}.json", path=os.path.relpath(c.outside / "outputs" / f"{rid}.txt", REPO))


def _etc_passwd(c: Case, rid: str) -> None:
    _edit(c.results / f"{rid}.json", path="../../../../../../../../etc/passwd")


def _outputs_file_is_a_link(c: Case, rid: str) -> None:
    own = c.results / "outputs" / f"{rid}.txt"
    own.unlink()
    own.symlink_to(c.victim)


def _outputs_folder_is_a_link(c: Case, rid: str) -> None:
    for p in (c.results / "outputs").iterdir():
        shutil.copy2(p, c.outside / "outputs" / p.name)
    shutil.rmtree(c.results / "outputs")
    (c.results / "outputs").symlink_to(c.outside / "outputs")


def _no_copy_outside_the_data(c: Case, rid: str) -> None:
    _edit(c.results / f"{rid}.json", path=str(c.victim))


#: each hostile record: how it is made from a copy of a committed one, and whether it starts as a submission
HOSTILE: dict[str, tuple[Callable[[Case, str], None], bool]] = {
    "absolute": (_absolute, False),
    "climbing": (_climbing, False),
    "climbing, right name": (_climbing_with_the_right_name, False),
    "/etc/passwd": (_etc_passwd, False),
    "outputs file is a link": (_outputs_file_is_a_link, False),
    "outputs folder is a link": (_outputs_folder_is_a_link, False),
    "--no-copy outside the data": (_no_copy_outside_the_data, True),
}

COMMANDS: dict[str, Callable[[Case, str], tuple[str, ...]]] = {
    "show": lambda c, rid: ("show", rid, "--results-dir", str(c.results)),
    "compare": lambda c, rid: ("compare", rid, rid, "--results-dir", str(c.results)),
    "export": lambda c, rid: ("export", "--results-dir", str(c.results), "--out", str(c.work / "out.csv")),
    "table": lambda c, rid: ("table", "--results-dir", str(c.results), "--reports-dir", str(c.work / "reports")),
    "refile": lambda c, rid: ("refile", rid, "--set", "steps=6000", "--results-dir", str(c.results)),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_stored_path_is_never_followed(case: Case, hostile: str, command: str) -> None:
    prepare, submission = HOSTILE[hostile]
    rid = SUB if submission else REFILE if command == "refile" else RID
    if rid != RID:
        _copy_record(rid, case.results)
    prepare(case, rid)
    before = _state(case.tmp)
    proc = case.bench(*COMMANDS[command](case, rid))
    # refile checks a record like every reader does before looking at its kind: a submission whose stored path
    # leaves the data folder is refused for that field, not only for not being a run
    check(case, proc, 2, "outputs.path", before)


def test_an_absolute_path_with_the_right_name_reads_the_record_s_own_outputs(case: Case) -> None:
    """A label is not followed: the record's own copy is read, not the sentinel file its stored path names."""
    _edit(case.results / f"{RID}.json", path=str(case.outside / "outputs" / f"{RID}.txt"))
    before = _state(case.tmp)
    proc = case.bench("show", RID, "-n", "2", "--results-dir", str(case.results))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert SENTINEL not in proc.stdout + proc.stderr
    assert _state(case.tmp) == before


def test_refile_of_a_scratch_copy_moves_only_the_copy_s_outputs(case: Case) -> None:
    """The issue's case: refile on a copy of a committed record deleted the checkout's outputs file."""
    _copy_record(REFILE, case.results)
    before = _state(case.tmp)
    checkout = _tree(REPO / "results")
    proc = case.bench("refile", REFILE, "--set", "steps=6000", "--results-dir", str(case.results))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert _tree(REPO / "results") == checkout and (REPO / "results" / "outputs" / f"{REFILE}.txt").is_file()
    assert not (case.results / "outputs" / f"{REFILE}.txt").exists()  # the copy's own outputs moved ...
    moved = [p for p in (case.results / "outputs").iterdir() if p.name.startswith("erniegen_base")]
    assert len(moved) == 1 and before["the case's folders"] != _state(case.tmp)["the case's folders"]


def test_refile_of_a_copy_without_its_outputs_reads_nothing_of_the_checkout(case: Case) -> None:
    _copy_record(REFILE, case.results, with_outputs=False)
    before = _state(case.tmp)
    proc = case.bench("refile", REFILE, "--set", "steps=6000", "--results-dir", str(case.results))
    check(case, proc, 2, "missing", before)


def test_submit_no_copy_of_a_file_outside_the_data_folder_is_refused(case: Case) -> None:
    before = _state(case.tmp)
    proc = case.bench("submit", "--name", "probe_sub", "--task", "quora", "--hyp", str(case.victim), "--no-copy",
                      "--results-dir", str(case.results))
    check(case, proc, 2, "--no-copy", before)


# --- --out, --reports-dir and --prune never overwrite or delete what the command did not write -----------------
def test_export_never_replaces_a_record(case: Case) -> None:
    before = _state(case.tmp)
    for out in (case.results / f"{RID}.json", REPO / "results" / f"{RID}.json", case.results / "new.csv",
                case.results / "outputs" / "x.csv"):
        for force in ((), ("--force",)):
            proc = case.bench("export", "--results-dir", str(case.results), "--out", str(out), *force)
            check(case, proc, 2, "inside the results folder", before)


def test_export_into_another_folder_of_records_is_refused(case: Case) -> None:
    other = case.work / "other"
    _copy_record(SUB, other, with_outputs=False)
    (other / "outputs").rmdir()
    link = case.work / "link.csv"
    link.symlink_to(case.results / f"{RID}.json")
    before = _state(case.tmp)
    for out in (other / "r.csv", link):
        proc = case.bench("export", "--results-dir", str(case.results), "--out", str(out), "--force")
        check(case, proc, 2, "inside the results folder", before)


def test_export_refuses_an_existing_file_unless_forced(case: Case) -> None:
    out = case.work / "mine.csv"
    out.write_text("my own table\n", encoding="utf-8")
    before = _state(case.tmp)
    proc = case.bench("export", "--results-dir", str(case.results), "--out", str(out))
    check(case, proc, 2, "--force", before)
    proc = case.bench("export", "--results-dir", str(case.results), "--out", str(out), "--force")
    assert proc.returncode == 0 and out.read_text(encoding="utf-8").startswith("run_id"), proc.stderr[-2000:]


@pytest.mark.parametrize("where", ["the results folder", "inside it", "above it"])
def test_reports_dir_is_never_a_results_folder(case: Case, where: str) -> None:
    reports = {"the results folder": case.results, "inside it": case.results / "reports", "above it": case.work}
    before = _state(case.tmp)
    proc = case.bench("table", "--results-dir", str(case.results), "--reports-dir", str(reports[where]))
    check(case, proc, 2, "--reports-dir", before)


def test_reports_dir_holding_the_checkout_s_results_is_refused(case: Case) -> None:
    before = _state(case.tmp)
    proc = case.bench("table", "--results-dir", str(case.results), "--reports-dir", str(REPO))
    check(case, proc, 2, "results", before)


def test_table_replaces_and_prunes_only_the_reports_it_wrote(tmp_path: Path) -> None:
    """A record or a hand-written page named like a report is left alone: prune is by name and content."""
    from bench.report import render_all
    from bench.store.targets import UnsafeTargetError

    results, reports = tmp_path / "results", tmp_path / "reports"
    shutil.copytree(REPO / "tests" / "fixtures" / "records", results)
    render_all(results, reports)
    (reports / "pareto-gone_task.json").write_text("[1, 2]\n", encoding="utf-8")  # by name a report, not by content
    (reports / "mist-table99.md").write_text("my notes\n", encoding="utf-8")  # a hand-written file
    (reports / "calibration-x--y--cpu.png").write_text("not a png\n", encoding="utf-8")
    keep = _tree(reports)
    render_all(results, reports, prune=True)
    assert {k: v for k, v in _tree(reports).items() if k in keep} == keep
    mine = reports / "index.html"
    mine.write_text("my own page\n", encoding="utf-8")  # not `bench table`'s: never replaced
    with pytest.raises(UnsafeTargetError, match="index.html"):
        render_all(results, reports, prune=True)
    assert mine.read_text(encoding="utf-8") == "my own page\n"
    mine.unlink()
    shutil.copy2(next(results.glob("*.json")), reports / "pareto-x.json")  # a record: reports/ is evidence now
    keep = _tree(reports)
    with pytest.raises(UnsafeTargetError, match="results folder"):
        render_all(results, reports, prune=True)
    assert _tree(reports) == keep


# --- temporary files a killed write left ----------------------------------------------------------------------
def test_a_killed_write_s_temporary_file_is_removed_by_the_next_write(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from bench.api import tempfiles
    from bench.api.atomic import write_json_atomic

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    tag = tempfiles.host_tag()
    left = tmp_path / f".r.json.{pid}.{tag}.0123abcd.tmp.json"  # kill -9 mid-write
    live = tmp_path / f".r.json.{os.getpid()}.{tag}.4567abcd.tmp.json"  # a write still going on
    old_style = tmp_path / ".r.json.89abcdef.tmp.json"  # an older bench's: whose, nobody can tell
    mine = tmp_path / ".notes.tmp"  # not a temporary file of ours
    for p in (left, live, old_style, mine):
        p.write_text("{", encoding="utf-8")
    write_json_atomic(tmp_path / "r.json", {"ok": 1})
    assert not left.exists() and live.exists() and old_style.exists() and mine.exists()
    assert str(old_style) in capsys.readouterr().err  # named, not silently left
    os.utime(old_style, (0, 0))  # a day later
    tempfiles._swept.clear()
    write_json_atomic(tmp_path / "r.json", {"ok": 2})
    assert not old_style.exists() and live.exists() and mine.exists()
