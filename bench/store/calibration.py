"""Calibration summaries (``results/calibration/<system>--<task>--<budget>.json``, kind ``calibration``).

``bench calibrate`` (:mod:`bench.workflows.calibrate`) runs a learning-rate × updates grid; each point
is an ordinary run record in the same folder, and the summary lists the points (lr, updates, dev
score, health, cost) and the pick. The report draws each summary and the floors read them, so a summary
is checked here when it is read: a hand-edited one stops ``bench table`` with its file and field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.api.names import identifier
from bench.store.files import StoreError, is_number
from bench.store.integrity import METRIC_RANGE, Problem
from bench.store.outputs import StoredRecord
from bench.store.paths import calibration_dir, calibration_summary_file, run_record_file
from bench.store.records import RUNS, read_record
from bench.store.sealed import SealedStore

SCHEMA = 1
KIND = "calibration"
#: the fields of a summary file names are built from: its own file and its report plot, each point's record
SUMMARY_NAMES = ("system", "task", "split", "budget", "points[].run_id", "pick.run_id")
#: a point's shares of its outputs (bench.scoring.output_stats), each in [0, 1]
POINT_SHARES = ("distinct_ratio", "most_frequent_share")
#: a point's non-negative figures: training seconds and the last train and dev losses
POINT_AMOUNTS = ("fit_s", "final_train_loss", "final_dev_loss")


class CalibrationSummaryError(StoreError):
    """A calibration summary does not follow the schema; the message names the file and the field."""


AGAIN = "delete it and run the sweep again (`bench calibrate`: its points' records are reused, not re-run)"


def _fail(path: Path | str, msg: str) -> CalibrationSummaryError:
    return CalibrationSummaryError(
        f"{path}: {msg}. Calibration summaries are written by `bench calibrate`; fix this file, or delete it "
        "and run the sweep again (its points' records are reused, not re-run)."
    )


def is_summary(data: Any) -> bool:
    """Whether a JSON file of ``results/calibration/`` is a sweep's summary (the others are its points' records)."""
    return isinstance(data, dict) and data.get("kind") == KIND


def validate_summary(data: Any, path: Path | str = "<summary>") -> dict[str, Any]:
    """Check the fields the plots, the floors and the merge of a later sweep read (types), then every number
    (:func:`summary_problems`: ranges, the pick); returns ``data``."""
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
    if "created" in data and not isinstance(data["created"], str):
        raise _fail(path, "'created' must be an ISO-8601 string")
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
        for key in ("score", *POINT_SHARES, *POINT_AMOUNTS):
            if point.get(key) is not None and not is_number(point[key]):
                raise _fail(path, f"'{where}.{key}' must be a finite number or null, got {point[key]!r}")
        if not isinstance(point.get("degenerate"), bool):
            raise _fail(path, f"'{where}.degenerate' must be true or false")
        if not isinstance(point.get("overrides", {}), dict):
            raise _fail(path, f"'{where}.overrides' must be an object")
    pick = data.get("pick")
    if pick is not None and not (isinstance(pick, dict) and isinstance(pick.get("run_id"), str)
                                 and is_number(pick.get("lr")) and isinstance(pick.get("updates"), int)
                                 and not isinstance(pick.get("updates"), bool) and is_number(pick.get("score"))):
        raise _fail(path, "'pick' must be null or an object with 'lr', 'updates', 'run_id' and 'score'")
    problems = summary_problems(data)
    if problems:
        raise SUMMARIES.edited(path, problems[0], data)
    return data


def summary_problems(data: Mapping[str, Any]) -> list[Problem]:
    """What is inconsistent in a (type-checked) summary: counts and settings in range, each score on the metric
    scale, shares in [0, 1], no point twice, and the pick the best healthy point (:func:`best_point`)."""
    return list(_summary_problems(data))


def _summary_problems(data: Mapping[str, Any]) -> Iterator[Problem]:
    lo, hi = METRIC_RANGE
    if data.get("dev_examples") is not None and data["dev_examples"] < 1:
        yield Problem("dev_examples", f"must be a positive number of examples, got {data['dev_examples']!r}")
    if data.get("seed") is not None and data["seed"] < 0:
        yield Problem("seed", f"must be a non-negative seed, got {data['seed']!r}")
    seen: dict[str, int] = {}
    for i, point in enumerate(data["points"]):
        where = f"points[{i}]"
        if point["run_id"] in seen:
            yield Problem(f"{where}.run_id", f"is also points[{seen[point['run_id']]}]'s: a point is listed once")
        seen.setdefault(point["run_id"], i)
        if not point["lr"] > 0:
            yield Problem(f"{where}.lr", f"must be a positive learning rate, got {point['lr']!r}")
        if not point["updates"] > 0:
            yield Problem(f"{where}.updates", f"must be a positive number of updates, got {point['updates']!r}")
        score = point.get("score")
        if score is not None and not lo <= score <= hi:
            yield Problem(f"{where}.score", f"is {score!r}, outside [{lo:g}, {hi:g}] (scores are x100)")
        for key in POINT_SHARES:
            if point.get(key) is not None and not 0.0 <= point[key] <= 1.0:
                yield Problem(f"{where}.{key}", f"must be a share in [0, 1], got {point[key]!r}")
        for key in POINT_AMOUNTS:
            if point.get(key) is not None and point[key] < 0:
                yield Problem(f"{where}.{key}", f"must be non-negative, got {point[key]!r}")
    want = best_point(data["points"])
    pick = data.get("pick")
    if want != pick and not (want is not None and pick is not None and _same_pick(want, pick)):
        yield Problem("pick", f"is {_shown(pick)}, but the best healthy point (highest score, fewer updates on a "
                              f"tie, never a degenerate one) is {_shown(want)}")


def _same_pick(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        math.isclose(a[k], b[k], rel_tol=1e-12) if is_number(a[k]) and is_number(b[k]) else a[k] == b[k] for k in a)


def _shown(pick: Any) -> str:
    if not isinstance(pick, Mapping):
        return "no point" if pick is None else repr(pick)
    return f"{pick.get('run_id')} (lr {pick.get('lr')!r}, {pick.get('updates')!r} updates, score {pick.get('score')!r})"


def best_point(points: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The pick of a sweep: the best dev score among non-degenerate points (fewer updates on a tie); None when
    no point is healthy. ``bench calibrate`` writes it, every reader checks it."""
    healthy = [p for p in points if not p["degenerate"] and p["score"] is not None]
    if not healthy:
        return None
    best = max(healthy, key=lambda p: (p["score"], -p["updates"]))
    return {"lr": best["lr"], "updates": best["updates"], "run_id": best["run_id"], "score": best["score"]}


