"""One artefact store: every JSON under results/ is read (and written) by bench/store, typed and validated.

(a) every committed JSON under results/ loads through the store's loader for its kind; (b) no module of
bench outside the store (and the layers that read their own, non-results JSON: bench/api, bench/data,
bench/papers) parses or writes JSON, except the listed cases, each with its reason; (c) each loader refuses a
malformed file with a :class:`UserError` that names the file, and each writer refuses to write one.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.api.errors import UserError
from bench.store import StoreError
from bench.store.calibration import (
    CalibrationSummaryError,
    is_summary,
    load_summaries,
    read_summary,
    validate_summary,
    write_summary,
)
from bench.store.latency import LatencyRecordError, load_latency_records, read_latency_record, write_latency_record
from bench.store.orderings import OrderingError, load_orderings, read_ordering, remove_ordering, write_ordering
from bench.store.paths import (
    CALIBRATION_DIR,
    LATENCY_DIR,
    ORDERING_DIR,
    SIGNIFICANCE_DIR,
    SWEEP_DIR,
    calibration_summary_file,
    latency_record_file,
    ordering_file,
    pvalues_file,
)
from bench.store.pvalues import PValues, PValuesError, load_pvalues
from bench.store.records import RecordError, load_records, read_record
from bench.store.submissions import is_submission, load_submissions, read_submission

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"


# --- (a) every committed file loads through its kind's loader ---------------------------------------
def _committed() -> list[Path]:
    hidden = lambda p: any(s.startswith(".") for s in p.relative_to(RESULTS).parts)  # noqa: E731  (locks, temp files)
    return sorted(p for p in RESULTS.rglob("*.json") if not hidden(p))


def load_typed(path: Path) -> Any:
    """The store's loader for the kind of file ``path`` is (by where it lies under results/)."""
    where = path.relative_to(RESULTS).parts
    if len(where) == 1:
        return (read_submission if is_submission(json.loads(path.read_text())) else read_record)(path)
    folder = where[0]
    if folder == CALIBRATION_DIR and len(where) == 2:
        return read_summary(path) if is_summary(json.loads(path.read_text())) else read_record(path)
    if folder == LATENCY_DIR and len(where) == 2:
        return read_latency_record(path)
    if folder == ORDERING_DIR and len(where) == 2:
        return read_ordering(path)
    if folder == SWEEP_DIR and len(where) == 2:
        from bench.store.sweeps import read_sweep_record

        return read_sweep_record(path)
    if path == pvalues_file(RESULTS):
        return load_pvalues(path)
    raise AssertionError(f"{path}: no store loader reads this kind of file; add one to bench/store (and here)")


@pytest.mark.parametrize("path", _committed(), ids=lambda p: p.relative_to(RESULTS).as_posix())
def test_every_committed_json_loads_through_its_kinds_loader(path: Path) -> None:
    assert load_typed(path)


def test_the_folder_loaders_read_every_committed_file_of_their_kind() -> None:
    files = _committed()
    top = [p for p in files if p.parent == RESULTS]
    complete = [p for p in top if json.loads(p.read_text()).get("status") == "complete"]
    assert len(load_records(RESULTS)) == len(complete) > 0
    assert {r["run_id"] for r in load_submissions(RESULTS)} == {
        p.stem for p in top if json.loads(p.read_text()).get("kind") == "external"}
    cal = [p for p in files if p.parent == RESULTS / CALIBRATION_DIR]
    summaries = [p for p in cal if is_summary(json.loads(p.read_text()))]
    assert len(load_summaries(RESULTS)) == len(summaries) > 0
    assert len(load_records(RESULTS / CALIBRATION_DIR)) == len(cal) - len(summaries)
    assert len(load_latency_records(RESULTS)) == len(list((RESULTS / LATENCY_DIR).glob("*.json"))) > 0
    assert len(load_orderings(RESULTS)) == len(list((RESULTS / ORDERING_DIR).glob("*.json"))) > 0
    assert PValues(pvalues_file(RESULTS)).known
    assert (RESULTS / SIGNIFICANCE_DIR).is_dir()


