"""Latency records: one ``bench latency --record`` measurement as JSON under results/latency/.

Why a record of its own (not a run record): a speed column compares systems timed *in the same
process, interleaved*, against one baseline; that is one measurement over many systems, so it is
stored whole (spec, machine, per-system stats, speedups with CIs) and the paper tables read the
newest one that matches (schema in docs/run-record.md, "Latency records").
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.latency.report import LatencyReport

LATENCY_RECORD_SCHEMA = 1
LATENCY_DIR = "latency"


class LatencyRecordError(UserError, ValueError):
    """A latency record does not follow the schema; the message names the file and the field."""


@dataclass(frozen=True)
class LatencySpec:
    """What was asked: the identity of a latency measurement."""

    task: str
    split: str
    budget: str
    systems: tuple[str, ...]
    baseline: str | None
    n: int
    rounds: int
    length_forced: bool
    weights: str  # "random" when --weights random was given, else "as configured"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # system -> overrides
    stand_ins: Mapping[str, str] = field(default_factory=dict)  # row system -> timed system
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["systems"] = list(self.systems)
        out["overrides"] = {k: dict(v) for k, v in sorted(self.overrides.items())}
        out["stand_ins"] = dict(sorted(self.stand_ins.items()))
        return out

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:8]


def system_summary(info: Any) -> dict[str, Any]:
    """The parts of a ``SystemInfo`` a reader of a speed column needs: name, family, passes, backbone and the
    system's whole config (what the timed model *was*, whatever the family calls its settings)."""
    data = info.to_json() if hasattr(info, "to_json") else dict(info)
    config = data.get("config") or {}
    return {
        "name": data.get("name"),
        "family": data.get("family"),
        "iterations": data.get("iterations"),
        "backbone": data.get("backbone"),
        "budget": data.get("budget"),
        "config": dict(config),
    }


def build_record(
    spec: LatencySpec,
    report: LatencyReport,
    systems_info: Mapping[str, Any],
    stand_in_basis: Mapping[str, str] | None = None,
    harness: Mapping[str, Any] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """The JSON record of one measurement (``systems_info``: name -> ``describe()`` of each timed system)."""
    created = created or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    stamp = created.replace("-", "").replace(":", "").split("+")[0]
    mode = "forced" if spec.length_forced else "free"
    latency_id = f"{spec.task}--{spec.split}--{spec.budget}--{spec.weights}--{mode}--{stamp}--{spec.digest()}"
    whole = report.to_json()
    systems = {}
    for name, entry in whole["systems"].items():
        sp = report.systems[name].speedup
        systems[name] = {
            "system": system_summary(systems_info[name]) if name in systems_info else {"name": name},
            "stats": entry["stats"],
            "speedup": None if sp is None else {
                "mean": sp.mean, "median": sp.median, "mean_ci95": list(sp.mean_ci95),
                "median_ci95": list(sp.median_ci95), "n_resamples": sp.n_resamples,
            },
            "valid": entry["valid"],
            "invalid_reasons": entry["invalid_reasons"],
            "outputs": entry["outputs"],
            "warmup": entry["warmup"],
            "timed_s": entry["timed_s"],
            "cuda_event_ms_mean": entry["cuda_event_ms_mean"],
        }
    basis = stand_in_basis or {}
    return {
        "schema": LATENCY_RECORD_SCHEMA,
        "kind": "latency",
        "latency_id": latency_id,
        "status": "complete",
        "created": created,
        "spec": spec.to_json(),
        "harness": dict(harness or {}),
        "device": whole["device"],
        "signature": whole["signature"],
        "verdict": whole["verdict"],
        "valid": whole["valid"],
        "invalid_reasons": whole["invalid_reasons"],
        "notes": whole["notes"],
        "settings": whole["settings"],
        "baseline": whole["baseline"],
        "wall_s": whole["wall_s"],
        "canary": whole["canary"],
        "fingerprint_before": whole["fingerprint_before"],
        "fingerprint_after": whole["fingerprint_after"],
        "systems": systems,
        "stand_ins": {
            row: {"timed_as": timed, "basis": basis.get(row, "declared with --stand-in")}
            for row, timed in sorted(spec.stand_ins.items())
        },
    }


def record_path(results_dir: Path | str, latency_id: str) -> Path:
    return Path(results_dir) / LATENCY_DIR / f"{latency_id}.json"


def write_record(results_dir: Path | str, record: Mapping[str, Any]) -> Path:
    """Write atomically to ``results/latency/<latency_id>.json`` (a reader never sees half a file)."""
    from bench.api.atomic import write_json_atomic

    validate_latency_record(record, "<new record>")
    path = record_path(results_dir, str(record["latency_id"]))
    write_json_atomic(path, record)
    return path


def _fail(path: Path | str, msg: str) -> LatencyRecordError:
    return LatencyRecordError(
        f"{path}: {msg}. Latency records are written by `bench latency --record`; fix or delete this file."
    )


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def validate_latency_record(rec: Any, path: Path | str = "<record>") -> dict[str, Any]:
    """Check the fields the table renderer reads; returns ``rec`` or raises :class:`LatencyRecordError`."""
    if not isinstance(rec, dict):
        raise _fail(path, "top level must be a JSON object")
    if rec.get("schema") != LATENCY_RECORD_SCHEMA or rec.get("kind") != "latency":
        raise _fail(path, f"'schema' must be {LATENCY_RECORD_SCHEMA} and 'kind' 'latency'")
    for key in ("latency_id", "created", "device", "signature"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    spec = rec.get("spec")
    if not isinstance(spec, dict):
        raise _fail(path, "'spec' must be an object")
    for key in ("task", "split", "budget", "weights"):
        if not isinstance(spec.get(key), str):
            raise _fail(path, f"'spec.{key}' must be a string")
    if not isinstance(spec.get("length_forced"), bool):
        raise _fail(path, "'spec.length_forced' must be true or false")
    if not isinstance(rec.get("valid"), bool):
        raise _fail(path, "'valid' must be true or false")
    systems = rec.get("systems")
    if not isinstance(systems, dict) or not systems:
        raise _fail(path, "'systems' must be a non-empty object")
    for name, entry in systems.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("stats"), dict):
            raise _fail(path, f"'systems.{name}.stats' must be an object")
        if not _num(entry["stats"].get("mean_ms")):
            raise _fail(path, f"'systems.{name}.stats.mean_ms' must be a finite number")
        sp = entry.get("speedup")
        if sp is not None:
            ci = sp.get("mean_ci95") if isinstance(sp, dict) else None
            if not (isinstance(sp, dict) and _num(sp.get("mean")) and isinstance(ci, list) and len(ci) == 2
                    and all(_num(v) for v in ci)):
                raise _fail(path, f"'systems.{name}.speedup' needs a number 'mean' and a two-number 'mean_ci95'")
    stand = rec.get("stand_ins", {})
    if not isinstance(stand, dict) or any(
        not isinstance(v, dict) or v.get("timed_as") not in systems for v in stand.values()
    ):
        raise _fail(path, "'stand_ins' must map a system to {\"timed_as\": <a timed system>, \"basis\": text}")
    return rec


def load_latency_records(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every record under ``results_dir/latency/*.json``, schema-checked, oldest first (by created, id)."""
    root = Path(results_dir) / LATENCY_DIR
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.glob("*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise _fail(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc
        out.append(validate_latency_record(rec, path))
    return sorted(out, key=lambda r: (r["created"], r["latency_id"]))
