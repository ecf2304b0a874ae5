"""Sweep records (``results/sweep/<sweep_id>.json``): one ``bench latency --batch-sizes --record`` each.

Why checked here like the latency records (:mod:`bench.store.latency`): the speed pages print a sweep's
sentences/s, speed-ups, memory and energy as facts, so a record is read through the one reader, its
schema and every number it shows checked (finite, in a sane range, each cell a system, batch size and
thread count the record swept) and its digest fitted before anything renders; a bad record stops
``bench table`` with its file and field instead of printing a wrong page. Re-deriving the rates from the
raw batch times is the deep check's (:mod:`bench.latency.rederive_sweep`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench.api.numbers import finite
from bench.store.files import StoreError
from bench.store.ids import sweep_record_id
from bench.store.integrity import Problem, gate_count_problems
from bench.store.paired import VERDICTS, arm_timings, design_problems, runs_problems, speedup_problems
from bench.store.paths import sweep_dir, sweep_record_file
from bench.store.sealed import SealedStore
from bench.store.verdicts import sweep_verdict_problems

#: 2: paired trials per (threads, B) group, each cell's speed-up judged (1: batches timed in per-system blocks)
SWEEP_RECORD_SCHEMA = 2
KIND = "sweep"
#: sane bounds: no decoder drains more than this many sentences (tokens) a second, no batch runs a day,
#: no process holds a petabyte, no model has 10^13 parameters, no sentence costs a megajoule
MAX_RATE = 1e8
MAX_BATCH_NS = 86_400 * 10**9
MAX_BYTES = 1 << 50
MAX_PARAMETERS = 10**13
MAX_JOULES = 1e6
#: a sweep id is a file name and a link target: word characters, dots, plus and dashes only
SWEEP_ID = re.compile(r"[\w.+-]+")


class SweepRecordError(StoreError):
    """A sweep record does not follow the schema or its numbers do not hold; the message names file and field."""


def _fail(path: Path | str, msg: str) -> StoreError:
    return STORE.fail(path, msg)


_num = finite  # the store's name for bench.api.numbers.finite


def _int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _in(x: Any, lo: float, hi: float) -> bool:
    return _num(x) and lo <= x <= hi


def _ints(x: Any, low: int = 1) -> bool:
    return isinstance(x, list) and bool(x) and all(_int(v) and v >= low for v in x)


def validate_sweep_record(rec: Any, path: Path | str = "<record>") -> dict[str, Any]:
    """Check what the speed page reads; returns ``rec`` or raises :class:`SweepRecordError` naming the field."""
    if not isinstance(rec, dict):
        raise _fail(path, "top level must be a JSON object")
    if rec.get("schema") != SWEEP_RECORD_SCHEMA or rec.get("kind") != KIND:
        raise _fail(path, f"'schema' must be {SWEEP_RECORD_SCHEMA} and 'kind' '{KIND}'")
    for key in ("sweep_id", "created", "device"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    if not SWEEP_ID.fullmatch(rec["sweep_id"]):
        raise _fail(path, "'sweep_id' may hold only letters, digits, '_', '.', '+' and '-'")
    spec = rec.get("spec")
    if not isinstance(spec, dict):
        raise _fail(path, "'spec' must be an object")
    for key in ("task", "split", "budget", "weights"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise _fail(path, f"'spec.{key}' must be a non-empty string")
    if not SWEEP_ID.fullmatch(spec["task"]):
        raise _fail(path, "'spec.task' may hold only letters, digits, '_', '.', '+' and '-' (it names a page)")
    systems = spec.get("systems")
    if not isinstance(systems, list) or not systems or not all(isinstance(s, str) and s for s in systems):
        raise _fail(path, "'spec.systems' must be a non-empty list of system names")
    if spec.get("baseline") is not None and spec["baseline"] not in systems:
        raise _fail(path, "'spec.baseline' must be null or one of 'spec.systems'")
    for key in ("valid",):
        if not isinstance(rec.get(key), bool):
            raise _fail(path, f"'{key}' must be true or false")
    if rec.get("verdict") not in VERDICTS:
        raise _fail(path, f"'verdict' must be one of {', '.join(VERDICTS)}")
    if rec["valid"] != (rec["verdict"] == "VALID"):
        raise STORE.edited(path, Problem("valid", f"is {rec['valid']!r} but the verdict is {rec['verdict']!r}"))
    if not isinstance(rec.get("invalid_reasons"), list) or not all(isinstance(r, str) for r in rec["invalid_reasons"]):
        raise _fail(path, "'invalid_reasons' must be a list of strings")
    if not isinstance(rec.get("harness", {}), dict):
        raise _fail(path, "'harness' must be an object")
    sw = rec.get("sweep")
    if not isinstance(sw, dict):
        raise _fail(path, "'sweep' must be an object")
    problems = [*runs_problems(spec), *sweep_problems(sw, systems)] or sweep_verdict_problems(rec)  # then verdicts
    if problems:
        raise STORE.edited(path, problems[0])
    return rec


def sweep_problems(sw: Mapping[str, Any], systems: list[str]) -> Iterator[Problem]:
    """What is wrong with a record's ``sweep`` section: the grid, every cell, the agreement, the models."""
    if not _ints(sw.get("batch_sizes")):
        yield Problem("sweep.batch_sizes", f"must be a non-empty list of positive integers, got "
                                           f"{sw.get('batch_sizes')!r}")
        return
    if not _ints(sw.get("threads")):
        yield Problem("sweep.threads", f"must be a non-empty list of positive integers, got {sw.get('threads')!r}")
        return
    if not (_int(sw.get("cores")) and sw["cores"] >= 1):
        yield Problem("sweep.cores", f"must be a positive integer, got {sw.get('cores')!r}")
    for key in ("device", "bucket"):
        if not isinstance(sw.get(key), str):
            yield Problem(f"sweep.{key}", f"must be a string, got {sw.get(key)!r}")
    cells = sw.get("cells")
    if not isinstance(cells, list) or not cells:
        yield Problem("sweep.cells", "must be a non-empty list of cells")
        return
    seen: set[tuple[str, int, int]] = set()
    for i, cell in enumerate(cells):
        where = f"sweep.cells[{i}]"
        if not isinstance(cell, dict):
            yield Problem(where, "must be an object")
            continue
        if cell.get("system") not in systems:
            yield Problem(f"{where}.system", f"is {cell.get('system')!r}, not one of 'spec.systems'")
        if cell.get("batch_size") not in sw["batch_sizes"]:
            yield Problem(f"{where}.batch_size", f"is {cell.get('batch_size')!r}, not one of 'sweep.batch_sizes'")
        if cell.get("threads") not in sw["threads"]:
            yield Problem(f"{where}.threads", f"is {cell.get('threads')!r}, not one of 'sweep.threads'")
        grid_key = (str(cell.get("system")), cell.get("batch_size"), cell.get("threads"))
        if grid_key in seen:
            yield Problem(where, f"repeats system/batch size/threads {grid_key!r}")
        seen.add(grid_key)  # type: ignore[arg-type]
        yield from _cell_problems(cell, where)
    groups = sw.get("groups")
    if not isinstance(groups, list) or not groups:
        yield Problem("sweep.groups", "must be a non-empty list: the paired timing of each (threads, batch size)")
        return
    by_key: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for i, group in enumerate(groups):
        where = f"sweep.groups[{i}]"
        if not isinstance(group, Mapping):
            yield Problem(where, "must be an object")
            continue
        tb = (group.get("threads"), group.get("batch_size"))
        if tb[0] not in sw["threads"] or tb[1] not in sw["batch_sizes"] or tb in by_key:
            yield Problem(where, f"must be one (threads, batch size) of the sweep, once; got {tb!r}")
            continue
        by_key[tb] = group
        yield from design_problems(group, where)
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            continue
        where = f"sweep.cells[{i}]"
        group = by_key.get((cell.get("threads"), cell.get("batch_size")))
        if group is None:
            yield Problem(where, "has no group with its (threads, batch size)")
            continue
        arms = (group.get("design") or {}).get("arms") or []
        if cell.get("system") not in arms:
            yield Problem(f"{where}.system", "is not an arm of its group's design")
        ns = cell.get("batch_ns")
        units = (group.get("design") or {}).get("units")
        if isinstance(ns, list) and units is not None and len(ns) != units:
            yield Problem(f"{where}.batch_ns", f"has {len(ns)} batches, its group's design {units!r} units")
        yield from _gate_cell_problems(cell, where, sw.get("quiet_gate") is not None,
                                       arm_timings(group, str(cell.get("system"))))
    yield from _crossover_problems(sw.get("crossover"), sw["batch_sizes"], sw["threads"], systems)
    yield from _agreement_problems(sw.get("agreement"), systems)
    yield from _model_problems(sw.get("models"), systems)