def test_the_writers_write_back_what_the_loaders_read(tmp_path: Path) -> None:
    """A committed file written by its kind's writer reads back equal, at the path the store names."""
    summary = next(s for s in load_summaries(RESULTS))
    stored = {**summary, "points": [{k: v for k, v in p.items() if k != "dev_loss_curve"} for p in summary["points"]]}
    path = write_summary(tmp_path, stored)
    assert path == calibration_summary_file(tmp_path, summary["system"], summary["task"], summary["budget"])
    assert read_summary(path) == stored
    latency = load_latency_records(RESULTS)[0]
    path = write_latency_record(tmp_path, latency)
    assert path == latency_record_file(tmp_path, latency["latency_id"]) and read_latency_record(path) == latency
    ordering = load_orderings(RESULTS)[0]
    path = write_ordering(tmp_path, ordering, ordering["group"])
    where = (ordering["paper"], ordering["table"], ordering["group"], ordering["budget"])
    assert path == ordering_file(tmp_path, *where)
    assert load_orderings(tmp_path) == [ordering]
    assert remove_ordering(tmp_path, *where) == path
    assert not path.exists() and load_orderings(tmp_path) == []


# --- (b) nothing outside bench/store parses or writes results JSON ---------------------------------------
#: packages that read JSON of their own, never results/: the contract's atomic writer and paths (bench/api), raw
#: data and the split cache's manifests (bench/data), the papers' tables (bench/papers)
OWN_JSON = ("bench/store/", "bench/api/", "bench/data/", "bench/papers/")

#: (package, function) -> why that call to json.load(s)/json.dump/write_json_atomic is not a results/ file
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("bench/launch", "_value"): "parses a `--set key=value` value given on the command line; no file",
    ("bench/runs", "_comparable"): "a json.dumps/json.loads round trip of an in-memory config; no file",
    ("bench/runs", "_jsonl"): "a system's training log (metrics JSONL) in its workdir under .cache/, not results/",
    ("bench/runs", "_read"): "the header of a decode journal (its workdir under .cache/), not results/",
    ("bench/runs", "_entry"): "one line of a decode journal (its workdir under .cache/), not results/",
    ("bench/runs", "_parse"): "who holds a run lock (results/.locks/<run_id>.lock, read from the locked file): "
                              "process coordination, empty between runs, never an artefact",
    ("bench/workflows", "check_contents"): "a fetched checkpoint's config.json in the checkpoint cache",
    ("bench/workflows", "write_manifest"): "the fetch manifest of a checkpoint in the checkpoint cache",
    ("bench/workflows", "read_manifest"): "the fetch manifest of a checkpoint in the checkpoint cache",
    ("bench/scoring", "write_entry"): "a `bench compare` result cache entry under $BENCH_CACHE/compare, not results/",
}

_JSON_CALLS = {"load", "loads", "dump"}


