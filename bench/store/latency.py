"""Latency records (``results/latency/<latency_id>.json``): one ``bench latency --record`` measurement each.

A speed column compares systems timed *in the same process, interleaved*, against one baseline: one
measurement over many systems, stored whole (spec, machine, per-system stats, speedups with CIs; schema
in docs/run-record.md, "Latency records"). :mod:`bench.latency.record` builds the dict from the meter's
report; this module is where it is written, read back and checked, so the paper tables and the
leaderboards stop on a malformed record with its file and field instead of losing a speed column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.store.files import StoreError, is_number
from bench.store.ids import latency_record_id
from bench.store.integrity import Problem, latency_record_problems
from bench.store.paired import LABELS, VERDICTS, design_problems, runs_problems, speedup_problems
from bench.store.paths import latency_dir, latency_record_file
from bench.store.sealed import SealedStore
from bench.store.verdicts import latency_verdict_problems

LATENCY_RECORD_SCHEMA = 2
#: schema 1: the block design (rounds of per-system blocks), before paired trials; still read
LATENCY_SCHEMAS = (1, 2)
KIND = "latency"


class LatencyRecordError(StoreError):
    """A latency record does not follow the schema; the message names the file and the field."""


def _fail(path: Path | str, msg: str) -> StoreError:
    return STORE.fail(path, msg)


def validate_latency_record(rec: Any, path: Path | str = "<record>") -> dict[str, Any]:
    """Check the fields the table renderer reads; returns ``rec`` or raises :class:`LatencyRecordError`."""
    if not isinstance(rec, dict):
        raise _fail(path, "top level must be a JSON object")
    if rec.get("schema") not in LATENCY_SCHEMAS or rec.get("kind") != KIND:
        raise _fail(path, f"'schema' must be one of {', '.join(map(str, LATENCY_SCHEMAS))} and 'kind' '{KIND}'")
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
        if not is_number(entry["stats"].get("mean_ms")):
            raise _fail(path, f"'systems.{name}.stats.mean_ms' must be a finite number")
        sp = entry.get("speedup")
        if sp is not None:
            ci = sp.get("mean_ci95") if isinstance(sp, dict) else None
            if not (isinstance(sp, dict) and is_number(sp.get("mean")) and isinstance(ci, list) and len(ci) == 2
                    and all(is_number(v) for v in ci)):
                raise _fail(path, f"'systems.{name}.speedup' needs a number 'mean' and a two-number 'mean_ci95'")
    stand = rec.get("stand_ins", {})
    if not isinstance(stand, dict) or any(
        not isinstance(v, dict) or v.get("timed_as") not in systems for v in stand.values()
    ):
        raise _fail(path, "'stand_ins' must map a system to {\"timed_as\": <a timed system>, \"basis\": text}")
    if rec["schema"] >= 2:
        for key in ("settings", "fingerprint_before", "fingerprint_after", "canary"):
            if not isinstance(rec.get(key), dict):
                raise _fail(path, f"'{key}' must be an object")
        if rec.get("verdict") not in VERDICTS or rec.get("ms_label") not in LABELS:
            raise _fail(path, f"'verdict' must be one of {', '.join(VERDICTS)} and 'ms_label' one of "
                              f"{', '.join(LABELS)}")
        if rec["valid"] != (rec["verdict"] == "VALID"):
            raise STORE.edited(path, Problem("valid", f"is {rec['valid']!r} but the verdict is {rec['verdict']!r}"))
    problems = latency_record_problems(rec) + _roster_problems(rec)
    problems += list(runs_problems(spec))
    if rec["schema"] >= 2:
        problems += list(design_problems(rec))
        for name, entry in systems.items():
            if entry.get("verdict") not in VERDICTS:
                problems.append(Problem(f"systems.{name}.verdict", f"must be one of {', '.join(VERDICTS)}"))
            if entry.get("speedup") is not None:
                problems += list(speedup_problems(entry["speedup"], f"systems.{name}.speedup"))
    if not problems:  # every verdict word against the numbers beside it: a flipped, resealed verdict is refused
        problems = latency_verdict_problems(rec)
    if problems:
        raise STORE.edited(path, problems[0])
    return rec


def _roster_problems(rec: Mapping[str, Any]) -> list[Problem]:
    """The systems a record shows are the ones it measured: those its spec lists, each an arm of its paired
    design, against the spec's baseline (a system copied in under another name, a row never timed, was shown)."""
    systems, spec = rec["systems"], rec["spec"]
    listed = spec.get("systems")
    if isinstance(listed, list) and set(systems) != set(listed):
        return [Problem("systems", f"holds {sorted(systems)}, but 'spec.systems' (what was timed) is {sorted(listed)}")]
    if "baseline" in spec and rec.get("baseline") != spec["baseline"]:
        return [Problem("baseline", f"is {rec.get('baseline')!r}, but 'spec.baseline' is {spec['baseline']!r}")]
    arms = (rec.get("design") or {}).get("arms") if isinstance(rec.get("design"), Mapping) else None
    ghosts = sorted(set(systems) - set(arms)) if isinstance(arms, list) else []
    return [Problem(f"systems.{ghosts[0]}", "is not an arm of 'design.arms': it was never timed")] if ghosts else []


STORE = SealedStore(LatencyRecordError, "Latency", "bench latency --record", "measure again", "latency_id",
                    latency_dir, latency_record_file, lambda rec, path: validate_latency_record(rec, path),
                    names=("latency_id", "spec.task", "spec.split", "spec.budget", "spec.baseline", "spec.systems[]",
                           "systems{}"), kind=KIND, id_names_file=True,
                    identity=latency_record_id)


def read_latency_record(path: Path | str) -> dict[str, Any]:
    """One latency record file, schema-checked, its numbers consistent and its digest (if any) fitting; the
    dict returned is the record without its digest (the file's seal, made again by the writer)."""
    return STORE.read(path)


def load_latency_records(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every record under ``results_dir/latency/*.json``, schema-checked, oldest first (by created, id)."""
    return STORE.load(results_dir)


def write_latency_record(results_dir: Path | str, record: Mapping[str, Any]) -> Path:
    """Check, then write atomically to ``results/latency/<latency_id>.json`` (a reader never sees half a file)."""
    return STORE.write(results_dir, record)