def _crossover_problems(cross: Any, sizes: list[int], threads: list[int], systems: list[str]) -> Iterator[Problem]:
    """Per thread count and system, the smallest swept B where the baseline caught up, or "none up to B_max=N"."""
    if not isinstance(cross, dict):
        yield Problem("sweep.crossover", "must be an object of threads -> system -> batch size")
        return
    for t, per in cross.items():
        if not (isinstance(t, str) and t.isdigit() and int(t) in threads and isinstance(per, dict)):
            yield Problem(f"sweep.crossover.{t}", "must be a swept thread count mapping systems to batch sizes")
            continue
        for name, b in per.items():
            ok = (_int(b) and b in sizes) or (isinstance(b, str) and b == f"none up to B_max={max(sizes)}")
            if name not in systems or not ok:
                yield Problem(f"sweep.crossover.{t}.{name}", f"must be a swept batch size or 'none up to "
                                                            f"B_max={max(sizes)}' for one of the systems, got {b!r}")


def _cell_problems(cell: Mapping[str, Any], where: str) -> Iterator[Problem]:
    for key in ("track", "device"):
        if not isinstance(cell.get(key), str):
            yield Problem(f"{where}.{key}", f"must be a string, got {cell.get(key)!r}")
    if not isinstance(cell.get("batched_decode"), bool):
        yield Problem(f"{where}.batched_decode", "must be true or false")
    for key in ("sentences_per_s", "tokens_per_s"):
        v = cell.get(key)
        low = 0.0 if key == "tokens_per_s" else 1e-12
        if not _in(v, low, MAX_RATE):
            yield Problem(f"{where}.{key}", f"must be a rate in [{low:g}, {MAX_RATE:g}] per second, got {v!r}")
            continue
        ci = cell.get(f"{key}_ci95")
        if not (isinstance(ci, list) and len(ci) == 2 and all(_in(x, 0.0, MAX_RATE) for x in ci) and ci[0] <= ci[1]):
            yield Problem(f"{where}.{key}_ci95", f"must be [lo, hi], two rates with lo <= hi, got {ci!r}")
    for key in ("batch_p50_ms", "batch_p90_ms", "batch_p99_ms"):
        if not _in(cell.get(key), 0.0, MAX_BATCH_NS / 1e6):
            yield Problem(f"{where}.{key}", f"must be a non-negative number of ms, got {cell.get(key)!r}")
    ns, items, toks = cell.get("batch_ns"), cell.get("batch_items"), cell.get("batch_tokens")
    if not (isinstance(ns, list) and ns and all(_num(v) and 0 < v <= MAX_BATCH_NS for v in ns)):
        yield Problem(f"{where}.batch_ns", "must be a non-empty list of positive nanoseconds (per batch, the median "
                                           "over rounds)")
    elif not (isinstance(items, list) and _ints(items) and isinstance(toks, list)
              and all(_int(v) and v >= 0 for v in toks) and len(items) == len(toks) == len(ns)):
        yield Problem(f"{where}.batch_items", "batch_items and batch_tokens must be counts, one per batch_ns entry")
    elif any(v > cell["batch_size"] for v in (items or []) if _int(cell.get("batch_size"))):
        yield Problem(f"{where}.batch_items", f"holds a batch larger than batch_size {cell.get('batch_size')!r}")
    sp = cell.get("speedup")
    if sp is not None:
        yield from speedup_problems(sp, f"{where}.speedup")
    if cell.get("verdict") not in VERDICTS:
        yield Problem(f"{where}.verdict", f"must be one of {', '.join(VERDICTS)}, got {cell.get('verdict')!r}")
    elif isinstance(sp, dict) and sp.get("verdict") != cell["verdict"]:
        yield Problem(f"{where}.verdict", f"is {cell['verdict']!r}, its speed-up's {sp.get('verdict')!r}")
    mem = cell.get("peak_memory")
    if not isinstance(mem, dict) or not isinstance(mem.get("method"), str):
        yield Problem(f"{where}.peak_memory", "must be an object with a 'method'")
    else:
        for key in ("base_bytes", "peak_bytes"):
            if key in mem and not _in(mem[key], 0, MAX_BYTES):
                yield Problem(f"{where}.peak_memory.{key}", f"must be a byte count, got {mem[key]!r}")
    en = cell.get("energy")
    if not isinstance(en, dict) or not isinstance(en.get("status"), str):
        yield Problem(f"{where}.energy", "must be an object with a 'status' string")
    elif en["status"] == "measured":
        for key in ("j_per_sentence", "joules", "joules_above_idle", "idle_w", "window_s"):
            if key in en and not _in(en[key], -MAX_JOULES if key == "joules_above_idle" else 0.0, MAX_JOULES * 1e3):
                yield Problem(f"{where}.energy.{key}", f"must be a finite non-negative number, got {en[key]!r}")
        if not _in(en.get("j_per_sentence"), 0.0, MAX_JOULES):
            yield Problem(f"{where}.energy.j_per_sentence", f"must be joules in [0, {MAX_JOULES:g}], got "
                                                           f"{en.get('j_per_sentence')!r}")


