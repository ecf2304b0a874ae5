"""#57, a third hostile pass (after one id is one file, the point cross-check and the outputs-as-FIFO fixes); each
finding is a test here, with victims outside the tree.

- JSON the parser takes but the harness cannot stand behind: a key given twice (``json`` keeps the last value, a
  person reading the file may see the first), an integer of 5000 digits (Python refuses to read it: the message
  did not name the file) and a lone ``\\ud800`` escape (the digest could not encode it: a bare codec error).
- One sweep is one file, one block is one file: a calibration summary or an ordering copied under another name was
  read twice (drawn twice, counted twice).
- The summary/point cross-check could be sidestepped: renaming the summary's recipe or metric to one its records
  lack skipped the comparison (scores +30 accepted), and a point borrowed from another system's sweep was accepted.
- A results sub-folder that is a link out of the results folder (``results/significance -> /elsewhere``) was read
  (and would have been written) through the link.
- ``bench table --check --reports-dir FIFO`` listed every report as "missing" instead of naming the FIFO.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "records" / "mist_minilm_l6--squad_qg--test--cpu--s42--fixture01.json"
CAL = ROOT / "results" / "calibration"
SUMMARY = "bert2bert_minilm_l6--quora--cpu.json"
ORDERING = ROOT / "results" / "ordering" / "mist-table3--quora--cpu.json"


@pytest.mark.parametrize("text, said", [
    ('{"a": 1, "a": 2}', "the key 'a' is given twice"),
    ('{"a": ' + "9" * 5000 + "}", "an integer of more than"),
    ('{"a": "\\ud800"}', "lone UTF-16 surrogate"),
])
def test_json_the_harness_cannot_stand_behind_is_one_line_naming_the_file(tmp_path: Path, text: str,
                                                                           said: str) -> None:
    from bench.api.reading import UnreadableFile, read_json
    from bench.store.records import RecordError, load_records

    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UnreadableFile, match=said):
        read_json(path)
    results = tmp_path / "results"
    results.mkdir()
    body = FIXTURE.read_text(encoding="utf-8")
    (results / FIXTURE.name).write_text(body.replace("{", "{" + text[1:-1] + ",", 1), encoding="utf-8")
    with pytest.raises(RecordError, match=f"{FIXTURE.name}: not valid JSON for the harness"):
        load_records(results)


def test_json_the_harness_reads_is_unchanged() -> None:
    from bench.api.reading import parse_json

    assert parse_json('{"a": "\\ud83d\\ude00", "b": {"a": 1}, "c": [{"a": 2}]}', "x") == {
        "a": "\U0001f600", "b": {"a": 1}, "c": [{"a": 2}]}


def _summary_folder(tmp_path: Path, n_points: int = 1) -> tuple[Path, dict]:
    from bench.store.integrity import unsealed

    cal = tmp_path / "results" / "calibration"
    cal.mkdir(parents=True)
    summary = unsealed(json.loads((CAL / SUMMARY).read_text(encoding="utf-8")))
    for point in summary["points"][:n_points]:
        shutil.copy(CAL / f"{point['run_id']}.json", cal / f"{point['run_id']}.json")
    return cal, summary


def _write(path: Path, rec: dict) -> None:
    from bench.store.integrity import sealed

    path.write_text(json.dumps(sealed(rec)), encoding="utf-8")


def test_a_summary_copied_under_another_name_is_refused(tmp_path: Path) -> None:
    from bench.store import kinds
    from bench.store.calibration import CalibrationSummaryError, load_summaries

    cal, summary = _summary_folder(tmp_path, 0)
    _write(cal / SUMMARY, summary)
    assert len(load_summaries(tmp_path / "results")) == 1
    _write(cal / "other_system--quora--cpu.json", summary)
    with pytest.raises(CalibrationSummaryError, match=f"one sweep is one file. Rename it to {SUMMARY}"):
        load_summaries(tmp_path / "results")
    with pytest.raises(CalibrationSummaryError, match="one sweep is one file"):
        kinds.read(tmp_path / "results", cal / "other_system--quora--cpu.json")


def test_an_ordering_copied_under_another_name_is_refused(tmp_path: Path) -> None:
    from bench.store.orderings import OrderingError, load_orderings

    folder = tmp_path / "results" / "ordering"
    folder.mkdir(parents=True)
    shutil.copy(ORDERING, folder / ORDERING.name)
    assert len(load_orderings(tmp_path / "results")) == 1
    shutil.copy(ORDERING, folder / "mist-table9--quora--cpu.json")
    with pytest.raises(OrderingError, match="one block is one file"):
        load_orderings(tmp_path / "results")
    (folder / "mist-table9--quora--cpu.json").unlink()
    rec = json.loads(ORDERING.read_text(encoding="utf-8"))
    shutil.copy(ORDERING, folder / f"mist-table3--quora--{rec['task']}--cpu.json")  # the other name bench order uses
    with pytest.raises(OrderingError, match="orders the same block as"):
        load_orderings(tmp_path / "results")


@pytest.mark.parametrize("field", ["metric", "recipe"])
def test_renaming_a_summary_s_metric_does_not_skip_the_point_check(tmp_path: Path, field: str) -> None:
    """Renamed to a metric (or recipe) its points' records lack, the scores could be anything: refused."""
    from bench.store.calibration import CalibrationSummaryError, best_point, load_summaries

    cal, summary = _summary_folder(tmp_path)
    summary[field] = "bleu9" if field == "metric" else "no_such_recipe"
    for point in summary["points"]:
        if point["score"] is not None:
            point["score"] = min(99.0, point["score"] + 30)
    summary["pick"] = best_point(summary["points"])
    _write(cal / SUMMARY, summary)
    with pytest.raises(CalibrationSummaryError, match="has no bleu9 under|has no bleu4 under no_such_recipe"):
        load_summaries(tmp_path / "results")


