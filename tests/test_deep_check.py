"""`bench table --check --deep`: each kind of edited number is caught, naming the record, the field and both
values (on tmp copies of small committed records), and the committed results pass it (slow)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.store.integrity import sealed, unsealed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
DATA = Path(os.environ.get("BENCH_DATA", ROOT / ".." / "shared" / "data"))
#: small committed quora records: the first 2,000 test examples, one recipe each
SMALL = ("mist_minilm_l6--quora--test--cpu--s42--f20bb2a6", "mist_minilm_l6--quora--test--cpu--s42--a5656ea2",
         "mist_minilm_l6--quora--test--cpu--s42--2b4490b4")
LATENCY = "quora--test--paper--random--forced--20261126T023433--d03241f6"

needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"data dir {DATA} not found")


def _copy(results: Path, run_ids: tuple[str, ...]) -> list[Path]:
    """Copies of committed records (and their outputs, where a record's folder is where they are looked for)."""
    (results / "outputs").mkdir(parents=True, exist_ok=True)
    out = []
    for rid in run_ids:
        shutil.copy(RESULTS / f"{rid}.json", results / f"{rid}.json")
        shutil.copy(RESULTS / "outputs" / f"{rid}.txt", results / "outputs" / f"{rid}.txt")
        out.append(results / f"{rid}.json")
    return out


@needs_data
def test_an_edited_score_fails_naming_record_metric_and_both_values(tmp_path: Path) -> None:
    from bench.report.deep import deep_check

    (path,) = _copy(tmp_path, SMALL[:1])
    rec = json.loads(path.read_text())
    scores = rec["scores"]["mist-quora"]
    true = scores["metrics"]["bleu4"]
    edited = round(true + 0.5, 2)  # inside its CI: an edit no range or CI check at load time sees
    assert scores["ci"]["bleu4"][0] < edited < scores["ci"]["bleu4"][1]
    scores["metrics"]["bleu4"] = edited
    path.write_text(json.dumps(sealed(rec)))  # a forger's fresh digest: only the deep check can tell
    found = deep_check(tmp_path, jobs=1)
    # only the edited number differs: every other score, CI and statistic of the record was derived again equal;
    # the difference names the file read, not a path rebuilt from the run id
    assert [(d.where, d.field) for d in found.differences] == [(str(path), "mist-quora bleu4")]
    line = str(found.differences[0])
    assert str(path) in line and f"stored {edited!r}" in line and f"recomputed {true!r}" in line
    assert found.counts["run records"] == 1 and found.counts["calibration summaries"] == 0


@needs_data
def test_an_edited_p_value_and_the_cluster_it_forms_fail(tmp_path: Path) -> None:
    from bench.report.board import build_board
    from bench.report.deep import rederive_pvalues
    from bench.store.pvalues import PValues, pvalues_file
    from bench.store.records import load_records

    _copy(tmp_path, SMALL)
    records = load_records(tmp_path)
    store = PValues(pvalues_file(tmp_path))
    board = build_board("quora", records, pvalues=store)  # what `bench table` stores
    store.save()
    assert rederive_pvalues(tmp_path, records, []) == []
    stored = unsealed(json.loads(pvalues_file(tmp_path).read_text()))
    key, true = min(stored.items(), key=lambda kv: kv[1])  # a separating pair: p < 0.05
    assert true < 0.05, board
    stored[key] = 0.9  # the pair "not significant": its two runs would share a cluster
    pvalues_file(tmp_path).write_text(json.dumps(sealed(stored)))  # with a fresh digest: only --deep can tell
    found = rederive_pvalues(tmp_path, records, [])
    fields = [d.field for d in found]
    assert "p (paired bootstrap)" in fields and "rank cluster" in fields
    p_line = str(next(d for d in found if d.field == "p (paired bootstrap)"))
    assert str(pvalues_file(tmp_path)) in p_line and "0.9" in p_line and repr(true) in p_line


def test_an_edited_speed_up_fails_without_timings_by_its_ratio() -> None:
    from bench.latency.rederive import rederive_latency

    rec = json.loads((RESULTS / "latency" / f"{LATENCY}.json").read_text())
    clean = rederive_latency(rec)
    assert clean.differences == [] and clean.notes  # committed before per-item timings were kept: says so
    rec["systems"]["encoder_bert"]["speedup"]["mean"] = 123.45
    (diff,) = rederive_latency(rec).differences
    assert "systems.encoder_bert" in diff.where and diff.field.startswith("speedup.mean") and diff.stored == 123.45


def _with_timings(rec: dict) -> dict:
    """A latency record whose systems carry per-item timings, and stats and speed-ups computed from them."""
    import numpy as np

    from bench.latency.stats import paired_bootstrap_speedup, summarize

    rng = np.random.default_rng(7)
    base = [int(x) for x in rng.integers(50_000_000, 90_000_000, 40)]
    for i, (name, entry) in enumerate(sorted(rec["systems"].items())):
        ns = base if name == rec["baseline"] else [int(x / (2 + i)) for x in base]
        items = {"latencies_ns": ns, "item_indices": list(range(40)), "tokens": [8] * 40, "iterations": [1.0]}
        entry["timings"] = items
        entry["stats"] = summarize(ns, items["tokens"], items["iterations"]).to_json()
        sp = paired_bootstrap_speedup(base, ns, 200, rec["settings"]["seed"])
        entry["speedup"] = {"mean": sp.mean, "median": sp.median, "mean_ci95": list(sp.mean_ci95),
                            "median_ci95": list(sp.median_ci95), "n_resamples": 200}
    return rec


def test_latency_aggregates_and_speed_ups_are_derived_from_the_stored_items() -> None:
    from bench.latency.rederive import rederive_latency

    rec = _with_timings(json.loads((RESULTS / "latency" / f"{LATENCY}.json").read_text()))
    clean = rederive_latency(rec)
    assert clean.differences == [] and clean.notes == []
    edited = json.loads(json.dumps(rec))
    edited["systems"]["encoder_bert"]["speedup"]["mean"] *= 1.01
    edited["systems"]["encoder_bert"]["stats"]["p90_ms"] += 1
    assert {d.field for d in rederive_latency(edited).differences} == {"speedup.mean", "stats.p90_ms"}
    slower = json.loads(json.dumps(rec))
    slower["systems"]["encoder_bert"]["timings"]["latencies_ns"][0] *= 3  # the evidence itself, edited
    fields = {d.field for d in rederive_latency(slower).differences}
    assert {"stats.mean_ms", "speedup.mean"} <= fields


@needs_data
def test_an_edited_split_cache_with_its_manifest_made_to_agree_fails(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.api.errors import DataError
    from bench.api.types import Example, encode
    from bench.data import TASKS, load_split
    from bench.data.cache import FAST_VERSION, cache_root, encode_fast, task_cache_dir
    from bench.report.deep import deep_check
    from bench.runs.rederive import verified_split

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # a split cache of its own, built here
    task = TASKS.get("quora")
    pinned = task.split("test").sha256
    assert verified_split("quora", "test").sha256 == pinned
    tdir = task_cache_dir(cache_root(), "quora", task.version)
    examples = list(load_split("quora", "test").examples)
    true_first = examples[0]
    examples[0] = Example(true_first.id, true_first.source, "a falsified reference", dict(true_first.fields))

    def falsify(split_hash: str | None) -> None:
        """The cached JSONL and sidecar rewritten, the manifest made to agree (its split hash too, if given)."""
        manifest = json.loads((tdir / "manifest.json").read_text())
        entry = manifest["splits"]["test"]
        (tdir / entry["file"]).write_bytes(encode(examples))
        fast = encode_fast(examples)
        (tdir / entry["fast"]["file"]).write_bytes(fast)
        entry["fast"] = {"file": entry["fast"]["file"], "version": FAST_VERSION,
                         "sha256": hashlib.sha256(fast).hexdigest()}
        if split_hash is not None:
            entry["sha256"] = split_hash
        (tdir / "manifest.json").write_text(json.dumps(manifest))

    falsify(None)  # the split hash kept: a pinned split is read from its JSONL, checked, and rebuilt
    healed = verified_split("quora", "test")
    assert healed.sha256 == pinned and healed.examples[0] == true_first
    falsify(hashlib.sha256(encode(examples)).hexdigest())  # the manifest's split hash made to agree too: refused
    with pytest.raises(DataError) as err:
        verified_split("quora", "test")
    message = str(err.value)
    assert "\n" not in message and "'test'" in message
    assert str(tdir) in message and pinned in message and "delete" in message
    assert "pin" not in message.split("Fix:", 1)[1]  # never tells the user to re-pin to the edit
    results = tmp_path / "results"
    _copy(results, SMALL[:1])
    (diff,) = deep_check(results, jobs=1).differences  # and the deep check stops there, naming the split
    assert diff.where == "quora/test" and str(tdir) in str(diff)


def test_deep_needs_check() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", "table", "--deep"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "--deep needs --check" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@needs_data
@pytest.mark.skipif(os.environ.get("BENCH_DEEP_CHECK_STEP") == "1",
                    reason="CI runs `make check-deep` as a step of its own (.ci/run); not twice")
def test_the_committed_results_pass_the_deep_check() -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", "table", "--check", "--deep"], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every number re-derived" in proc.stdout


def test_compare_tree_names_each_differing_leaf() -> None:
    from bench.store.differences import compare_tree

    stored = {"tau_b": 0.6, "pairs": [{"p": 0.001, "row": "a"}], "created": "x"}
    fresh = {"tau_b": 0.6 + 1e-13, "pairs": [{"p": 0.2, "row": "a"}], "created": "y"}
    (diff,) = compare_tree("ordering", stored, fresh, skip=frozenset({"created"}))
    assert (diff.field, diff.stored, diff.recomputed) == ("pairs[0].p", 0.001, 0.2)
    assert compare_tree("o", {"n": 1}, {"n": 1, "m": 2})[0].field == "m"  # a number the record lacks


def test_a_measured_latency_record_and_a_run_s_own_latency_derive_again_from_their_items() -> None:
    """The meter's real output (tests/test_latency_table.py's deterministic systems): nothing differs, and an
    edited speed-up in either form is caught."""
    from test_latency_table import EXAMPLES, Sleepy, _record

    from bench.latency import measure
    from bench.latency.rederive import rederive_latency, rederive_run_latency

    rec = _record()
    assert all("timings" in e for e in rec["systems"].values())
    found = rederive_latency(rec)
    assert found.differences == [] and found.notes == []
    rec["systems"]["fairseq_nat"]["speedup"]["mean"] += 0.5
    assert [d.field for d in rederive_latency(rec).differences] == ["speedup.mean"]

    rep = measure({"base": Sleepy(20000), "fast": Sleepy(2000)}, EXAMPLES, baseline="base", n=6, rounds=2,
                  warmup_items=1, warmup_s=0.0, min_items=1, min_duration_s=0.0, length_forced=True,
                  progress=False, bootstrap_resamples=200)
    run = {"run_id": "fast--squad_qg--test--cpu--s42--00000000", "latency": rep.record("fast")}
    assert rederive_run_latency(run).differences == []
    run["latency"]["speedup_mean"] *= 2
    assert [d.field for d in rederive_run_latency(run).differences] == ["speedup_mean"]


#: a small committed calibration sweep whose two points keep their outputs (500 Quora dev examples each)
SWEEP = "encoder_minilm_l6--quora--cpu"


def _calibration(results: Path) -> Path:
    """A copy of :data:`SWEEP`'s summary, its points' records and their outputs; returns the summary's copy."""
    src, dst = RESULTS / "calibration", results / "calibration"
    (dst / "outputs").mkdir(parents=True)
    summary = json.loads((src / f"{SWEEP}.json").read_text())
    for point in summary["points"]:
        shutil.copy(src / f"{point['run_id']}.json", dst)
        shutil.copy(src / "outputs" / f"{point['run_id']}.txt", dst / "outputs")
    shutil.copy(src / f"{SWEEP}.json", dst)
    return dst / f"{SWEEP}.json"


def test_a_calibration_summary_is_derived_again_from_its_points_records(tmp_path: Path) -> None:
    from bench.report.deep import rederive_calibration
    from bench.store.calibration import CalibrationSummaryError, load_points, load_summaries

    path = _calibration(tmp_path)
    assert rederive_calibration(load_summaries(tmp_path), load_points(tmp_path)) == []
    original = path.read_text()
    summary = unsealed(json.loads(original))
    summary["points"][1]["score"] += 0.25  # still below the pick: since #57's third pass the load refuses it
    path.write_text(json.dumps(sealed(summary)))  # a forger's fresh digest
    with pytest.raises(CalibrationSummaryError, match="scored"):
        load_summaries(tmp_path)
    summary = unsealed(json.loads(original))
    summary["points"][0]["fit_s"] = 1.0  # a field no check at load can derive: --deep does
    path.write_text(json.dumps(sealed(summary)))
    found = rederive_calibration(load_summaries(tmp_path), load_points(tmp_path))
    rid0, rid1 = (p["run_id"] for p in summary["points"])
    assert [(d.where, d.field) for d in found] == [(f"{path} points[0] ({rid0})", "fit_s")]
    (tmp_path / "calibration" / f"{rid1}.json").unlink()  # a point without its record stands on nothing
    found = rederive_calibration(load_summaries(tmp_path), load_points(tmp_path))
    assert any(d.field == "points[1]" and "no such run record" in str(d) for d in found)


@pytest.mark.slow
@needs_data
def test_deep_scores_calibration_points_and_counts_each_kind(tmp_path: Path) -> None:
    from bench.report.deep import deep_check

    path = _calibration(tmp_path)
    point = tmp_path / "calibration" / f"{json.loads(path.read_text())['points'][0]['run_id']}.json"
    rec = json.loads(point.read_text())
    rec["output_stats"]["distinct_ratio"] = round(rec["output_stats"]["distinct_ratio"] - 0.01, 3)
    point.write_text(json.dumps(sealed(rec)))  # an edited statistic, freshly sealed
    found = deep_check(tmp_path, jobs=1)
    assert found.counts["run records"] == 0 and found.counts["calibration point records"] == 2
    assert found.counts["calibration summaries"] == 1
    # the record's statistic recomputed from its outputs, and the summary's copy of it, both named by file
    assert sorted((d.where, d.field) for d in found.differences) == sorted([
        (str(point), "output_stats.distinct_ratio"),
        (f"{path} points[0] ({rec['run_id']})", "distinct_ratio")])