def _json_calls(tree: ast.AST) -> Iterator[tuple[str, str, int]]:
    """(enclosing function, call, line) of every json.load/loads/dump and write_json_atomic call in ``tree``
    (``import json as j`` and ``from json import loads`` included)."""
    json_names = {"json"}
    direct: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            json_names |= {a.asname for a in node.names if a.name == "json" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "json":
            direct |= {a.asname or a.name for a in node.names if a.name in _JSON_CALLS}

    def visit(node: ast.AST, where: str) -> Iterator[tuple[str, str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from visit(child, child.name)
                continue
            if isinstance(child, ast.Call):
                fn = child.func
                if (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id in json_names
                        and fn.attr in _JSON_CALLS):
                    yield where, f"json.{fn.attr}", child.lineno
                elif isinstance(fn, ast.Name) and fn.id in direct:
                    yield where, fn.id, child.lineno
                elif (isinstance(fn, ast.Name) and fn.id == "write_json_atomic") or (
                        isinstance(fn, ast.Attribute) and fn.attr == "write_json_atomic"):
                    yield where, "write_json_atomic", child.lineno
            yield from visit(child, where)

    yield from visit(tree, "<module>")


def _scan() -> tuple[list[str], set[tuple[str, str]]]:
    found, used = [], set()
    for path in sorted((REPO / "bench").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(OWN_JSON):
            continue
        package = rel.rsplit("/", 1)[0]
        for where, call, line in _json_calls(ast.parse(path.read_text(encoding="utf-8"), rel)):
            if (package, where) in EXCEPTIONS:
                used.add((package, where))
            else:
                found.append(f"{rel}:{line} {where}() calls {call}")
    return found, used


def test_only_the_store_parses_or_writes_json_under_results() -> None:
    found, used = _scan()
    assert found == [], (
        "read and write results/ JSON through bench/store (a typed, validated loader per kind); a call that "
        "reads or writes another file belongs in EXCEPTIONS with its reason"
    )
    assert sorted(set(EXCEPTIONS) - used) == [], "exceptions that no longer match a call: remove them"


def test_the_scan_finds_a_raw_reader(tmp_path: Path) -> None:
    """The check above must be able to fail: aliased and direct forms are seen, with their function."""
    source = ("import json as j\nfrom json import loads as parse\nfrom bench.api import atomic\n\n"
              "def a(p):\n    return j.load(open(p))\n\ndef b(t):\n    return parse(t)\n\n"
              "def c(p, d):\n    atomic.write_json_atomic(p, d)\n")
    assert [(w, c) for w, c, _ in _json_calls(ast.parse(source))] == [
        ("a", "json.load"), ("b", "parse"), ("c", "write_json_atomic")]


# --- (c) a malformed file stops its loader with the file named; a writer refuses one --------------------
def _first(pattern: str) -> dict[str, Any]:
    return json.loads(sorted(RESULTS.glob(pattern))[0].read_text())


def _summary() -> dict[str, Any]:
    return next(d for d in (json.loads(p.read_text()) for p in sorted((RESULTS / CALIBRATION_DIR).glob("*.json")))
                if is_summary(d))


def _submission() -> dict[str, Any]:
    return next(d for d in (json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json")))
                if d.get("kind") == "external")


def _run() -> dict[str, Any]:
    return next(d for d in (json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json")))
                if d.get("kind", "run") == "run" and d.get("status") == "complete")


def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    *path, last = dotted.split(".")
    node: Any = out
    for key in path:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return out


_DELETE = object()

def _own_name(doc: dict[str, Any], pattern: str | None = None) -> str:
    """The file name a good document is read under: one id is one file, by path too (a copy elsewhere is refused)."""
    if pattern is not None:
        return sorted(RESULTS.glob(pattern))[0].name
    if is_summary(doc):
        return f"{doc['system']}--{doc['task']}--{doc['budget']}.json"
    return f"{doc['run_id']}.json"


#: (kind, where the file goes under a results dir, a good document, the loader, its error type)
KINDS: dict[str, tuple[str, Callable[[], Any], Callable[[Path], Any], type[StoreError]]] = {
    "record": (_own_name(_run()), _run, read_record, RecordError),
    "submission": (_own_name(_submission()), _submission, read_submission, RecordError),
    "summary": (f"{CALIBRATION_DIR}/{_own_name(_summary())}", _summary, read_summary, CalibrationSummaryError),
    "latency": (f"{LATENCY_DIR}/{_own_name({}, 'latency/*.json')}", lambda: _first("latency/*.json"),
                read_latency_record, LatencyRecordError),
    "ordering": (f"{ORDERING_DIR}/{_own_name({}, 'ordering/*.json')}", lambda: _first("ordering/*.json"),
                 read_ordering, OrderingError),
    "pvalues": (f"{SIGNIFICANCE_DIR}/pvalues.json", lambda: json.loads(pvalues_file(RESULTS).read_text()),
                load_pvalues, PValuesError),
}

BROKEN = [
    ("record", "schema", 2, "'schema' must be 1"),
    ("record", "kind", "calibrated", "'kind' must be one of run, external"),
    ("record", "scores", [], "'scores' must be an object"),
    ("record", "submission", {"name": "x"}, "'submission' is only for records of kind 'external'"),
    ("submission", "submission", None, "'submission' must be an object"),
    ("submission", "submission.name", "", "'submission.name' must be a non-empty string"),
    ("submission", "submission.paper", 3, "'submission.paper' must be a string or null"),
    ("submission", "kind", "run", "'submission' is only for records of kind 'external'"),
    ("summary", "schema", _DELETE, "'schema' must be 1"),
    ("summary", "metric", 4, "'metric' must be a non-empty string"),
    ("summary", "points", {}, "'points' must be a list"),
    ("summary", "points.0.updates", "many", "'points[0].updates' must be a whole number"),
    ("summary", "points.0.degenerate", "no", "'points[0].degenerate' must be true or false"),
    ("summary", "pick", {"run_id": "x"}, "'pick' must be null or an object"),
    ("latency", "kind", "run", "'kind' 'latency'"),
    ("latency", "systems", {}, "'systems' must be a non-empty object"),
    ("ordering", "kind", _DELETE, "'kind' 'ordering'"),
    ("ordering", "rows", [], "'rows' must be a non-empty list"),
    ("ordering", "rows.0.reproduced", "high", "'rows[0].reproduced' must be a finite number"),
    ("ordering", "tau_ci95", [0.1], "'tau_b' and 'tau_ci95'"),
    ("ordering", "pairs", None, "'pairs' must be a list"),
    ("ordering", "reference.rows.0.delta", None, "'reference.rows[0]' needs"),
    ("pvalues", "a|b", 1.5, "must be a p-value in [0, 1]"),
]


def _write(root: Path, kind: str, data: Any) -> Path:
    path = root / KINDS[kind][0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_that_is_not_json_is_named_with_the_parsers_message(kind: str, tmp_path: Path) -> None:
    _, _, load, error = KINDS[kind]
    path = _write(tmp_path, kind, '{"schema": 1,')
    with pytest.raises(error) as info:
        load(path)
    assert isinstance(info.value, UserError) and str(path) in str(info.value) and "not valid JSON" in str(info.value)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_committed_document_passes_and_a_list_does_not(kind: str, tmp_path: Path) -> None:
    _, good, load, error = KINDS[kind]
    assert load(_write(tmp_path, kind, good()))
    path = _write(tmp_path, kind, [good()])
    with pytest.raises(error, match="top level must be a JSON object"):
        load(path)


@pytest.mark.parametrize(("kind", "field", "value", "message"), BROKEN,
                         ids=[f"{k}-{f}" for k, f, _, _ in BROKEN])
def test_a_broken_field_is_named_with_its_file_and_the_fix(kind: str, field: str, value: Any, message: str,
                                                          tmp_path: Path) -> None:
    _, good, load, error = KINDS[kind]
    path = _write(tmp_path, kind, _set(good(), field, value))
    with pytest.raises(error) as info:
        load(path)
    text = str(info.value)
    assert isinstance(info.value, UserError) and text.startswith(f"{path}: ") and message in text
    assert "fix" in text or "delete" in text  # and what to do about it


def test_the_folder_loaders_stop_on_a_broken_file(tmp_path: Path) -> None:
    summary = _set(_summary(), "points.0.lr", "fast")
    _write(tmp_path, "summary", summary)
    with pytest.raises(CalibrationSummaryError, match=re.escape(f"{KINDS['summary'][0]}: 'points[0].lr'")):
        load_summaries(tmp_path)
    _write(tmp_path, "ordering", _set(_first("ordering/*.json"), "paper", ""))
    with pytest.raises(OrderingError, match=re.escape(f"{KINDS['ordering'][0]}: 'paper'")):
        load_orderings(tmp_path)
    _write(tmp_path, "latency", _set(_first("latency/*.json"), "valid", "yes"))
    with pytest.raises(LatencyRecordError, match=re.escape(f"{KINDS['latency'][0]}: 'valid'")):
        load_latency_records(tmp_path)
    _write(tmp_path, "pvalues", ["not", "a", "map"])
    with pytest.raises(PValuesError, match="pvalues.json: top level"):
        PValues(pvalues_file(tmp_path))


def test_a_summary_point_reads_its_dev_loss_curve_from_a_checked_record(tmp_path: Path) -> None:
    summary = _summary()
    run_id = summary["points"][0]["run_id"]
    own = tmp_path / CALIBRATION_DIR / f"{summary['system']}--{summary['task']}--{summary['budget']}.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps(summary))  # one sweep is one file: read only under its own name
    (tmp_path / CALIBRATION_DIR / f"{run_id}.json").write_text(json.dumps({"schema": 1, "run_id": run_id}))
    with pytest.raises(RecordError, match=f"{run_id}.json: 'status' must be a non-empty string"):
        load_summaries(tmp_path)


def test_read_submission_refuses_a_run_record(tmp_path: Path) -> None:
    path = _write(tmp_path, "record", _run())
    with pytest.raises(RecordError, match="not a submission"):
        read_submission(path)


def test_the_writers_refuse_what_the_loaders_would(tmp_path: Path) -> None:
    with pytest.raises(CalibrationSummaryError, match="<new summary>: 'points'"):
        write_summary(tmp_path, _set(_summary(), "points", None))
    with pytest.raises(OrderingError, match="<new ordering>: 'rows'"):
        write_ordering(tmp_path, _set(_first("ordering/*.json"), "rows", None), "g")
    with pytest.raises(LatencyRecordError, match="<new record>: 'systems'"):
        write_latency_record(tmp_path, _set(_first("latency/*.json"), "systems", None))
    assert not any(tmp_path.rglob("*.json"))
    assert validate_summary(_summary())
