"""Calibration summaries (``results/calibration/<system>--<task>--<budget>.json``, kind ``calibration``).

``bench calibrate`` (:mod:`bench.workflows.calibrate`) runs a learning-rate × updates grid; each point
is an ordinary run record in the same folder, and the summary lists the points (lr, updates, dev
score, health, cost) and the pick. The report draws each summary and the floors read them, so a summary
is checked here when it is read: a hand-edited one stops ``bench table`` with its file and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.store.files import StoreError, is_number, json_files, read_json, write_json
from bench.store.paths import calibration_dir, calibration_summary_file, run_record_file
from bench.store.records import read_record

SCHEMA = 1
KIND = "calibration"


class CalibrationSummaryError(StoreError):
    """A calibration summary does not follow the schema; the message names the file and the field."""


def _fail(path: Path | str, msg: str) -> CalibrationSummaryError:
    return CalibrationSummaryError(
        f"{path}: {msg}. Calibration summaries are written by `bench calibrate`; fix this file, or delete it "
        "and run the sweep again (its points' records are reused, not re-run)."
    )


def is_summary(data: Any) -> bool:
    """Whether a JSON file of ``results/calibration/`` is a sweep's summary (the others are its points' records)."""
    return isinstance(data, dict) and data.get("kind") == KIND


def validate_summary(data: Any, path: Path | str = "<summary>") -> dict[str, Any]:
    """Check the fields the plots, the floors and the merge of a later sweep read; returns ``data``."""
    if not is_summary(data):
        raise _fail(path, f"top level must be a JSON object with 'kind' '{KIND}'")
    if data.get("schema") != SCHEMA:
        raise _fail(path, f"'schema' must be {SCHEMA}, got {data.get('schema')!r}")
    for key in ("system", "task", "split", "budget", "recipe", "metric"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    for key in ("dev_examples", "seed"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _fail(path, f"'{key}' must be a whole number, got {value!r}")
    if not isinstance(data.get("overrides", {}), dict):
        raise _fail(path, "'overrides' must be an object (the settings every point shares)")
    points = data.get("points")
    if not isinstance(points, list):
        raise _fail(path, "'points' must be a list of grid points")
    for i, point in enumerate(points):
        where = f"points[{i}]"
        if not isinstance(point, dict):
            raise _fail(path, f"'{where}' must be an object")
        if not isinstance(point.get("run_id"), str) or not point["run_id"]:
            raise _fail(path, f"'{where}.run_id' must be a non-empty string (the point's run record)")
        if not is_number(point.get("lr")):
            raise _fail(path, f"'{where}.lr' must be a finite number")
        if isinstance(point.get("updates"), bool) or not isinstance(point.get("updates"), int):
            raise _fail(path, f"'{where}.updates' must be a whole number")
        if point.get("score") is not None and not is_number(point["score"]):
            raise _fail(path, f"'{where}.score' must be a number or null")
        if not isinstance(point.get("degenerate"), bool):
            raise _fail(path, f"'{where}.degenerate' must be true or false")
        if not isinstance(point.get("overrides", {}), dict):
            raise _fail(path, f"'{where}.overrides' must be an object")
    pick = data.get("pick")
    if pick is not None and not (isinstance(pick, dict) and isinstance(pick.get("run_id"), str)
                                 and is_number(pick.get("lr")) and isinstance(pick.get("updates"), int)):
        raise _fail(path, "'pick' must be null or an object with 'lr', 'updates', 'run_id' and 'score'")
    return data


def read_summary(path: Path | str) -> dict[str, Any] | None:
    """The summary at ``path``, checked; None when there is none yet."""
    if not Path(path).is_file():
        return None
    return validate_summary(read_json(path, _fail), path)


def load_summaries(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every sweep summary under ``results/calibration/`` (grid-point records are not summaries), checked.

    Each point gets ``dev_loss_curve`` from its own record when that record is there: a floor missed
    must show the plateau, and a plateau is read off the dev loss, not off a handful of dev scores.
    The curve is attached at load time, so summaries written before it existed draw it too."""
    root = calibration_dir(results_dir)
    out = []
    for path in json_files(root):
        data = read_json(path, _fail)
        if not is_summary(data):
            continue  # a grid point's run record (read by bench.store.records)
        validate_summary(data, path)
        for point in data["points"]:
            curve = dev_loss_curve(run_record_file(root, point["run_id"]))
            if curve:
                point["dev_loss_curve"] = curve
        out.append(data)
    return out


def dev_loss_curve(record_file: Path) -> list[list[float]]:
    """``[[update, dev loss], ...]`` of a grid point's record ([] when the record or its curve is missing)."""
    if not record_file.is_file():
        return []
    rec = read_record(record_file)
    return [list(p) for p in (rec.get("training_curve") or {}).get("dev_loss") or []]


def write_summary(results_dir: Path | str, summary: dict[str, Any]) -> Path:
    """Check, then write atomically to ``results/calibration/<system>--<task>--<budget>.json``."""
    validate_summary(summary, "<new summary>")
    return write_json(calibration_summary_file(results_dir, summary["system"], summary["task"], summary["budget"]),
                      summary)