class SummaryStore(SealedStore):
    """Calibration summaries through the one sealed path, with their own wording."""

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return _fail(path, msg)

    def named_right(self, results_dir: Path | str, rec: StoredRecord) -> StoredRecord:
        """One sweep is one file: a summary is read only from ``<system>--<task>--<budget>.json`` (a copy under
        another name would be drawn and counted twice, or stand in for another system's sweep)."""
        if rec.source is not None:
            own = calibration_summary_file(results_dir, rec["system"], rec["task"], rec["budget"]).name
            if Path(rec.source).name != own:
                raise self.fail(rec.source, f"holds the sweep of {rec['system']} on {rec['task']} at {rec['budget']}, "
                                            f"whose file is {own}: one sweep is one file. Rename it to {own} or delete "
                                            "the copy")
        return rec


def _summary_file(results_dir: Path | str, name: str) -> Path:
    return calibration_dir(results_dir) / f"{identifier(name, 'calibration summary')}.json"


def _point_file(results_dir: Path | str, run_id: str) -> Path:
    return run_record_file(calibration_dir(results_dir), run_id)


#: calibration summaries (``results/calibration/<system>--<task>--<budget>.json``), the store's kind ``calibration``
SUMMARIES = SummaryStore(CalibrationSummaryError, "Calibration summary", "bench calibrate", AGAIN, "system",
                         calibration_dir, _summary_file, validate_summary, names=SUMMARY_NAMES, kind="calibration")
#: a sweep's grid points: run records in ``results/calibration/`` (the store's kind ``calibration point``)
POINTS = replace(RUNS, name="Calibration point", folder=calibration_dir, file=_point_file, kind="calibration point")


