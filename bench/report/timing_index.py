"""`bench ls latency`: every timing record of a results folder, one line each, with what the boards make of it.

Why: a table's speed column reads one latency record per (task, baseline) and a speed page one sweep per (split,
budget, weights), the preferred of several (:func:`bench.report.speed.find_source`,
:func:`bench.report.speed_page.speed_records`), so a record made later quietly takes over, and an older one, such
as a block-design record of before 2026-11-29, stays committed but is no longer read. This says which is read and
which is superseded (and by which), using the readers' own choice, so the listing and the boards cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import speed, speed_page


@dataclass(frozen=True)
class TimingEntry:
    """One latency or sweep record as the listing shows it."""

    record_id: str
    design: str  # paired | block (a schema-1 latency record) | sweep
    task: str
    split: str
    weights: str  # random | trained | as configured
    systems: int
    verdict: str
    ms_label: str
    created: str
    status: str


def short(record_id: str) -> str:
    """A record id's time and hash (``20261129T195053--c4499950``): its hash alone is its spec's, which records of
    the same command share."""
    return "--".join(record_id.rsplit("--", 2)[-2:])


def latency_statuses(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """latency_id -> what the boards make of it: the record a paper table's speed column reads for its (task,
    baseline), superseded by the one it reads, or a timing of recorded runs (shown on those runs' rows)."""
    preferred: dict[tuple[str, str | None], dict[str, Any]] = {}
    for rec in records:
        if rec["spec"].get("runs"):
            continue
        key = (rec["spec"]["task"], rec.get("baseline"))
        if key not in preferred or speed.preference(rec) > speed.preference(preferred[key]):
            preferred[key] = rec
    out = {}
    for rec in records:
        if rec["spec"].get("runs"):
            base = rec.get("baseline")
            ar = ((rec["systems"].get(str(base)) or {}).get("system") or {}).get("family") == "AR"
            out[rec["latency_id"]] = ("shown on its runs' rows" if ar else
                                      f"not shown: baseline {base} is not AR (evidence only)")
            continue
        winner = preferred[(rec["spec"]["task"], rec.get("baseline"))]
        out[rec["latency_id"]] = ("shown: tables' speed" if winner is rec
                                  else f"superseded by {short(winner['latency_id'])}")
    return out


def sweep_statuses(records: Sequence[dict[str, Any]]) -> dict[str, str]:
    """sweep_id -> shown on its task's speed page, superseded by the newer sweep of its group, or not shown."""
    shown = {r["sweep_id"] for group in speed_page.speed_records(records).values() for r in group}
    out = {}
    for rec in records:
        spec = rec["spec"]
        if rec["sweep_id"] in shown:
            out[rec["sweep_id"]] = "shown: speed page"
        elif not speed_page.shown(rec):
            out[rec["sweep_id"]] = f"not shown: {rec.get('verdict')} design"
        else:
            group = [r for r in records if r["sweep_id"] in shown and all(
                r["spec"][k] == spec[k] for k in ("task", "split", "budget", "weights"))]
            out[rec["sweep_id"]] = f"superseded by {short(group[0]['sweep_id'])}" if group else "not shown"
    return out


def timing_index(folder: Path | str, task: str | None = None) -> list[TimingEntry]:
    """The latency and sweep records of ``folder`` (sealed-store checked), oldest first, each with its status
    among the records of the same folder (the folder `bench table --results-dir` would read)."""
    from bench.store.latency import load_latency_records
    from bench.store.sweeps import load_sweep_records

    latency, sweeps = load_latency_records(folder), load_sweep_records(folder)
    lat_status, sweep_status = latency_statuses(latency), sweep_statuses(sweeps)
    entries = []
    for rec in latency:
        design = "paired" if (rec.get("design") or {}).get("kind") == "paired" else "block"  # schema 1: blocks
        entries.append(_entry(rec, rec["latency_id"], design, lat_status[rec["latency_id"]]))
    for rec in sweeps:
        entries.append(_entry(rec, rec["sweep_id"], "sweep", sweep_status[rec["sweep_id"]]))
    entries.sort(key=lambda e: (e.created, e.record_id))
    return [e for e in entries if task is None or e.task == task]


def _entry(rec: dict[str, Any], record_id: str, design: str, status: str) -> TimingEntry:
    spec = rec["spec"]
    return TimingEntry(record_id, design, spec["task"], spec["split"], str(spec.get("weights") or "as configured"),
                       len(spec.get("systems") or ()), str(rec.get("verdict") or "?"), str(rec.get("ms_label") or "–"),
                       str(rec.get("created") or ""), status)
