"""#57, a hostile pass after the store landed (62 probes, 5 not clean); each finding is a test here.

- The compare cache was read with no bounds and no shape check: an entry that is a FIFO hung `bench compare`, one
  linked to /dev/zero read 20 GB, and a re-hashed entry of the wrong type was a traceback.
- A long free-text field (a forger's 200 kB, resealed) stalled `bench table`: the run-id pattern that finds the
  runs a report shows was searched over the whole text with lazy groups, quadratic time.
- `bench show` / `compare` by run id followed a record that is a link out of its results folder (ls, leaderboard,
  export and table refused it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "records" / "mist_minilm_l6--squad_qg--test--cpu--s42--fixture01.json"


def _result() -> dict:
    """A compare result shaped as bench.scoring.compare returns it."""
    return {"recipe": "nqg", "signature": "s", "n_items": 3, "delta_is": "a - b",
            "a": {"signature": "s", "metrics": {"bleu4": 12.5}}, "b": {"signature": "s", "metrics": {"bleu4": 10.0}},
            "metrics": {"bleu4": {"a": 12.5, "b": 10.0, "delta": 2.5, "p_bootstrap": 0.01, "p_ar": 0.02,
                                  "ci95_a_minus_b": [1.0, 4.0]}}}


def _entry(path: Path, result: dict) -> None:
    from bench.scoring.compare_cache import _result_sha

    path.write_text(json.dumps({"key": path.stem, "sha256": _result_sha(result), "result": result}), encoding="utf-8")


def test_an_intact_compare_cache_entry_is_read(tmp_path: Path) -> None:
    from bench.scoring.compare_cache import read_entry

    _entry(tmp_path / "e.json", _result())
    assert read_entry(tmp_path / "e.json") == _result()


@pytest.mark.parametrize("forge", ["string score", "delta not a - b", "p-value 7", "ci reversed", "nan",
                                   "no metrics"])
def test_a_re_hashed_compare_cache_entry_that_is_not_a_result_is_a_miss(tmp_path: Path, forge: str) -> None:
    """A forger can recompute the entry's own hash; the shape and the numbers still have to hold."""
    from bench.scoring.compare_cache import read_entry

    r = _result()
    m = r["metrics"]["bleu4"]
    if forge == "string score":
        m["a"] = "x"
    elif forge == "delta not a - b":
        m["delta"] = -50.0
    elif forge == "p-value 7":
        m["p_ar"] = 7
    elif forge == "ci reversed":
        m["ci95_a_minus_b"] = [4.0, 1.0]
    elif forge == "nan":
        r["a"]["metrics"]["bleu4"] = float("nan")
    else:
        del r["metrics"]
    _entry(tmp_path / "e.json", r)
    assert read_entry(tmp_path / "e.json") is None


def test_a_compare_cache_entry_that_is_a_fifo_or_a_device_is_a_miss_at_once(tmp_path: Path) -> None:
    from bench.scoring.compare_cache import read_entry

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert read_entry(fifo) is None  # no open() that waits for a writer
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    assert read_entry(zero) is None  # not read at all: a device
    assert read_entry(tmp_path) is None  # a directory


def test_run_ids_in_a_report_are_found_in_linear_time_whatever_the_text() -> None:
    """The texts a forger's free-text field made (each ran for minutes through the old search)."""
    from bench.report.build import run_ids_in

    for hostile in ("W" * 200_000, "ab--" * 50_000, "x--y " * 40_000, "a-" * 100_000):
        assert list(run_ids_in(hostile)) == []
    text = ("see `fairseq_nat--quora--test--cpu--s42--56d34669` and ../results/copy_source--quora--test--cpu--"
            "af654a53.json (x) <code>nqg_du2017--squad_qg--test--external--589acdee</code> " + "W" * 100_000)
    assert [m.group(1) for m in run_ids_in(text)] == ["56d34669", "af654a53", "589acdee"]


def test_show_by_run_id_refuses_a_record_that_links_out_of_its_folder(tmp_path: Path) -> None:
    from bench.api.errors import UserError
    from bench.runs.lookup import find_record

    results, outside = tmp_path / "results", tmp_path / "elsewhere"
    results.mkdir()
    outside.mkdir()
    shutil.copy(FIXTURE, outside / FIXTURE.name)
    (results / FIXTURE.name).symlink_to(outside / FIXTURE.name)
    with pytest.raises(UserError, match="link out of its folder"):
        find_record(FIXTURE.stem, results)
    with pytest.raises(UserError, match="link out of its folder"):
        find_record("fixture01", results)  # the short id the pages show