def _gate_cell_problems(cell: Mapping[str, Any], where: str, gated: bool, timings: int) -> Iterator[Problem]:
    """A gated sweep (``--quiet-gate``) says what the gate did in every cell, for exactly its timings (every
    batch in every round); an ungated one has no such counts (a gate cannot be added or dropped by hand)."""
    c = cell.get("quiet_gate")
    if not gated:
        if c is not None:
            yield Problem(f"{where}.quiet_gate", "is present, but 'sweep.quiet_gate' (the gate's settings) is not")
        return
    yield from gate_count_problems(c, f"{where}.quiet_gate", timings, "the cell timed {} batches")


def _agreement_problems(agreement: Any, systems: list[str]) -> Iterator[Problem]:
    if not isinstance(agreement, dict):
        yield Problem("sweep.agreement", "must be an object of system -> counts")
        return
    for name, a in agreement.items():
        where = f"sweep.agreement.{name}"
        if name not in systems:
            yield Problem(where, "is not one of 'spec.systems'")
        elif not (isinstance(a, dict) and _int(a.get("compared")) and _int(a.get("agreed"))
                  and 0 <= a["agreed"] <= a["compared"]):
            yield Problem(where, "must hold counts 0 <= agreed <= compared")
        elif a.get("rate") is not None and not _in(a["rate"], 0.0, 1.0):
            yield Problem(f"{where}.rate", f"must be null or a share in [0, 1], got {a.get('rate')!r}")


