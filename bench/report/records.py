"""Read run records (results/*.json, schema in docs/run-record.md) for the renderers.

Why validate here: reports are the project's evidence, so a malformed record must stop the
build with the file name and the broken field, never silently drop a number.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bench.errors import UserError

SCHEMA_VERSION = 1


class RecordError(UserError, ValueError):
    """A run record does not follow the schema; the message names the file and the field."""


def _fail(path: Path | str, msg: str) -> RecordError:
    return RecordError(f"{path}: {msg}. Records are written by bench/runs.py; fix or delete this file.")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def validate_record(rec: Any, path: Path | str = "<record>") -> dict:
    """Check the fields the renderers use; returns ``rec`` or raises :class:`RecordError`."""
    if not isinstance(rec, dict):
        raise _fail(path, "top level must be a JSON object")
    if rec.get("schema") != SCHEMA_VERSION:
        raise _fail(path, f"'schema' must be {SCHEMA_VERSION}, got {rec.get('schema')!r}")
    for key in ("run_id", "status"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    if rec["status"] != "complete":
        return rec
    spec = rec.get("spec")
    if not isinstance(spec, dict):
        raise _fail(path, "'spec' must be an object")
    for key in ("system", "task", "split", "budget"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise _fail(path, f"'spec.{key}' must be a non-empty string")
    if not isinstance(spec.get("overrides", {}), dict):
        raise _fail(path, "'spec.overrides' must be an object")
    if "created" in rec and not isinstance(rec["created"], str):
        raise _fail(path, "'created' must be an ISO-8601 string")
    scores = rec.get("scores")
    if not isinstance(scores, dict):
        raise _fail(path, "'scores' must be an object mapping recipe -> scores")
    for recipe, sc in scores.items():
        if not isinstance(sc, dict):
            raise _fail(path, f"'scores.{recipe}' must be an object")
        if not isinstance(sc.get("signature"), str) or not sc["signature"]:
            raise _fail(path, f"'scores.{recipe}.signature' must be a non-empty string")
        metrics = sc.get("metrics")
        if not isinstance(metrics, dict):
            raise _fail(path, f"'scores.{recipe}.metrics' must be an object")
        for name, value in metrics.items():
            if not _is_number(value):
                raise _fail(path, f"'scores.{recipe}.metrics.{name}' must be a finite number, got {value!r}")
    lat = rec.get("latency")
    if lat is not None:
        if not isinstance(lat, dict):
            raise _fail(path, "'latency' must be null or an object")
        if not isinstance(lat.get("signature"), str):
            raise _fail(path, "'latency.signature' must be a string")
        for key in ("speedup_mean", "speedup_median"):
            if lat.get(key) is not None and not _is_number(lat[key]):
                raise _fail(path, f"'latency.{key}' must be a number or null, got {lat[key]!r}")
        if not isinstance(lat.get("stats", {}), dict):
            raise _fail(path, "'latency.stats' must be an object")
    return rec


def load_records(results_dir: Path | str) -> list[dict]:
    """Complete records under ``results_dir`` (top-level ``*.json``), sorted by run_id.

    Failed or running records are skipped; a malformed one raises :class:`RecordError`; a
    missing directory gives an empty list (nothing has been run yet).
    """
    root = Path(results_dir)
    if not root.is_dir():
        return []
    out: dict[str, dict] = {}
    seen: dict[str, Path] = {}
    for path in sorted(root.glob("*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise _fail(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        validate_record(rec, path)
        if rec["status"] != "complete":
            continue
        rid = rec["run_id"]
        if rid in seen:
            raise _fail(path, f"run_id '{rid}' is also used by {seen[rid]}")
        seen[rid] = path
        out[rid] = rec
    return [out[k] for k in sorted(out)]
