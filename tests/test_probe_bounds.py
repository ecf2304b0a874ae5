"""#57 §5 and §7: every file the harness reads as text is checked before it is read, a stored output is cut only
when it is shown, and what used to be a traceback (a symlink loop, running out of memory, a number no plot can
draw) is one line naming the file and the fix.

The command-level probes run ``bench`` as a process on a case folder (tests/test_probe_faults.py's ``_work``);
FIFOs, sparse files and links live beside it in ``outside/`` (hashing the case folder must not open a FIFO), and
every probe checks that nothing in the case folder or the checkout changed. The rest is in-process and fast.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_bad_input_probe import DATA, REPO, RID, _state
from test_probe_faults import _check, _run, _unchanged, _work

from bench.api import textfile
from bench.api.text import SHOWN_CHARS, clip, clip_repr

OUTPUTS = textfile.OUTPUTS


# --- the checked reader -------------------------------------------------------------------------------------------
def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "fifo"
    path.parent.mkdir(exist_ok=True)
    os.mkfifo(path)
    return path


def _in_time(fn: Callable[[], object], seconds: float = 5.0) -> BaseException | None:
    """Run ``fn`` in a thread; fail the test when it has not returned within ``seconds`` (a FIFO hangs)."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # handed back to the test
            caught.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds} s"
    return caught[0] if caught else None


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "loop", "missing"])
def test_the_reader_names_what_a_path_is_without_reading_it(kind: str, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    path = {"fifo": lambda: _fifo(tmp_path), "device": lambda: Path("/dev/zero"),
            "directory": lambda: tmp_path / "outside", "missing": lambda: tmp_path / "outside" / "nope.txt",
            "loop": lambda: _loop(tmp_path / "outside" / "loop")}[kind]()
    exc = _in_time(lambda: textfile.read_bytes_checked(path, OUTPUTS))
    assert isinstance(exc, textfile.TextFileError), exc
    words = {"fifo": "a FIFO", "device": "a character device", "directory": "a directory",
             "loop": "symlink loop", "missing": "file not found"}[kind]
    assert str(exc).startswith(f"{path}: ") and words in str(exc) and "Fix:" in str(exc), exc
    assert (kind == "missing") == isinstance(exc, FileNotFoundError)


def _loop(path: Path) -> Path:
    path.symlink_to(path.name)
    return path


def test_the_caps_are_stated_and_checked_before_decoding(tmp_path: Path) -> None:
    small = textfile.Limits("outputs file", 100, 10, refuse_bom=True)
    path = tmp_path / "f.txt"
    path.write_bytes(b"x" * 101)
    with pytest.raises(textfile.TextFileError, match=r"101 bytes, over the 100 bytes cap for an outputs file"):
        textfile.read_bytes_checked(path, small)
    path.write_bytes(b"short\n" + b"y" * 11 + b"\nok\n")
    with pytest.raises(textfile.TextFileError, match=r"line 2 is 11 bytes, over the 10 bytes cap for one line"):
        textfile.read_bytes_checked(path, small)
    path.write_bytes(b"\xef\xbb\xbfa\nb\n")
    with pytest.raises(textfile.TextFileError, match="byte-order mark"):
        textfile.read_bytes_checked(path, small)
    assert textfile.read_bytes_checked(path, textfile.DATA) == b"\xef\xbb\xbfa\nb\n"  # pinned data: kept as is
    path.write_bytes(b"a\n" + b"z" * 10 + b"\n")
    assert textfile.read_bytes_checked(path, small) == b"a\n" + b"z" * 10 + b"\n"
    few = textfile.Limits("outputs file", 100, 10, max_lines=3)  # 256 MiB of newlines: 268 million lines
    path.write_bytes(b"\n" * 4)
    with pytest.raises(textfile.TextFileError, match="4 lines, over the 3-line cap"):
        textfile.read_bytes_checked(path, few)
    assert textfile.size_label(OUTPUTS.max_bytes) == "256 MiB"
    assert textfile.size_label(OUTPUTS.max_line or 0) == "64 KiB"


def test_a_bom_is_refused_alike_by_score_submit_and_compare(tmp_path: Path) -> None:
    """All three read outputs through bench.scoring.inputs.read_lines; a stored outputs file through read_text with
    the same caps: a BOM at the head can no longer change the first hypothesis, and so the score."""
    from bench.api.reading import UnreadableFile, read_text
    from bench.scoring import ScoringError
    from bench.scoring.inputs import read_hypotheses, read_lines

    path = tmp_path / "hyp.txt"
    path.write_bytes(b"\xef\xbb\xbfa question ?\nanother ?\n")
    for read in (lambda: read_lines(path), lambda: read_hypotheses(path, 2, "quora/test")):
        with pytest.raises(ScoringError, match="byte-order mark"):
            read()
    with pytest.raises(UnreadableFile, match="byte-order mark"):
        read_text(path, limits=OUTPUTS)  # bench.runs.lookup.outputs_text: show, compare of run ids, rescore


def test_a_stored_output_is_cut_when_shown_never_when_scored() -> None:
    long = "word " * 20_000
    assert clip("short") == "short" and clip_repr("short") == "'short'"
    shown = clip(long)
    assert shown.startswith(long[:SHOWN_CHARS]) and shown.endswith(f"[{len(long) - SHOWN_CHARS:,} more characters]")
    from bench.scoring.output_stats import degeneracy, output_stats, summary

    stats = output_stats([long] * 5, ["a", "b", "c", "d", "e"])
    assert stats["most_frequent"] == long.strip()  # the record keeps the statistic whole
    reasons = degeneracy(stats)
    for text in (summary(stats), reasons[0]):  # every message that quotes the output quotes it cut
        assert len(text) < SHOWN_CHARS + 400 and "more characters]" in text
    assert all(len(text) < SHOWN_CHARS + 400 for text in reasons)


def test_bench_show_cuts_a_long_output(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (REPO / "results" / f"{RID}.json").is_file() or not DATA.is_dir():
        pytest.skip("needs the committed record and the data")
    from typer.testing import CliRunner

    from bench.cli import app
    from bench.runs import lookup

    huge = "x" * 2_000_000
    monkeypatch.setattr(lookup, "outputs_of", lambda rec: [huge] * 3)
    started = time.monotonic()
    result = CliRunner().invoke(app, ["show", RID, "-n", "2"])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 30
    assert "more characters]" in result.output and len(result.output) < 20_000


# --- export cells ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_export_neutralises_formula_cells(fmt: str, tmp_path: Path) -> None:
    import pandas as pd

    from bench.report.frame import export

    df = pd.DataFrame({"run_id": ["r1", "r2"], "out_most_frequent": ["=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)"],
                       "bleu4": [-1.5, 2.0], "system": ["+cmd", "-x"]})
    out = export(df, tmp_path / f"out.{fmt}", fmt)
    back = {"csv": pd.read_csv, "parquet": pd.read_parquet,
            "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt](out)
    if fmt == "jsonl":  # not opened by spreadsheets: the text as it is
        assert list(back["out_most_frequent"]) == list(df["out_most_frequent"])
        return
    assert list(back["out_most_frequent"]) == ["'=HYPERLINK(\"http://x\",\"y\")", "'@SUM(A1)"]
    assert list(back["system"]) == ["'+cmd", "'-x"] and list(back["bleu4"]) == [-1.5, 2.0]


# --- the classes behind the tracebacks --------------------------------------------------------------------------------
def test_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    from bench.api.paths import PathLoop, resolved

    loop = _loop(tmp_path / "loop")
    with pytest.raises(PathLoop, match=r"--reports-dir .*loop.*\(a link loop\)\. Fix:"):
        resolved(loop, "--reports-dir")
    assert resolved(tmp_path, "--x") == tmp_path.resolve()


def test_a_number_no_plot_can_draw_names_the_summary() -> None:
    from bench.report import plots

    summary = {"system": "s", "task": "t", "budget": "cpu", "metric": "bleu4", "recipe": "r", "dev_examples": 5,
               "split": "dev", "pick": None,
               "points": [{"lr": 1e-3, "updates": 10, "score": 1e308, "degenerate": False, "run_id": "x"}]}
    with pytest.raises(plots.Unplottable) as err:
        plots.calibration_data(summary)
    assert str(err.value).startswith("results/calibration/s--t--cpu.json: ") and "Fix:" in str(err.value)
    assert str(err.value.at("/elsewhere")).startswith("/elsewhere/calibration/s--t--cpu.json: ")
    summary["points"][0]["score"] = float("nan")
    with pytest.raises(plots.Unplottable):
        plots.calibration_data(summary)


@pytest.mark.parametrize("error", [MemoryError, RuntimeError("Symlink loop from '/x/loop'")])
def test_bench_turns_the_last_classes_into_one_line(error: BaseException, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import bench.cli as cli

    def boom() -> None:
        raise error

    monkeypatch.setattr(cli, "app", boom)
    with pytest.raises(SystemExit) as code:
        cli.main()
    err = capsys.readouterr().err
    assert code.value.code in (1, 2) and "error:" in err and "Fix:" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 3  # one message, wrapped at most by the console


# --- bench as a process --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probe:
    id: str
    args: tuple[str, ...]  # {work}: the case folder; {outside}: beside it (FIFOs, sparse files, links)
    names: str
    codes: tuple[int, ...] = (2,)
    not_names: str = "file not found"
    make: Callable[[Path, Path], None] | None = None


def _long_line(work: Path, outside: Path) -> None:
    (outside / "long.txt").write_text("x" * 100_000 + "\n")


def _sparse(work: Path, outside: Path) -> None:
    with open(outside / "huge.txt", "wb") as fh:
        fh.truncate(300 << 20)  # 300 MiB that take no disk: the cap is read off the size, nothing is read


def _bom(work: Path, outside: Path) -> None:
    (outside / "bom.txt").write_bytes(b"\xef\xbb\xbf" + (work / "hyp.txt").read_bytes())


def _fifo_outside(work: Path, outside: Path) -> None:
    os.mkfifo(outside / "fifo")


def _loop_outside(work: Path, outside: Path) -> None:
    _loop(outside / "loop")


def _unplottable(work: Path, outside: Path) -> None:
    """A calibration summary (copied from the checkout) whose first point scores 1e308."""
    src = sorted((REPO / "results" / "calibration").glob("*--cpu.json"))[0]
    data = json.loads(src.read_text())
    data["points"][0]["score"] = 1e308
    (work / "results" / "calibration").mkdir(exist_ok=True)
    (work / "results" / "calibration" / src.name).write_text(json.dumps(data))


SCORE = ("score", "--task", "quora", "--recipe", "mist-quora", "--hyp")
SUBMIT = ("submit", "--name", "mine", "--task", "quora", "--results-dir", "{work}/results", "--hyp")
PROBES = [
    Probe("score a FIFO", (*SCORE, "{outside}/fifo"), "a FIFO", make=_fifo_outside),
    Probe("score /dev/zero", (*SCORE, "/dev/zero"), "a character device"),
    Probe("score a directory", (*SCORE, "{work}/results"), "a directory"),
    Probe("score a 100 KB line", (*SCORE, "{outside}/long.txt"), "line 1 is 100,000 bytes, over the 64 KiB cap",
          make=_long_line),
    Probe("score a 300 MiB file", (*SCORE, "{outside}/huge.txt"), "over the 256 MiB cap", make=_sparse),
    Probe("score a BOM", (*SCORE, "{outside}/bom.txt"), "byte-order mark", make=_bom),
    Probe("compare a FIFO", ("compare", "{outside}/fifo", "{work}/hyp.txt", "--task", "quora"), "a FIFO",
          make=_fifo_outside),
    Probe("compare /dev/zero", ("compare", "/dev/zero", "{work}/hyp.txt", "--task", "quora"), "a character device"),
    Probe("compare a BOM", ("compare", "{outside}/bom.txt", "{work}/hyp.txt", "--task", "quora"), "byte-order mark",
          make=_bom),
    Probe("submit a FIFO", (*SUBMIT, "{outside}/fifo"), "a FIFO", make=_fifo_outside),
    Probe("submit /dev/zero", (*SUBMIT, "/dev/zero"), "a character device"),
    Probe("submit a directory", (*SUBMIT, "{work}/results"), "a directory"),
    Probe("submit a BOM", (*SUBMIT, "{outside}/bom.txt"), "byte-order mark", make=_bom),
    Probe("table into a symlink loop", ("table", "--results-dir", "{work}/results", "--reports-dir",
                                        "{outside}/loop"), "link loop", make=_loop_outside),
    Probe("table of a calibration score 1e308", ("table", "--results-dir", "{work}/results", "--reports-dir",
                                                 "{work}/reports", "--prune"), "calibration", make=_unplottable),
]


@pytest.mark.slow
@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_a_bad_input_is_one_line_fast_and_writes_nothing(probe: Probe, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("sentinel\n")
    if probe.make is not None:
        probe.make(work, outside)
    args = [a.replace("{work}", str(work)).replace("{outside}", str(outside)) for a in probe.args]
    before = _state(work)
    started = time.monotonic()
    proc = _run(args, work, tmp_path, timeout=120)  # a FIFO that hangs fails here
    _check(proc, probe.codes, probe.names)
    out = proc.stdout + proc.stderr
    assert probe.not_names not in out, out[-2000:]
    assert time.monotonic() - started < 60
    _unchanged(before, _state(work))
    assert victim.read_text() == "sentinel\n"
    shutil.rmtree(outside)
