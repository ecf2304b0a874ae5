"""`bench ls latency`: every committed timing record with what the boards make of it, by the readers' own choice
(a table's speed column reads one latency record per task and baseline, a speed page one sweep per group)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.cli import app
from bench.papers import all_tables
from bench.report import speed
from bench.report.timing_index import latency_statuses, short, timing_index
from bench.store.latency import load_latency_records

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


@pytest.fixture(scope="module")
def latency() -> list[dict]:
    return load_latency_records(RESULTS)


def test_the_record_shown_is_the_one_each_mist_table_reads_and_the_block_records_are_superseded(
        latency: list[dict]) -> None:
    statuses = latency_statuses(latency)
    read = {lid for lid, status in statuses.items() if status.startswith("shown: tables")}
    tables = [t for t in all_tables() if speed.speed_column(t) is not None]
    sources = {src.record["latency_id"] for t in tables
               if (src := speed.find_source(t, latency, None)) is not None and src.record is not None}
    assert sources and sources <= read  # what the listing calls shown is what the tables read
    for rec in latency:
        if rec.get("schema", 1) == 1:  # the three block-design records, each superseded by a paired one
            assert statuses[rec["latency_id"]].startswith("superseded by "), rec["latency_id"]


def test_a_trained_timing_against_a_nar_baseline_is_not_shown_and_against_ar_it_is(latency: list[dict]) -> None:
    [trained] = [copy.deepcopy(r) for r in latency if r["latency_id"].endswith("2a9ec939")]
    status = latency_statuses([trained])[trained["latency_id"]]
    assert status == "not shown: baseline mist_minilm_l6 is not AR (evidence only)"
    trained["systems"]["mist_minilm_l6"]["system"]["family"] = "AR"
    assert latency_statuses([trained])[trained["latency_id"]] == "shown on its runs' rows"


def test_the_listing_names_each_record_and_its_successor(tmp_path: Path) -> None:
    import shutil

    (tmp_path / "latency").mkdir()
    for path in (RESULTS / "latency").glob("xsum--*.json"):  # the task's two records: the block one and its successor
        shutil.copy(path, tmp_path / "latency")
    entries = {e.record_id: e for e in timing_index(tmp_path, "xsum")}
    old = entries["xsum--test-available--paper--random--forced--20261126T024340--bbd5a6a1"]
    assert old.design == "block" and old.status == "superseded by 20261129T223835--59f3b8df"
    assert short("quora--test--paper--random--forced--20261129T195053--c4499950") == "20261129T195053--c4499950"
    out = CliRunner().invoke(app, ["ls", "latency", "--results-dir", str(tmp_path)],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "superseded by 20261129T223835--59f3b8df" in out.output and "shown: tables' speed" in out.output
    none = CliRunner().invoke(app, ["ls", "latency", "--task", "quora", "--results-dir", str(tmp_path)])
    assert none.exit_code != 0 and "No latency or sweep record" in " ".join(none.output.split())
