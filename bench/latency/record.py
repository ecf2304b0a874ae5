"""Latency records: one ``bench latency --record`` measurement, built here from the meter's report.

Why a record of its own (not a run record): a speed column compares systems timed *in the same
process, interleaved*, against one baseline; that is one measurement over many systems, so it is
stored whole (spec, machine, per-system stats, speedups with CIs) and the paper tables read the
newest one that matches (schema in docs/run-record.md, "Latency records"). This module makes the
dict (:class:`LatencySpec`, :func:`build_record`); :mod:`bench.store.latency` writes, reads and
checks it under ``results/latency/``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.latency.report import LatencyReport
from bench.store.latency import KIND, LATENCY_RECORD_SCHEMA

#: the paired design's evidence, stored whole at the top of a record (schema 2)
PAIRED_FIELDS = ("design", "trials", "rounds", "aa", "x2", "reference_hashes", "work")


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
    weights: str  # "random" (--weights random), "trained" (--runs: recorded runs' own models), else "as configured"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # system -> overrides
    stand_ins: Mapping[str, str] = field(default_factory=dict)  # row system -> timed system
    seed: int = 0
    runs: Mapping[str, str] = field(default_factory=dict)  # system -> the recorded run whose model was timed

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["systems"] = list(self.systems)
        out["overrides"] = {k: dict(v) for k, v in sorted(self.overrides.items())}
        out["stand_ins"] = dict(sorted(self.stand_ins.items()))
        if self.runs:
            out["runs"] = dict(sorted(self.runs.items()))
        else:
            del out["runs"]  # records before --runs keep their spec, and so their digest and id
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
            "speedup": None if sp is None else (sp.to_json() if hasattr(sp, "to_json") else {
                "mean": sp.mean, "median": sp.median, "mean_ci95": list(sp.mean_ci95),
                "median_ci95": list(sp.median_ci95), "n_resamples": sp.n_resamples,
            }),
            "verdict": entry["verdict"],
            "design_reasons": entry["design_reasons"],
            "valid": entry["valid"],
            "invalid_reasons": entry["invalid_reasons"],
            "outputs": entry["outputs"],
            "warmup": entry["warmup"],
            "timed_s": entry["timed_s"],
            "cuda_event_ms_mean": entry["cuda_event_ms_mean"],
            "timings": {k: v for k, v in report.item_timings(name).items()  # the items stats and speedup come from
                        if k in ("latencies_ns", "item_indices", "tokens", "iterations")},
        }
    basis = stand_in_basis or {}
    return {
        "schema": LATENCY_RECORD_SCHEMA,
        "kind": KIND,
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
        "ms_label": whole["ms_label"],
        "ms_reasons": whole["ms_reasons"],
        "design_reasons": whole["design_reasons"],
        "notes": whole["notes"],
        "settings": whole["settings"],
        "baseline": whole["baseline"],
        "wall_s": whole["wall_s"],
        "canary": whole["canary"],
        **({"quiet_gate": whole["quiet_gate"]} if "quiet_gate" in whole else {}),
        **{k: whole[k] for k in PAIRED_FIELDS if k in whole},
        "fingerprint_before": whole["fingerprint_before"],
        "fingerprint_after": whole["fingerprint_after"],
        "systems": systems,
        "stand_ins": {
            row: {"timed_as": timed, "basis": basis.get(row, "declared with --stand-in")}
            for row, timed in sorted(spec.stand_ins.items())
        },
    }
