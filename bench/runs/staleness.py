"""Whether a run is done: its complete record, and whether that record is still what its spec runs today.

Run ids hash the spec, and a spec names a budget whose preset is code: after a calibration moves a preset,
the same `bench run` line has the same run id, so a record is checked against the settings the system
resolves to today before it is taken as done (or shown in tables)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.api.paths import RESULTS_DIR
from bench.runs.identity import RUNTIME_FIELDS, build_system
from bench.runs.paths import record_path
from bench.runs.spec import RunSpec
from bench.store.records import check_outputs, read_record


def completed_record(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> dict[str, Any] | None:
    """The spec's complete record, unless it is stale (:func:`stale_reason`): a stale record is not done."""
    rec = complete_record_maybe_stale(spec, results_dir)
    return rec if rec is not None and stale_reason(rec, spec) is None else None


def complete_record_maybe_stale(spec: RunSpec, results_dir: Path = RESULTS_DIR) -> dict[str, Any] | None:
    """The spec's complete record, stale or not (:func:`completed_record` is the one that is up to date): for a
    caller that says why it re-runs a stale one. One whose outputs were edited since scoring is refused with
    the file and the fix (:func:`bench.store.records.check_outputs`), never taken as done (``--force`` does
    not ask)."""
    path = record_path(spec, results_dir)
    if not path.exists():
        return None
    rec = read_record(path)
    if rec.get("status") != "complete":
        return None
    check_outputs(rec, path)
    return rec


def record_stale_reason(rec: Mapping[str, Any]) -> str | None:
    """:func:`stale_reason` of a record against its own spec; submitted (external) records are never stale."""
    return stale_reason(rec, RunSpec.from_json(rec["spec"])) if rec.get("kind", "run") == "run" else None


def stale_reason(rec: Mapping[str, Any], spec: RunSpec, system: Any = None) -> str | None:
    """Why ``rec`` is not what ``spec`` (built as ``system``; None: built here) runs today, or None.

    Run ids hash the spec, and a spec names a budget whose preset is code: after a calibration moves a
    preset, the same `bench run` line has the same run id, and its old record would be taken as done
    (and shown in tables) although the run would now use other settings. A record is stale when a
    setting the system resolves to today (preset + overrides, before training) differs from the one
    the record stored; settings the record does not have, that are decided at fit time, or that only
    a fit reports are not compared (so a preset change inside such a setting goes unnoticed).
    """
    try:
        changed = setting_changes(rec, spec, system)
    except Exception:  # a system that no longer builds cannot make a record stale
        return None
    if not changed:
        return None
    return f"made with other settings than the {spec.budget} preset resolves to today: {describe_changes(changed)}"


def describe_changes(changed: Sequence[tuple[str, Any, Any]], shown: int = 6) -> str:
    """``setting: recorded -> today`` for the first ``shown`` of :func:`setting_changes`, and how many more."""
    text = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in changed[:shown])
    return text + (f" (+{len(changed) - shown} more)" if len(changed) > shown else "")


def setting_changes(rec: Mapping[str, Any], spec: RunSpec, system: Any = None) -> list[tuple[str, Any, Any]]:
    """(setting, recorded, resolved today) for each setting of ``rec`` that ``spec`` (built as ``system``)
    resolves to otherwise today, sorted; raises what building the system raises."""
    from bench.data import task_info

    now = _comparable((system or build_system(spec)).training_settings(task_info(spec.task)))
    then = _comparable((rec.get("system") or {}).get("config") or {})
    # None: decided at fit time, nothing to compare yet; a nested setting (the NAR family's per-task
    # ``size``) is compared on the keys both sides have, so a field added since does not flag old records
    return sorted(_changes(now, then))


def _comparable(config: Mapping[str, Any]) -> dict[str, Any]:
    drop = RUNTIME_FIELDS | {"train"}  # "train": what a fit reported, not a setting
    return json.loads(json.dumps({k: v for k, v in config.items() if k not in drop}, sort_keys=True, default=str))


def _changes(now: Mapping[str, Any], then: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(setting, then, now) for each setting both sides have that differs; None now is not compared."""
    out: list[tuple[str, Any, Any]] = []
    for k in now.keys() & then.keys():
        a, b = then[k], now[k]
        if b is None:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += _changes(b, a, f"{prefix}{k}.")
        elif a != b:
            out.append((f"{prefix}{k}", a, b))
    return out