def _model_problems(models: Any, systems: list[str]) -> Iterator[Problem]:
    if not isinstance(models, dict):
        yield Problem("sweep.models", "must be an object of system -> sizes")
        return
    for name, m in models.items():
        where = f"sweep.models.{name}"
        if name not in systems or not isinstance(m, dict):
            yield Problem(where, "must be an object for one of 'spec.systems'")
            continue
        if not (_int(m.get("parameters")) and 0 <= m["parameters"] <= MAX_PARAMETERS):
            yield Problem(f"{where}.parameters", f"must be a parameter count, got {m.get('parameters')!r}")
        if not (_int(m.get("parameter_bytes")) and 0 <= m["parameter_bytes"] <= MAX_BYTES):
            yield Problem(f"{where}.parameter_bytes", f"must be a byte count, got {m.get('parameter_bytes')!r}")
        how = m.get("parameter_bytes_note")
        if how is not None and not isinstance(how, str):
            yield Problem(f"{where}.parameter_bytes_note", f"must be text, got {how!r}")
        disk = m.get("checkpoint_bytes")
        if not (isinstance(disk, str) or (isinstance(disk, int) and _int(disk) and 0 <= disk <= MAX_BYTES)):
            yield Problem(f"{where}.checkpoint_bytes", f"must be a byte count or a note, got {disk!r}")


STORE = SealedStore(SweepRecordError, "Sweep", "bench latency --batch-sizes ... --record", "sweep again", "sweep_id",
                    sweep_dir, sweep_record_file, lambda rec, path: validate_sweep_record(rec, path),
                    names=("sweep_id", "spec.task", "spec.split", "spec.budget", "spec.baseline", "spec.systems[]",
                           "systems{}"), kind=KIND, id_names_file=True,
                    identity=sweep_record_id)


def read_sweep_record(path: Path | str) -> dict[str, Any]:
    """One sweep record file, checked and its digest (if any) fitting; returned without its digest."""
    return STORE.read(path)


def load_sweep_records(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every record under ``results_dir/sweep/*.json``, checked, oldest first (by created, id)."""
    return STORE.load(results_dir)


def write_sweep_record(results_dir: Path | str, record: Mapping[str, Any]) -> Path:
    """Check, then write sealed and atomically to ``results/sweep/<sweep_id>.json``."""
    return STORE.write(results_dir, record)


__all__ = ["SweepRecordError", "load_sweep_records", "read_sweep_record", "validate_sweep_record",
           "write_sweep_record"]