SWEEP = ROOT / "tests" / "fixtures" / "sweep" / "squad_qg--test--smoke--sweep--20261129T081447--e59464ea.json"


def test_a_record_copied_under_another_name_is_refused(tmp_path: Path) -> None:
    """One id is one file: a run or sweep record copied under a new name would be counted twice on the boards
    and missed by `bench show ID`; the store names the file and the rename."""
    from bench.store import kinds
    from bench.store.records import RecordError, load_records
    from bench.store.sweeps import SweepRecordError, load_sweep_records

    results = tmp_path / "results"
    (results / "sweep").mkdir(parents=True)
    shutil.copy(FIXTURE, results / "a-second-copy.json")
    with pytest.raises(RecordError, match=f"Rename it to {FIXTURE.name}"):
        load_records(results)
    with pytest.raises(RecordError, match="one id is one file"):
        kinds.read(results, results / "a-second-copy.json")  # what `bench table --check` reads each file with
    shutil.copy(SWEEP, results / "sweep" / "copy.json")
    with pytest.raises(SweepRecordError, match=f"Rename it to {SWEEP.name}"):
        load_sweep_records(results)


@pytest.mark.parametrize("where", ["systems key", "spec.systems", "spec.baseline"])
def test_a_sweep_system_name_that_is_a_path_is_refused_even_resealed(tmp_path: Path, where: str) -> None:
    """Every system name a sweep or latency record carries is an identifier (a report builds names from them)."""
    from bench.store.integrity import sealed, unsealed
    from bench.store.sweeps import SweepRecordError, read_sweep_record

    rec = unsealed(json.loads(SWEEP.read_text(encoding="utf-8")))
    name = next(iter(rec["systems"]))
    if where == "systems key":
        rec["systems"]["../../x"] = rec["systems"].pop(name)
    elif where == "spec.systems":
        rec["spec"]["systems"][0] = "../../x"
    else:
        rec["spec"]["baseline"] = "a/b"
    (tmp_path / SWEEP.name).write_text(json.dumps(sealed(rec)), encoding="utf-8")
    with pytest.raises(SweepRecordError, match="not an identifier"):
        read_sweep_record(tmp_path / SWEEP.name)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_outputs_replaced_by_a_fifo_or_a_folder_are_named_not_called_missing(tmp_path: Path, kind: str) -> None:
    """A record's outputs that are there but no file are named as what they are, by the boards' loader and by
    `bench show`'s reader, and nothing opens the FIFO (it would hang)."""
    from bench.runs.lookup import RunLookupError, outputs_text
    from bench.store.records import OutputsChangedError, load_records, outputs_file, read_record

    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    shutil.copy(FIXTURE, results / FIXTURE.name)
    rec = read_record(results / FIXTURE.name)
    out = outputs_file(rec, results / FIXTURE.name)
    assert out is not None and out.parent == results / "outputs"
    os.mkfifo(out) if kind == "fifo" else out.mkdir()
    what = "a FIFO" if kind == "fifo" else "a directory"
    with pytest.raises(OutputsChangedError, match=what):
        load_records(results)
    with pytest.raises(RunLookupError, match=what):
        outputs_text(rec)


def test_a_calibration_summary_whose_point_score_differs_from_its_record_is_refused(tmp_path: Path) -> None:
    """The digest is a checksum anyone can recompute: a summary's copied point score is checked against the point's
    own record when both are there, at load (not only by --deep)."""
    from bench.store.calibration import CalibrationSummaryError, load_summaries
    from bench.store.integrity import sealed, unsealed

    name = "bert2bert_minilm_l6--quora--cpu.json"
    cal = tmp_path / "results" / "calibration"
    cal.mkdir(parents=True)
    summary = unsealed(json.loads((ROOT / "results" / "calibration" / name).read_text(encoding="utf-8")))
    point = summary["points"][0]["run_id"]
    shutil.copy(ROOT / "results" / "calibration" / f"{point}.json", cal / f"{point}.json")
    (cal / name).write_text(json.dumps(sealed(summary)), encoding="utf-8")
    assert load_summaries(tmp_path / "results")[0]["points"][0]["score"] == summary["points"][0]["score"]
    summary["points"][0]["score"] += 5.0  # the pick too: the summary holds together, only its point record differs
    if summary["pick"] and summary["pick"]["run_id"] == point:
        summary["pick"]["score"] = summary["points"][0]["score"]
    (cal / name).write_text(json.dumps(sealed(summary)), encoding="utf-8")
    with pytest.raises(CalibrationSummaryError, match=f"point {point} says bleu4"):
        load_summaries(tmp_path / "results")