def test_a_point_borrowed_from_another_sweep_is_refused(tmp_path: Path) -> None:
    from bench.store.calibration import CalibrationSummaryError, best_point, load_summaries
    from bench.store.integrity import unsealed

    cal, summary = _summary_folder(tmp_path, 0)
    other = unsealed(json.loads((CAL / "copybert_nocopy--squad_qg--cpu.json").read_text(encoding="utf-8")))
    borrowed = dict(other["points"][0])
    shutil.copy(CAL / f"{borrowed['run_id']}.json", cal / f"{borrowed['run_id']}.json")
    summary["points"] = [*summary["points"], borrowed]
    summary["pick"] = best_point(summary["points"])
    _write(cal / SUMMARY, summary)
    with pytest.raises(CalibrationSummaryError, match="is a run of system 'copybert_nocopy'"):
        load_summaries(tmp_path / "results")


@pytest.mark.parametrize("kind", ["significance", "ordering", "calibration"])
def test_a_results_folder_linked_out_of_the_results_is_refused(tmp_path: Path, kind: str) -> None:
    """A committed ``results/<folder>`` symlink would have its records read (and the writer's written) elsewhere."""
    from bench.api.errors import UserError
    from bench.store.calibration import load_summaries
    from bench.store.orderings import load_orderings
    from bench.store.pvalues import PValues, pvalues_file

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "significance":
        shutil.copy(ROOT / "results" / "significance" / "pvalues.json", elsewhere / "pvalues.json")
    elif kind == "ordering":
        shutil.copy(ORDERING, elsewhere / ORDERING.name)
    else:
        shutil.copy(CAL / SUMMARY, elsewhere / SUMMARY)
    victim = sorted(elsewhere.iterdir())[0]
    before = (victim.stat().st_ino, victim.read_bytes())
    results = tmp_path / "results"
    results.mkdir()
    (results / kind).symlink_to(elsewhere)
    with pytest.raises(UserError, match="is a link out of the results folder"):
        if kind == "significance":
            PValues(pvalues_file(results)).save()
        elif kind == "ordering":
            load_orderings(results)
        else:
            load_summaries(results)
    assert (victim.stat().st_ino, victim.read_bytes()) == before


def test_table_check_names_a_reports_dir_that_is_no_folder(tmp_path: Path) -> None:
    from bench.report.build import render_all
    from bench.store.records import MissingDirError

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / FIXTURE.name)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(MissingDirError, match=r"--reports-dir .*fifo: is a FIFO \(named pipe\), not a folder"):
        render_all(results, fifo, check=True)