def read_summary(path: Path | str) -> dict[str, Any] | None:
    """The summary at ``path``, checked and its seal fitting; None when there is none yet."""
    if not Path(path).is_file():
        return None
    return SUMMARIES.read(path)


def load_summaries(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every sweep summary under ``results/calibration/`` (grid-point records are not summaries), checked.

    Each point gets ``dev_loss_curve`` from its own record when that record is there: a floor missed
    must show the plateau, and a plateau is read off the dev loss, not off a handful of dev scores.
    The curve is attached at load time, so summaries written before it existed draw it too. A point's record
    is found by its run id (an identifier, checked at load) inside the calibration folder, never elsewhere."""
    out: list[dict[str, Any]] = []
    for path in SUMMARIES.files(results_dir):
        data = SUMMARIES.raw(path)
        if not is_summary(data):
            continue  # a grid point's run record (read by bench.store.records)
        summary = SUMMARIES.named_right(results_dir, SUMMARIES.accept(data, path))
        summary["points"] = [dict(p) for p in summary["points"]]
        for point in summary["points"]:
            record_file = POINTS.path_of(results_dir, point["run_id"])
            if record_file.name == Path(path).name:
                raise _fail(path, f"a point's run_id {point['run_id']!r} names this summary's own file, not a point's "
                                  "run record")
            if not record_file.is_file():
                continue  # a copy of results/ without the points' records still draws the summary
            rec = read_record(record_file)
            _check_point_record(summary, point, rec, path, record_file)
            curve = [list(p) for p in (rec.get("training_curve") or {}).get("dev_loss") or []]
            if curve:
                point["dev_loss_curve"] = curve
        out.append(summary)
    return out


def _check_point_record(summary: Mapping[str, Any], point: Mapping[str, Any], rec: Mapping[str, Any],
                        path: Path | str, record_file: Path) -> None:
    """A summary's point is a run of the summary's own sweep (its system, task, split and budget), and its score
    is that record's score under the summary's recipe and metric, copied: a summary whose score was edited and
    resealed (the digest is a checksum, not a signature), that borrows another sweep's record, or whose recipe or
    metric was renamed to one its records lack (so that no score could be compared) is refused at load, not only
    by ``--deep``."""
    spec = rec.get("spec") or {}
    for key in ("system", "task", "split", "budget"):
        if spec.get(key) != summary.get(key):
            raise _fail(path, f"point {point['run_id']} is a run of {key} {spec.get(key)!r} (its record "
                              f"{record_file}), but the summary's {key} is {summary.get(key)!r}; a summary lists its "
                              "own sweep's runs")
    if rec.get("status") != "complete":
        return
    scored = ((rec.get("scores") or {}).get(summary.get("recipe")) or {}).get("metrics", {}).get(summary.get("metric"))
    if scored is None and point.get("score") is not None:  # a score the record does not hold cannot be its copy
        raise _fail(path, f"point {point['run_id']}'s record {record_file} has no {summary['metric']} under "
                          f"{summary['recipe']}, the summary's recipe and metric; the summary copies its points' "
                          "scores")
    if scored is not None and point.get("score") != scored:
        raise _fail(path, f"point {point['run_id']} says {summary['metric']} {point.get('score')!r}, but its record "
                          f"{record_file} scored {scored!r} under {summary['recipe']}; the summary copies its points' "
                          "scores")


def load_points(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every grid point's run record under ``results/calibration/`` (the summaries there are skipped), checked."""
    from bench.store.records import load_records

    return load_records(calibration_dir(results_dir))


def dev_loss_curve(record_file: Path) -> list[list[float]]:
    """``[[update, dev loss], ...]`` of a grid point's record ([] when the record or its curve is missing)."""
    if not record_file.is_file():
        return []
    rec = read_record(record_file)
    return [list(p) for p in (rec.get("training_curve") or {}).get("dev_loss") or []]


def write_summary(results_dir: Path | str, summary: dict[str, Any]) -> Path:
    """Check, then write sealed and atomically to ``results/calibration/<system>--<task>--<budget>.json``."""
    SUMMARIES.check(summary, "<new summary>")
    return SUMMARIES.save(calibration_summary_file(results_dir, summary["system"], summary["task"],
                                                   summary["budget"]), summary)
