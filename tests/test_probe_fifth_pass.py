"""#57, a fifth hostile pass (after the fourth pass's verdict, one-id-one-file and NUL fixes); every probe is a test
here, victims and sentinels outside the tree (``tmp_path``). 48 probes (129 test cases); the table (id: what ->
result):

Records, as a hostile contributor edits them (a fresh digest where it says "resealed"):

- P01 ``created`` of the wrong JSON type in an ordering (12345, null, a list), resealed -> fixed (refused by every kind;
  orderings checked no ``created`` at all)
- P02 ``created`` "not-a-date" or without a UTC offset, any kind, resealed: sorted after every real date, so the record
  shadowed newer ones -> fixed (:func:`bench.store.sealed.shared_problem`: an ISO-8601 timestamp with its offset)
- P03 ``created`` far in the future (2999, with its offset) -> held: a date is a claim like any other (the tests
  themselves use 2099 for "newest"); every record it could shadow passes its own checks
- P04 an ordering's ``samples`` 10^9, 0, -5, "1000", 1.5, true, resealed: ``--deep`` bootstraps with it (10^9: hours or
  an 8 GB allocation) -> fixed (1 to 100,000, :data:`bench.store.sealed.MAX_RESAMPLES`)
- P05 ``seed`` "x" or 10^30 (ordering, latency settings), resealed -> fixed (whole, at most 63 bits, anywhere)
- P06 a latency speed-up's ``n_resamples`` 10^10, 0, -3, "2000", resealed: ``np.empty(10^10)`` under ``--deep`` ->
  fixed (every ``n_resamples`` of every kind, wherever it stands)
- P07 a sweep cell's ``n_resamples`` 10^10, 0 -> fixed (same rule)
- P08 ``bench order --samples 1000000`` -> fixed (refused up front: the writer never writes what readers refuse)
- P09 a 100 MB record (zeros) -> fixed (was parsed: 3.6 s, 550 MB; now refused by its size, 32 MiB cap, unread)
- P10 a 6 MB record of ``[{},{},…]`` (a dict per 3 bytes; 256 MiB of it would take about 5 GB) -> fixed (2,000,000
  values counted before parsing; :data:`bench.api.textfile.RECORD`)
- P11 the harness writing a record over those caps -> fixed (refused before anything is written)
- P12 a compare-cache entry of 2,000,001 values -> fixed (a miss at once, within the caps of a record)
- P13 a record file that is a FIFO (results/, calibration/) -> clean (named, no hang)
- P14 a record "file" that is a directory named ``*.json`` (results/, latency/) -> clean
- P15 a record starting with a UTF-8 BOM -> clean (one line: "Unexpected UTF-8 BOM")
- P16 a record file named ``evil\\x1b]0;pwned\\x07…\\nerror: forged line.json`` -> fixed (the escapes were shown, but
  the newline printed a forged ``error:`` line: every error is now one line, :func:`bench.cli.common.print_error`)
- P17 NaN or infinity (``NaN``, ``Infinity``, ``1e999``) at any number of any kind, resealed: accepted at hundreds of
  number fields (53 of a run record, 299 of a latency record, 147 of a sweep: canary readings, drifts, thresholds,
  stats, configs), and every comparison with NaN is false
  -> fixed (refused everywhere; a kind names the fields that may be undefined: an ordering's τ-b)
- P18 an ordering's ``tau_b`` set to NaN (undefined) where its rows define τ-b -> fixed (derived from its rows)
- P19 an ordering's ``tau_ci95`` NaN where τ-b is defined -> held: ``bench order`` writes it when every resample
  ties; the interval is ``--deep``'s to re-derive
- P20 a latency record's stated thresholds loosened (``ci_ratio``, ``aa_max``… 1e9 or inf) and every verdict flipped to
  VALID, resealed -> fixed (was shown VALID, and ``--deep`` re-derives with the same thresholds: a record states the
  harness's thresholds or stricter ones, :func:`bench.store.verdicts.rules_problems`)
- P21 a block-design latency record's ``canary_tolerance`` 1e9 hiding a 215 % drift -> fixed (same rule)
- P22 a NaN canary drift and NaN canary readings (the drift check skipped non-finite readings) -> fixed (P17's rule)
- P23 a sweep group's thresholds loosened to 1e9 -> clean before (another verdict check caught it), now named at the
  threshold
- P24 the store's thresholds and tolerance against the meter's -> a test keeps them equal

Escaping and export (a resealed record's free text reaching reports, pages and files):

- P25 an ordering's ``metric``, ``excluded[].why``/``label`` and reference ``recipe`` holding ``<img onerror>`` ->
  clean (markdown and HTML escaped; CommonMark with HTML on renders no tag)
- P26 latency and sweep records' ``device`` and fingerprint strings holding backticks, ``<img onerror>``,
  ``[l](javascript:…)``, ``|`` and a newline -> clean (no tag, no link, no forged list item)
- P27 ``bench export`` of a run whose metric names and recipe start with ``=`` and ``@``, and ``environment.cpu``
  ``=cmd|x`` -> clean (headers and cells neutralised)

Environment and arguments:

- P28 ``$BENCH_RESULTS`` empty -> clean (unset)
- P29 ``$BENCH_RESULTS`` naming /dev/null or a FIFO: "is a file, not a folder" -> fixed (named as what it is)
- P30 ``$BENCH_DATA`` naming /dev/null: "is a file", and the message broke over five lines -> fixed (one line)
- P31 ``$BENCH_RESULTS`` naming the checkout's results/ (absolute, relative) -> clean (no run listed twice)
- P32 a queue file that is a FIFO -> clean
- P33 a queue line of 300 kB -> fixed (echoed whole in the error line; now cut at 200 characters)
- P34 a queue line missing ``--system`` -> fixed (argparse printed its own "bench run: error:" line first)

A hostile mirror (a local server; 1 s stall window, 2 s deadline):

- P35 accepts, never answers -> clean (stalled)
- P36 a redirect loop -> clean
- P37 more than 100 headers, P38 a header line over 64 KiB, P39 a non-HTTP banner -> fixed (were "re-run where the host
  can be reached; it resumes", for a host that answered: now "not valid HTTP", nothing kept)
- P40 an invalid chunk size, P41 a chunk size of 2^72 -> clean (the connection's, resumable)
- P42 a negative Content-Length, P43 two Content-Lengths -> clean (bounded by the cap)
- P44 status 999, P45 a reason phrase with ANSI escapes and BEL -> clean (shown as text)
- P46 a resume answered 206 with ``Content-Range: bytes 0-5/6`` -> fixed (its bytes were appended at byte 3: a file
  no server sent; now refused and the ``.part`` removed)
- P47 a resume answered 200 (Range ignored) -> clean (starts over)
- P48 endless ``100 Continue`` lines -> clean (the deadline)

The fixes are in the one sealed store
(:mod:`bench.store.sealed`, :mod:`bench.store.verdicts`, :mod:`bench.store.integrity`), the one reader
(:mod:`bench.api.textfile`, :mod:`bench.store.files`), the one downloader (:mod:`bench.api.download`) and the CLI's one
error line; none is a special case of one probe.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from probe_tools import answer, raw_mirror, read_request
from probe_tools import bench_cli as _bench
from probe_tools import one_line as _one_line
from probe_tools import record_data as _data
from probe_tools import refused as _refused

from bench.store import kinds
from bench.store.files import StoreError
from bench.store.integrity import sealed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INCLUDE = ROOT / "examples" / "bench_example_plugin" / "bench_include.py"
SEALED_RUN = RESULTS / "fairseq_transformer--quora--test--cpu--s42--b0395e29.json"
SUMMARY = RESULTS / "calibration" / "bert2bert_minilm_l6--quora--cpu.json"
POINT = RESULTS / "calibration" / "bert2bert_minilm_l6--quora--dev--cpu--s42--61dbc594.json"
ORDERING = RESULTS / "ordering" / "mist-table3--quora--cpu.json"
PAIRED = RESULTS / "latency" / "quora--test--paper--random--forced--20261129T135536--c4499950.json"  # UNSTABLE
BLOCK = RESULTS / "latency" / "quora--test--paper--random--forced--20261126T023433--d03241f6.json"  # schema 1
SWEEP = RESULTS / "sweep" / "quora--test--paper--sweep--20261129T104545--a98489b8.json"
SUBMISSION = RESULTS / "convs2s_xsum--xsum--test-refs--external--d7438ac2.json"
PAYLOAD = "<img src=x onerror=alert(1)>"

#: a committed record of each kind that has a ``created``
CREATED = {"run": SEALED_RUN, "submission": SUBMISSION, "calibration": SUMMARY, "calibration point": POINT,
           "latency": BLOCK, "sweep": SWEEP, "ordering": ORDERING}


def _put(data: Any, at: tuple[Any, ...], value: Any) -> None:
    for key in at[:-1]:
        data = data[key]
    data[at[-1]] = value


# ---------------------------------------------------------------- P01-P03: created

@pytest.mark.parametrize("kind", sorted(CREATED))
@pytest.mark.parametrize("value", [12345, None, ["x"], "not-a-date", "2026-11-29T10:45:45"],
                         ids=["int", "null", "list", "not-a-date", "no-offset"])
def test_created_is_a_timestamp_with_its_offset_in_every_kind(kind: str, value: Any) -> None:
    data = _data(CREATED[kind])
    data["created"] = value
    _refused(kind, CREATED[kind], data, r"'created' (is .*not an ISO-8601 timestamp|must be)")


def test_a_created_in_the_future_is_held_as_a_claim() -> None:
    data = _data(ORDERING)
    data["created"] = "2999-01-01T00:00:00+00:00"
    assert kinds.KINDS["ordering"].accept(sealed(data), ORDERING)["created"].startswith("2999")


# ---------------------------------------------------------------- P04-P08: what --deep loops over

def _first_speedup(rec: dict[str, Any]) -> str:
    return next(n for n, e in rec["systems"].items() if isinstance(e.get("speedup"), dict))


RESAMPLES: list[tuple[str, Path, Callable[[dict[str, Any]], tuple[Any, ...]], Any, str]] = [
    *[("ordering", ORDERING, lambda d: ("samples",), v, r"'samples' is .*not a resample count")
      for v in (10**9, 0, -5, "1000", 1.5, True)],
    *[("ordering", ORDERING, lambda d: ("seed",), v, r"'seed' is .*not a seed") for v in ("x", 10**30)],
    *[("latency", BLOCK, lambda d: ("systems", _first_speedup(d), "speedup", "n_resamples"), v,
       r"'systems\.\w+\.speedup\.n_resamples' is .*not a resample count") for v in (10**10, 0, -3, "2000")],
    *[("latency", BLOCK, lambda d: ("settings", "seed"), v, r"'settings\.seed' is .*not a seed")
      for v in ("x", 10**30)],
    *[("sweep", SWEEP, lambda d: ("sweep", "cells", next(i for i, c in enumerate(d["sweep"]["cells"])
                                                         if isinstance(c.get("speedup"), dict)), "speedup",
                                  "n_resamples"), v, r"'sweep\.cells\[\d+\]\.speedup\.n_resamples' is .*not a resample")
      for v in (10**10, 0)],
]


@pytest.mark.parametrize("kind, path, where, value, said", RESAMPLES,
                         ids=[f"{k}-{'.'.join(map(str, w(_data(p))))}={v!r}"[:60] for k, p, w, v, _ in RESAMPLES])
def test_a_resample_count_or_seed_out_of_range_is_refused(kind: str, path: Path, where: Callable, value: Any,
                                                          said: str) -> None:
    data = _data(path)
    _put(data, where(data), value)
    _refused(kind, path, data, said)


def test_order_refuses_more_samples_than_a_record_may_claim(tmp_path: Path) -> None:
    said = _one_line(_bench("order", "mist:3", "--samples", "1000000", tmp_path=tmp_path))
    assert "--samples 1000000: at most 100,000" in said
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- P09-P16: the record file itself

def test_a_record_over_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    from bench.store.records import RecordError, load_records

    results = tmp_path / "results"
    results.mkdir()
    with open(results / "zz.json", "wb") as fh:
        fh.truncate(100 << 20)  # sparse: 100 MB of zeros, never read
    started = time.monotonic()
    with pytest.raises(RecordError, match=r"zz\.json: 104,857,600 bytes, over the 32 MiB cap for a record"):
        load_records(results)
    assert time.monotonic() - started < 2


def test_a_record_of_many_small_values_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    import tracemalloc

    from bench.store.records import RecordError, load_records

    results = tmp_path / "results"
    results.mkdir()
    (results / "zz.json").write_bytes(b"[" + b"{}," * 2_000_001 + b"{}]")  # 6 MB; parsed: ~120 MB of dicts
    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match=r"zz\.json: about 4,000,00\d JSON values, over the 2,000,000-value cap"):
            load_records(results)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 << 20, peak


def test_the_writer_refuses_a_record_its_readers_would_refuse(tmp_path: Path) -> None:
    from bench.store.files import write_json

    target = tmp_path / "big.json"
    with pytest.raises(StoreError, match=r"big\.json: not written: .*over the caps of a record"):
        write_json(target, {"items": list(range(2_100_000))})
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_a_compare_cache_entry_over_the_caps_is_a_miss_at_once(tmp_path: Path) -> None:
    from bench.scoring.compare_cache import read_entry

    entry = tmp_path / ("a" * 64 + ".json")
    entry.write_bytes(b'{"result": [' + b"{}," * 2_000_001 + b"{}]}")
    started = time.monotonic()
    assert read_entry(entry) is None
    assert time.monotonic() - started < 2


@pytest.mark.parametrize("what", ["fifo", "directory", "bom"])
@pytest.mark.parametrize("where", ["", "calibration", "latency"])
def test_a_record_file_that_is_no_record_is_named(tmp_path: Path, what: str, where: str) -> None:
    results = tmp_path / "results"
    folder = results / where
    folder.mkdir(parents=True)
    path = folder / ("a--b--cpu.json" if where == "calibration" else "x--y.json")
    if what == "fifo":
        os.mkfifo(path)
    elif what == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"\xef\xbb\xbf{}")
    store = kinds.KINDS["calibration" if where == "calibration" else where or "run"]
    said = {"fifo": "a FIFO (named pipe), not a regular file", "directory": "a directory, not a regular file",
            "bom": "Unexpected UTF-8 BOM"}[what]
    started = time.monotonic()
    with pytest.raises(StoreError) as err:
        store.read(path)
    assert str(err.value).startswith(f"{path}: ") and said in str(err.value)
    assert time.monotonic() - started < 2


def test_a_file_name_holding_escapes_and_a_newline_is_one_error_line(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "evil\x1b]0;pwned\x07\x1b[31mred\nerror: forged line.json").write_text('{"kind":"run",')
    said = _one_line(_bench("ls", "runs", "--results-dir", str(results), tmp_path=tmp_path))
    assert said.startswith("error: ") and "\\x1b]0;pwned\\x07" in said and "red error: forged line.json" in said


# ---------------------------------------------------------------- P17-P24: numbers no check can compare

def _numbers(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _numbers(v, (*at, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _numbers(v, (*at, i))]
    return [at] if isinstance(node, int | float) and not isinstance(node, bool) else []


NUMBERED = {**CREATED, "significance": RESULTS / "significance" / "pvalues.json", "latency paired": PAIRED}
KIND_OF = {name: "latency" if name == "latency paired" else name for name in NUMBERED}


@pytest.mark.parametrize("kind", sorted(NUMBERED))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_no_number_of_any_kind_may_be_nan_or_infinite(kind: str, bad: float) -> None:
    """Every number field of a real record (a spread of 25 of them), set to NaN or ±inf and resealed: refused."""
    path = NUMBERED[kind]
    base = _data(path)
    fields = [f for f in _numbers(base) if not (kind == "ordering" and f[0] in ("tau_b", "tau_ci95"))]
    step = max(1, len(fields) // 25)
    for at in fields[::step]:
        data = copy.deepcopy(base)
        _put(data, at, bad)
        _refused(KIND_OF[kind], path, data, "")


def test_the_only_nan_is_an_undefined_one() -> None:
    from bench.store.sealed import shared_problem

    assert shared_problem({"tau_b": math.nan}, ("tau_b",)) is None
    assert "not a number the harness writes" in str(shared_problem({"tau_b": math.inf}, ("tau_b",)))
    assert "not a number the harness writes" in str(shared_problem({"tau": [1.0, math.nan]}, ("tau_b",)))
    assert shared_problem({"x": [1e308, 1e308, 5]}) is None  # a sum that overflows is looked at item by item
    data = _data(ORDERING)
    data["tau_b"] = math.nan
    _refused("ordering", ORDERING, data, r"'tau_b' is NaN \(undefined\), but its rows' .* give -?\d")


def _flip_all_valid(rec: dict[str, Any]) -> None:
    rec.update(verdict="VALID", valid=True, invalid_reasons=[])
    for entry in rec["systems"].values():
        entry.update(verdict="VALID", valid=True, invalid_reasons=[])
        if isinstance(entry.get("speedup"), dict) and "verdict" in entry["speedup"]:
            entry["speedup"].update(verdict="VALID", reasons=[])
    for c in ("aa", "x2"):
        if isinstance(rec.get(c), dict):
            rec[c].update(verdict="VALID", reasons=[])


@pytest.mark.parametrize("loose", [1e9, math.inf], ids=["1e9", "inf"])
def test_loosened_thresholds_cannot_make_a_verdict_valid(loose: float) -> None:
    data = _data(PAIRED)
    for holder in (data["design"]["thresholds"], data["settings"]["thresholds"]):
        holder.update(aa_max=loose, ci_ratio=loose, round_spread=loose, x2_band=loose)
    data["settings"]["canary_tolerance"] = loose
    _flip_all_valid(data)
    _refused("latency", PAIRED, data, r"'design\.thresholds\.aa_max' is .*(harness's threshold 0\.03|not a number)")


@pytest.mark.parametrize("tolerance", [1e9, 0.5, math.nan])
def test_a_loosened_canary_tolerance_does_not_hide_a_drift(tolerance: float) -> None:
    from bench.store.verdicts import _drift

    data = _data(BLOCK)
    data["settings"]["canary_tolerance"] = tolerance
    medians = data["canary"]["median_ms_per_round"]
    data["canary"]["median_ms_per_round"] = [x * (3 if i % 2 else 1) for i, x in enumerate(medians)]
    data["canary"]["drift"] = _drift(data["canary"]["median_ms_per_round"])  # 215 %, tolerated by 1e9
    _refused("latency", BLOCK, data, r"'settings\.canary_tolerance' is .*(tolerance 0\.25 or a stricter|not a number)")


def test_a_nan_canary_reading_does_not_hide_a_drift() -> None:
    data = _data(BLOCK)
    data["canary"]["median_ms_per_round"] = [math.nan] * len(data["canary"]["median_ms_per_round"])
    data["canary"]["drift"] = math.nan
    _refused("latency", BLOCK, data, r"'canary\.(drift|median_ms_per_round\[0\])' is nan")


def test_a_sweep_group_s_loosened_thresholds_are_named() -> None:
    data = _data(SWEEP)
    for group in data["sweep"]["groups"]:
        group["design"]["thresholds"].update(ci_ratio=1e9, round_spread=1e9)
    _refused("sweep", SWEEP, data, r"'sweep\.groups\[0\]\.design\.thresholds\.ci_ratio' is 1000000000\.0")


def test_every_committed_record_states_the_harness_s_rules() -> None:
    from bench.store.sealed import shared_problem

    for path in kinds.json_files_under(RESULTS):
        store = kinds.kind_of(RESULTS, path)
        assert store is not None and shared_problem(_data(path), store.non_finite) is None, path


def test_the_store_s_rules_are_the_meter_s() -> None:
    import inspect

    from bench.latency.meter import measure
    from bench.latency.paired import Thresholds
    from bench.latency.sweep import sweep
    from bench.store.verdicts import CANARY_TOLERANCE, HARNESS

    assert HARNESS.__dict__ == Thresholds().__dict__
    for meter in (measure, sweep):
        assert inspect.signature(meter).parameters["canary_tolerance"].default == CANARY_TOLERANCE


# ---------------------------------------------------------------- P25-P27: escaping and export

def _reseal_copy(path: Path, results: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    data = _data(path)
    edit(data)
    (results / path.relative_to(RESULTS)).write_text(json.dumps(sealed(data)), encoding="utf-8")


def test_hostile_text_in_orderings_latency_and_sweeps_renders_as_text(tmp_path: Path) -> None:
    """One ``bench table`` over a copy of results/ (about 8 s): an ordering's free text, latency and sweep records'
    device and fingerprint strings; no report holds a live tag, a javascript link or a forged list item."""
    from markdown_it import MarkdownIt

    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    hostile = f"a`` ` {PAYLOAD} \\` ``` [l](javascript:alert(1)) |x| \n- forged line"

    def ordering(d: dict[str, Any]) -> None:
        d["metric"] = "bleu4" + PAYLOAD
        for r in d["reference"]["rows"]:
            r["recipe"] += PAYLOAD

    def timing(d: dict[str, Any]) -> None:
        for key in [k for k in d if k.startswith("fingerprint")]:
            d[key] = {k: v + hostile if isinstance(v, str) else v for k, v in d[key].items()}
        if isinstance(d.get("device"), str):
            d["device"] += hostile

    _reseal_copy(ORDERING, results, ordering)
    for path in [*sorted((RESULTS / "latency").glob("*.json")), *sorted((RESULTS / "sweep").glob("*.json"))]:
        _reseal_copy(path, results, timing)
    out = _bench("table", "--results-dir", str(results), "--reports-dir", str(tmp_path / "reports"), tmp_path=tmp_path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    md = MarkdownIt("commonmark", {"html": True})
    pages = sorted((tmp_path / "reports").glob("*"))
    assert any(PAYLOAD.replace("<", "\\<") in p.read_text() for p in pages if p.suffix == ".md")  # it is there
    for page in pages:
        if page.suffix not in (".md", ".html"):
            continue
        html = md.render(page.read_text()) if page.suffix == ".md" else page.read_text()
        assert not re.search(r"<img[^>]*onerror|href=\"javascript:|<li>forged line", html), page.name


def test_export_neutralises_hostile_metric_names_and_environment(tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    shutil.copy(RESULTS / "outputs" / f"{SEALED_RUN.stem}.txt", results / "outputs")
    data = _data(SEALED_RUN)
    scores = data["scores"]["mist-quora"]
    scores["metrics"]['=HYPERLINK("http://x")'] = 12.0
    scores["ci"]['=HYPERLINK("http://x")'] = [11.0, 13.0]
    data["scores"]["@SUM(1)"] = copy.deepcopy(scores)
    data["environment"]["cpu"] = "=cmd|x"
    (results / SEALED_RUN.name).write_text(json.dumps(sealed(data)), encoding="utf-8")
    out = _bench("export", "--format", "csv", "--out", str(tmp_path / "o.csv"), "--results-dir", str(results),
                 tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    import csv

    with open(tmp_path / "o.csv", newline="", encoding="utf-8") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    assert "'=cmd|x" in cells and "'@SUM(1)" in cells and not any(c[:1] and c[:1] in "=@" for c in cells)


# ---------------------------------------------------------------- P28-P34: environment and queue files

@pytest.mark.parametrize("env, said", [
    ("BENCH_RESULTS=/dev/null", "$BENCH_RESULTS /dev/null: is a character device, not a folder"),
    ("BENCH_RESULTS=fifo", "$BENCH_RESULTS {fifo}: is a FIFO (named pipe), not a folder"),
    ("BENCH_DATA=/dev/null", "$BENCH_DATA: /dev/null (is a character device, not a folder)"),
])
def test_an_environment_folder_that_is_a_device_or_a_fifo_is_named_as_such(tmp_path: Path, env: str,
                                                                          said: str) -> None:
    name, value = env.split("=")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    value = str(fifo) if value == "fifo" else value
    args = ("ls", "runs") if name == "BENCH_RESULTS" else ("data", "verify")
    code = 1 if name == "BENCH_DATA" else 2  # `data verify` exits 1 when anything is missing
    assert said.format(fifo=fifo) in _one_line(_bench(*args, tmp_path=tmp_path, env={name: value}), code)


@pytest.mark.parametrize("value", ["", "results", str(RESULTS) + "/"])
def test_bench_results_naming_the_checkout_s_results_lists_each_run_once(tmp_path: Path, value: str) -> None:
    out = _bench("ls", "runs", tmp_path=tmp_path, env={"BENCH_RESULTS": value})
    assert out.returncode == 0, out.stderr[-2000:]
    ids = re.findall(r"\S+--s\d+--[0-9a-f]{8}\b", out.stdout)
    assert ids and len(ids) == len(set(ids)), out.stdout[-2000:]


def test_a_queue_file_that_is_a_fifo_is_named(tmp_path: Path) -> None:
    from bench.api.reading import UnreadableFile
    from bench.launch.queue import read_queue

    os.mkfifo(tmp_path / "q")
    with pytest.raises(UnreadableFile, match="a FIFO"):
        read_queue(tmp_path / "q")


def test_a_long_queue_line_is_quoted_cut(tmp_path: Path) -> None:
    from bench.launch.queue import QueueFileError, read_queue

    (tmp_path / "q").write_text("a" * 300_000 + "\n")
    with pytest.raises(QueueFileError) as err:
        read_queue(tmp_path / "q")
    assert len(str(err.value)) < 600 and "[299,800 more characters]" in str(err.value)


def test_a_queue_line_missing_an_option_prints_nothing_itself(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from bench.launch.queue import QueueFileError, read_queue

    (tmp_path / "q").write_text("--task quora\n")
    with pytest.raises(QueueFileError, match=r"q:1: the following arguments are required: --system"):
        read_queue(tmp_path / "q")
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- P35-P48: a hostile mirror

def _continue_forever(conn: socket.socket, port: int) -> None:
    read_request(conn)
    try:
        for _ in range(100):
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.05)
    except OSError:
        pass
    conn.close()


OK = b"HTTP/1.1 200 OK\r\n"
MIRRORS: dict[str, tuple[Callable[[socket.socket, int], None], str]] = {
    "silent": (answer(b"", hold=3.0), "stalled"),
    "redirect loop": (answer(lambda p: f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{p}/again\r\n"
                                        "Content-Length: 0\r\n\r\n".encode()), "redirect"),
    "100 headers": (answer(OK + b"".join(b"X-%d: y\r\n" % i for i in range(200)) + b"Content-Length: 3\r\n\r\nabc"),
                    "not valid HTTP (HTTPException: got more than 100 headers); nothing was kept"),
    "long header": (answer(OK + b"X: " + b"a" * 200_000 + b"\r\n\r\nabc"), "not valid HTTP (LineTooLong"),
    "banner": (answer(b"SSH-2.0-OpenSSH\r\n\r\n"), "not valid HTTP (BadStatusLine"),
    "bad chunk": (answer(OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"), "IncompleteRead"),
    "huge chunk": (answer(OK + b"Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc"), "IncompleteRead"),
    "negative length": (answer(OK + b"Content-Length: -5\r\n\r\nabcdef"), "OK abcdef"),
    "two lengths": (answer(OK + b"Content-Length: 3\r\nContent-Length: 999999999\r\n\r\nabc"), "OK abc"),
    "status 999": (answer(b"HTTP/1.1 999 Weird\r\nContent-Length: 3\r\n\r\nabc"), "HTTP 999 Weird"),
    "escapes in reason": (answer(b"HTTP/1.1 404 \x1b[31mred\x07\r\nContent-Length: 0\r\n\r\n"),
                          "HTTP 404 \\x1b[31mred\\x07."),
    "resume at 0": (answer(b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 0-5/6\r\nContent-Length: 6\r\n\r\nABCDEF"),
                    "asked to resume at byte 3, the server answered with the bytes of bytes 0-5/6; the partial file "
                    "was removed"),
    "range ignored": (answer(OK + b"Content-Length: 6\r\n\r\nABCDEF"), "OK ABCDEF"),
    "endless 100 continue": (_continue_forever, "deadline"),
}


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_a_hostile_mirror_is_one_bounded_line(tmp_path: Path, name: str) -> None:
    from bench.api.download import Bounds, DownloadError, download

    handler, said = MIRRORS[name]
    port, server = raw_mirror(handler)
    part = tmp_path / "f.part"
    part.write_bytes(b"abc")  # an earlier try's 3 bytes: every request asks to resume
    started = time.monotonic()
    try:
        got = download(f"http://127.0.0.1:{port}/f", part, Bounds(max_bytes=1000, deadline_s=2, stall_s=1, min_rate=1))
        result = f"OK {part.read_bytes().decode()}"
        assert got.size == part.stat().st_size
    except DownloadError as exc:
        result = str(exc)
        assert "\n" not in result and "\x1b" not in result
    finally:
        server.close()
    assert said in result, result
    assert time.monotonic() - started < 4
    if "resume at 0" in name:
        assert not part.exists()
