"""RunRecord (#17): one class for the record's fields, kept in step with docs/run-record.md and the files."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from bench.store.records import RecordError, RunRecord, load_records, read_record

ROOT = Path(__file__).resolve().parents[1]


def _documented_keys() -> list[str]:
    """Top-level keys of the first JSON example in docs/run-record.md (two-space indented lines)."""
    text = (ROOT / "docs" / "run-record.md").read_text(encoding="utf-8")
    block = text.split("\n{\n", 1)[1].split("\n}\n", 1)[0]
    return re.findall(r'^  "(\w+)":', block, flags=re.M)


def test_the_documented_fields_are_the_class_fields() -> None:
    assert sorted(_documented_keys()) == sorted(f.name for f in fields(RunRecord))


def test_every_committed_record_reads_as_a_run_record_and_round_trips() -> None:
    records = load_records(ROOT / "results")
    assert records, "no committed records"
    for rec in records:
        again = RunRecord.from_json(rec).to_json()
        assert {k: v for k, v in again.items() if k in rec} == rec
        assert list(again)[:5] == ["schema", "run_id", "status", "kind", "created"]


def test_a_record_written_is_the_record_read(tmp_path: Path) -> None:
    rec = RunRecord.from_json(load_records(ROOT / "results")[0])
    path = rec.write(tmp_path)
    assert path.name == f"{rec.run_id}.json"
    assert RunRecord.from_json(read_record(path)) == rec


def test_unknown_fields_and_bad_files_are_named(tmp_path: Path) -> None:
    rec = load_records(ROOT / "results")[0]
    with pytest.raises(RecordError, match=r"unknown top-level field\(s\) \['scroes'\]"):
        RunRecord.from_json({**rec, "scroes": {}}, "x.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(RecordError, match=r"bad\.json: not valid JSON"):
        read_record(bad)
    bad.write_text(json.dumps({**rec, "schema": 7}), encoding="utf-8")
    with pytest.raises(RecordError, match="'schema' must be 1"):
        read_record(bad)


def test_a_calibration_directory_loads_its_point_records_only() -> None:
    """`bench queue --results-dir results/calibration` plans against the points, not the sweep summaries."""
    records = load_records(ROOT / "results" / "calibration")
    assert records and all(r["spec"]["split"] == "dev" for r in records)
