"""#46 §2 probe: no edited number is shown as a fact.

Copies of committed records, latency records, p-values and a built split cache, each edited the way a
careless user or a hostile contributor would, are given to the ordinary commands (show, table, export,
run's "already complete", compare, score). Each case checks: exit 2, no traceback, the message names the
file and the field, and nothing under results/, reports/, the case's folder or its caches changed.
Unit tests of each check of :mod:`bench.store.integrity` and of the split cache's pin follow.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.store import integrity
from bench.store.integrity import latency_record_problems, record_problems

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
DATA = REPO.parent / "shared" / "data"
RID = "copy_source--quora--test--cpu--s42--af654a53"  # 2,000 Quora outputs, bleu4 27.69, CI [26.52, 28.89]
SIB = "mist_minilm_l6--quora--test--cpu--s42--2acd50eb"  # the same 2,000 examples (compare)
RECIPE = "mist-quora"
LATENCY = sorted((RESULTS / "latency").glob("quora--test--paper--*.json"))[0]  # the oldest: no digest (pinned)
PVALUES = RESULTS / "significance" / "pvalues.json"
ORDERING = RESULTS / "ordering" / "mist-table6--quora--cpu.json"

Edit = Callable[[dict[str, Any]], None]


def _metric(value: float, name: str = "bleu4") -> Edit:
    def edit(rec: dict[str, Any]) -> None:
        rec["scores"][RECIPE]["metrics"][name] = value
    return edit


def _set(path: str, value: Any) -> Edit:
    def edit(rec: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node = rec
        for key in head:
            node = node[key]
        node[last] = value
    return edit


def _both(*edits: Edit) -> Edit:
    def edit(rec: dict[str, Any]) -> None:
        for e in edits:
            e(rec)
    return edit


#: name -> (edit of RID's record, what the message must name)
RECORD_EDITS: dict[str, tuple[Edit, str]] = {
    "bleu4 99.9": (_metric(99.9), "metrics.bleu4"),  # inside [0, 100]: its CI gives it away
    "bleu4 NaN": (_metric(float("nan")), "metrics.bleu4"),
    "bleu4 inf": (_metric(float("inf")), "metrics.bleu4"),
    "bleu4 1e308": (_metric(1e308), "metrics.bleu4"),
    "bleu4 1e9": (_metric(1e9), "metrics.bleu4"),
    "rougeL negative": (_metric(-3.0, "rougeL"), "metrics.rougeL"),
    "n_examples negative": (_set("data.n_examples", -5), "data.n_examples"),
    "n_examples fractional": (_set("data.n_examples", 1999.5), "data.n_examples"),
    "n_examples not the outputs": (_set("data.n_examples", 1500), "data.n_examples"),
    # all three counts edited alike: only the outputs file (read at load) tells
    "outputs.n and n_examples": (_both(_set("data.n_examples", 1999), _set("outputs.n", 1999),
                                       _set("output_stats.n", 1999)), "outputs.n"),
    "n_items above outputs": (_set(f"scores.{RECIPE}.n_items", 5000), "n_items"),
    "CI without its point": (_set(f"scores.{RECIPE}.ci.bleu4", [30.0, 40.0]), "ci.bleu4"),
    "CI lo above hi": (_set(f"scores.{RECIPE}.ci.bleu4", [28.9, 26.5]), "ci.bleu4"),
    "CI above 100": (_set(f"scores.{RECIPE}.ci.bleu1", [50.0, 1e308]), "ci.bleu1"),
    "share above 1": (_set("output_stats.distinct_ratio", 9.68), "output_stats.distinct_ratio"),
    "negative timing": (_set("timings.score_s", -1.0), "timings.score_s"),
}

RUN_ARGS = ("run", "--system", "copy_source", "--task", "quora", "--budget", "cpu", "--limit", "2000")


def _commands(results: str, work: str) -> dict[str, tuple[str, ...]]:
    """The ordinary commands that show a record's numbers, on the case's results folder."""
    return {
        "show": ("show", RID, "--results-dir", results),
        "table": ("table", "--results-dir", results, "--reports-dir", f"{work}/reports"),
        "table --paper": ("table", "--paper", "mist", "--results-dir", results),
        "export": ("export", "--results-dir", results, "--out", f"{work}/out.csv"),
        "run": (*RUN_ARGS, "--results-dir", results),
        "compare": ("compare", RID, SIB, "--results-dir", results),
    }


@dataclass(frozen=True)
class Case:
    id: str
    prepare: Callable[[Path], None]  # makes the case's folder (results copy, edits)
    command: str  # a key of _commands, or "score" / "run smoke"
    names: tuple[str, ...]  # what the message must name


def _copy_records(work: Path) -> Path:
    results = work / "results"
    results.mkdir(parents=True)
    (results / "outputs").mkdir()
    for rid in (RID, SIB):
        shutil.copyfile(RESULTS / f"{rid}.json", results / f"{rid}.json")
        # a record's outputs are read only beside it (<results>/outputs/<run_id>.txt), so the copy carries them
        shutil.copyfile(RESULTS / "outputs" / f"{rid}.txt", results / "outputs" / f"{rid}.txt")
    return results


def _edit_record(edit: Edit) -> Callable[[Path], None]:
    def prepare(work: Path) -> None:
        path = _copy_records(work) / f"{RID}.json"
        rec = json.loads(path.read_text(encoding="utf-8"))
        edit(rec)
        path.write_text(json.dumps(rec, indent=2), encoding="utf-8")
    return prepare


def _sealed_then_edited(work: Path) -> None:
    """A record the harness wrote (so it carries a digest), then 27.69 -> 28.0: plausible, inside its CI."""
    from bench.store.records import RunRecord, read_record

    results = _copy_records(work)
    path = RunRecord.from_json(read_record(results / f"{RID}.json")).write(results)
    rec = json.loads(path.read_text(encoding="utf-8"))
    assert "digest" in rec
    rec["scores"][RECIPE]["metrics"]["bleu4"] = 28.0
    path.write_text(json.dumps(rec, indent=2), encoding="utf-8")


def _edited_latency(work: Path) -> None:
    results = _copy_records(work)
    (results / "latency").mkdir()
    rec = json.loads(LATENCY.read_text(encoding="utf-8"))
    name = next(n for n in rec["systems"] if n != rec["baseline"])
    rec["systems"][name]["speedup"]["mean"] = 123.45
    (results / "latency" / LATENCY.name).write_text(json.dumps(rec, indent=2), encoding="utf-8")


def _edited_pvalues(work: Path) -> None:
    results = _copy_records(work)
    (results / "significance").mkdir()
    values = json.loads(PVALUES.read_text(encoding="utf-8"))
    values[next(iter(values))] = 1.5
    (results / "significance" / "pvalues.json").write_text(json.dumps(values), encoding="utf-8")


def _edited_ordering(work: Path) -> None:
    results = _copy_records(work)
    (results / "ordering").mkdir()
    data = json.loads(ORDERING.read_text(encoding="utf-8"))
    data["pairs"][0]["reproduced_delta"] += 1.5  # a reversed pair made to hold
    (results / "ordering" / ORDERING.name).write_text(json.dumps(data, indent=2), encoding="utf-8")


def _edited_split_cache(work: Path) -> None:
    _copy_records(work)
    _tamper_split(work / "cache" / "splits" / "quora" / "v1")


def _tamper_split(tdir: Path) -> None:
    """quora/test rewritten (one reference changed), its sidecar rewritten, and both hashes in the manifest edited
    to fit: every hash the cache holds agrees, only the pin in code does not."""
    from bench.api.types import Example, encode
    from bench.data.cache import decode, encode_fast

    manifest = json.loads((tdir / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["splits"]["test"]
    examples = decode((tdir / entry["file"]).read_bytes(), tdir / entry["file"])
    first = examples[0]
    examples[0] = Example(first.id, first.source, "a falsified reference", dict(first.fields))
    data, fast = encode(examples), encode_fast(examples)
    for name, body in ((entry["file"], data), (entry["fast"]["file"], fast)):
        (tdir / name).unlink()  # a hard link to the shared build: replace it, never write through it
        (tdir / name).write_bytes(body)
    entry["sha256"] = hashlib.sha256(data).hexdigest()
    entry["fast"]["sha256"] = hashlib.sha256(fast).hexdigest()
    (tdir / "manifest.json").unlink()
    (tdir / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _cases() -> list[Case]:
    cases = []
    record_commands = ("show", "table", "export", "run", "compare")
    for label, (edit, field) in RECORD_EDITS.items():
        commands = record_commands if label in ("bleu4 99.9", "bleu4 NaN", "n_examples negative",
                                                "CI without its point", "outputs.n and n_examples") else ("show",
                                                                                                          "table")
        for command in commands:
            cases.append(Case(f"{label}: {command}", _edit_record(edit), command, (f"{RID}.json", field)))
    for command in ("show", "table", "export", "run", "compare"):
        cases.append(Case(f"digest: {command}", _sealed_then_edited, command, (f"{RID}.json", "'digest'")))
    for command in ("table", "table --paper"):
        cases.append(Case(f"speed-up 123.45: {command}", _edited_latency, command, (LATENCY.name, "speedup.mean")))
    cases.append(Case("p-value 1.5: table", _edited_pvalues, "table", ("pvalues.json", "[0, 1]")))
    cases.append(Case("ordering delta: table", _edited_ordering, "table", (ORDERING.name, "pairs[0].reproduced_delta")))
    for command in ("compare", "score", "run smoke"):
        cases.append(Case(f"split cache: {command}", _edited_split_cache, command, ("manifest.json", "pins")))
    return cases


CASES = _cases()


def _tree(root: Path, sizes_under: Path | None = None) -> dict[str, object]:
    """Every entry under ``root``: a file's sha256 (size and mtime under ``sizes_under``), a link's target."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = "dir"
            elif sizes_under is not None and sizes_under in path.parents:
                st = path.stat()
                out[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _state(work: Path) -> dict[str, object]:
    return {"results/": _tree(RESULTS), "reports/": _tree(REPO / "reports"),
            "the case's folder": _tree(work, sizes_under=work / "cache" / "splits")}


@pytest.fixture(scope="module")
def splits() -> Path:
    """quora's splits, built once in this process's cache (seconds), for the cases to link to."""
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.data import load_split
    from bench.data.cache import cache_root

    load_split("quora", "test")
    return cache_root()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_an_edited_number_is_refused_by_every_command(case: Case, splits: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "cache").mkdir(parents=True)
    shutil.copytree(splits / "quora", work / "cache" / "splits" / "quora", copy_function=os.link)
    (work / "hyp.txt").write_text("a question ?\n" * 30_000, encoding="utf-8")
    shutil.copytree(REPO / "reports", work / "reports")
    case.prepare(work)
    results = str(work / "results")
    args = {**_commands(results, str(work)),
            "score": ("score", "--task", "quora", "--hyp", str(work / "hyp.txt")),
            "run smoke": ("run", "--system", "copy_source", "--task", "quora", "--budget", "smoke", "--limit", "5",
                          "--results-dir", results)}[case.command]
    env = {**os.environ, "BENCH_CACHE": str(work / "cache"), "COLUMNS": "400", "HOME": str(tmp_path / "home")}
    env.pop("BENCH_INCLUDE", None)
    before = _state(work)
    proc = subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    out = proc.stdout + proc.stderr
    flat = " ".join(out.split())
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{out[-3000:]}"
    for name in case.names:
        assert name in flat, f"the message does not name {name!r}:\n{out[-3000:]}"
    assert "[skip]" not in flat and "is complete" not in flat  # `bench run` never calls it done
    after = _state(work)
    changed = {k: sorted(set(before[k].items()) ^ set(after[k].items()))[:5]  # type: ignore[attr-defined]
               for k in before if before[k] != after[k]}
    assert not changed, f"written: {changed}"


# ---------------------------------------------------------------- units: the checks


def _committed() -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in [*RESULTS.glob("*.json"),
                                                                 *(RESULTS / "calibration").glob("*--s*.json")]]


def _record() -> dict[str, Any]:
    return json.loads((RESULTS / f"{RID}.json").read_text(encoding="utf-8"))


def test_every_committed_record_passes_its_checks() -> None:
    records = _committed()
    assert len(records) > 80
    assert {r["run_id"]: record_problems(r) for r in records if record_problems(r)} == {}
    latency = [json.loads(p.read_text(encoding="utf-8")) for p in (RESULTS / "latency").glob("*.json")]
    assert latency and all(latency_record_problems(r) == [] for r in latency)
    from bench.store.pvalues import load_pvalues

    assert load_pvalues(PVALUES)


@pytest.mark.parametrize("label", sorted(set(RECORD_EDITS) - {"outputs.n and n_examples"}))  # see the outputs test
def test_each_edit_is_named_by_its_field(label: str) -> None:
    edit, field = RECORD_EDITS[label]
    rec = _record()
    edit(rec)
    problems = record_problems(rec)
    assert problems and field in str(problems[0]), problems


def test_a_ci_may_touch_its_point_and_a_count_may_be_a_whole_float() -> None:
    rec = _record()
    rec["scores"][RECIPE]["ci"]["bleu4"] = [rec["scores"][RECIPE]["metrics"]["bleu4"]] * 2
    rec["data"]["n_examples"] = rec["outputs"]["n"] = 2000.0
    assert record_problems(rec) == []


def test_wrong_types_are_problems_not_exceptions() -> None:
    rec = _record()
    rec["scores"][RECIPE]["ci"] = {"bleu4": "wide"}
    rec["output_stats"] = {"distinct_ratio": "most"}
    rec["timings"] = {"fit_s": None}
    rec["latency"] = {"stats": {"mean_ms": "slow"}, "speedup_mean": True}
    fields = [p.field for p in record_problems(rec)]
    assert fields == ["scores.mist-quora.ci.bleu4", "output_stats.distinct_ratio", "timings.fit_s",
                      "latency.stats.mean_ms", "latency.speedup_mean"]


def test_a_run_record_latency_block_is_checked() -> None:
    rec = _record()
    rec["latency"] = {"stats": {"n": 24, "mean_ms": 5.0, "min_ms": 4.0, "p50_ms": 6.0, "p90_ms": 5.5, "p99_ms": 7.0},
                      "speedup_mean": 2.0, "speedup_ci95": [2.5, 3.0]}
    assert [p.field for p in record_problems(rec)] == ["latency.stats.p90_ms", "latency.speedup_mean"]


def test_a_latency_speedup_is_the_ratio_of_the_stored_times() -> None:
    rec = json.loads(LATENCY.read_text(encoding="utf-8"))
    name = next(n for n in rec["systems"] if n != rec["baseline"])
    for field, value in (("mean", 123.45), ("median", 1.0001 * rec["systems"][name]["speedup"]["median"])):
        bad = json.loads(json.dumps(rec))
        bad["systems"][name]["speedup"][field] = value
        assert [p.field for p in latency_record_problems(bad)] == [f"systems.{name}.speedup.{field}"]
    bad = json.loads(json.dumps(rec))
    bad["systems"][rec["baseline"]]["stats"]["mean_ms"] *= 2  # the baseline's time edited: every ratio is off
    others = [n for n, s in rec["systems"].items() if s.get("speedup") and n != rec["baseline"]]
    assert [p.field for p in latency_record_problems(bad)] == [f"systems.{n}.speedup.mean" for n in others]
    bad = json.loads(json.dumps(rec))
    bad["systems"][name]["speedup"]["mean_ci95"] = [0.1, 0.2]
    assert [str(p) for p in latency_record_problems(bad)] == [
        f"'systems.{name}.speedup.mean' is {rec['systems'][name]['speedup']['mean']!r}, outside its CI "
        f"'systems.{name}.speedup.mean_ci95' [0.1, 0.2]"]


def test_a_digest_is_of_the_content_without_itself() -> None:
    rec = _record()
    sealed = integrity.sealed(rec)
    assert sealed["digest"].startswith("sha256:") and integrity.digest_problem(sealed) is None
    assert integrity.digest(sealed) == integrity.digest(rec) == integrity.digest(json.loads(json.dumps(sealed)))
    assert integrity.digest_problem(rec) is None  # legacy: no digest
    edited = json.loads(json.dumps(sealed))
    edited["scores"][RECIPE]["metrics"]["bleu4"] = 28.0
    assert integrity.digest_problem(edited) == ("digest", integrity.digest_problem(edited)[1])  # type: ignore[index]
    assert integrity.digest_problem({**rec, "digest": 7}) is not None
    assert integrity.unsealed(sealed) == rec


def test_the_writer_seals_and_the_reader_checks(tmp_path: Path) -> None:
    from bench.store.records import RecordError, RecordIntegrityError, RunRecord, load_records, read_record

    rec = RunRecord.from_json(_record())
    path = rec.write(tmp_path)
    assert json.loads(path.read_text())["digest"] == integrity.digest(rec.to_json())
    assert read_record(path) == rec.to_json() and load_records(tmp_path) == [rec.to_json()]
    text = path.read_text().replace('"bleu4": 27.689364132412987', '"bleu4": 28.0')
    path.write_text(text)
    with pytest.raises(RecordIntegrityError, match=r"'digest' does not match.*git checkout"):
        read_record(path)
    with pytest.raises(RecordIntegrityError, match=r"'digest' does not match.*git checkout"):
        load_records(tmp_path)
    bad = RunRecord.from_json({**_record(), "scores": {}})
    bad = RunRecord(**{**bad.__dict__, "data": {**bad.data, "n_examples": 7}})
    with pytest.raises(RecordError, match=r"not written: 'data.n_examples' is 7"):
        bad.write(tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_the_outputs_file_holds_outputs_n_lines(tmp_path: Path) -> None:
    from bench.store.records import RecordIntegrityError, check_outputs

    (tmp_path / "outputs").mkdir()
    out = tmp_path / "outputs" / "x.txt"  # where the record's run id puts its outputs (bench.store.outputs)
    out.write_text("a\nb\nc\n", encoding="utf-8")
    outputs: dict[str, Any] = {"path": "outputs/x.txt", "sha256": hashlib.sha256(b"a\nb\nc\n").hexdigest(), "n": 3}
    rec = {"run_id": "x", "spec": {"system": "s", "task": "t", "split": "test", "budget": "cpu"}, "outputs": outputs}
    check_outputs(rec, tmp_path / "x.json")
    outputs["n"] = 2
    with pytest.raises(RecordIntegrityError, match=r"'outputs.n' is 2 but its outputs file .* holds 3"):
        check_outputs(rec, tmp_path / "x.json")


def test_an_edited_latency_record_is_refused_at_load(tmp_path: Path) -> None:
    from bench.store.latency import LatencyRecordError, load_latency_records, read_latency_record, write_latency_record

    rec = json.loads(LATENCY.read_text(encoding="utf-8"))
    path = write_latency_record(tmp_path, rec)
    assert read_latency_record(path) == rec and "digest" in json.loads(path.read_text())
    sealed = json.loads(path.read_text())
    sealed["notes"] = ["edited"]
    path.write_text(json.dumps(sealed))
    with pytest.raises(LatencyRecordError, match="'digest' does not match"):
        load_latency_records(tmp_path)
    sealed = {k: v for k, v in sealed.items() if k != "digest"}
    name = next(n for n in rec["systems"] if n != rec["baseline"])
    sealed["systems"][name]["speedup"]["mean"] = 123.45
    path.write_text(json.dumps(sealed))
    with pytest.raises(LatencyRecordError, match=rf"{path.name}: 'systems.{name}.speedup.mean' is 123.45"):
        read_latency_record(path)


def test_an_ordering_s_numbers_are_checked() -> None:
    from bench.store.integrity import ordering_problems

    data = json.loads(ORDERING.read_text(encoding="utf-8"))
    assert ordering_problems(data) == []
    for edit, field in ((lambda d: d["pairs"][1].update(p_bootstrap=1.2), "pairs[1].p_bootstrap"),
                        (lambda d: d["pairs"][0].update(reproduced_delta=9.0), "pairs[0].reproduced_delta"),
                        (lambda d: d["rows"][2].update(reproduced=-4.0), "rows[2].reproduced"),
                        (lambda d: d.update(tau_b=1.5), "tau_b"),
                        (lambda d: d.update(tau_ci95=[0.5, -0.5]), "tau_ci95")):
        bad = json.loads(json.dumps(data))
        edit(bad)
        assert [p.field for p in ordering_problems(bad)][:1] == [field]


@pytest.mark.parametrize("value", [1.5, -0.01, float("nan"), float("inf")])
def test_a_p_value_outside_0_1_is_refused(value: float) -> None:
    from bench.store.pvalues import PValuesError, validate_pvalues

    with pytest.raises(PValuesError, match=r"pvalues\.json: .* must be a p-value in \[0, 1\]"):
        validate_pvalues({"k": 0.5, "key": value}, "results/significance/pvalues.json")


# ---------------------------------------------------------------- units: the split cache and the raw files


@pytest.fixture()
def quora_cache(splits: Path, tmp_path: Path) -> Path:
    """A private copy of the built quora cache (hard links: edits replace files, never write through them)."""
    root = tmp_path / "splits"
    shutil.copytree(splits / "quora", root / "quora", copy_function=os.link)
    return root


def _replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def test_a_split_cache_rewritten_with_its_manifest_is_refused(quora_cache: Path) -> None:
    from bench.api.errors import DataError
    from bench.data import load_split

    _tamper_split(quora_cache / "quora" / "v1")
    with pytest.raises(DataError, match=r"manifest\.json: split 'test' is recorded with sha256 .* pins 0beb2739") as e:
        load_split("quora", "test", cache_dir=quora_cache)
    assert "delete" in str(e.value) and "update the pinned" not in str(e.value)


def test_a_rewritten_sidecar_is_never_read_for_a_pinned_split(quora_cache: Path) -> None:
    from bench.api.types import Example
    from bench.data import load_split
    from bench.data.cache import encode_fast

    good = load_split("quora", "dev", cache_dir=quora_cache)
    tdir = quora_cache / "quora" / "v1"
    manifest = json.loads((tdir / "manifest.json").read_text())
    fake = encode_fast([Example("x", "y", "falsified", {})] * len(good))
    _replace(tdir / "dev.marshal", fake)
    manifest["splits"]["dev"]["fast"]["sha256"] = hashlib.sha256(fake).hexdigest()
    _replace(tdir / "manifest.json", json.dumps(manifest).encode())
    again = load_split("quora", "dev", cache_dir=quora_cache)
    assert again.examples == good.examples and again.sha256 == good.sha256


def test_a_tampered_raw_file_is_refused_without_advice_to_re_pin(tmp_path: Path) -> None:
    """The raw file altered and its SHA256SUMS line edited to fit: the pinned split hash catches it, and no message
    tells the user to re-pin anything to the tampered content."""
    from bench.api.errors import DataError
    from bench.data import load_split
    from bench.data.sources import SUMS_FILE, data_dir, verify_raw

    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    src, dst = data_dir(), tmp_path / "data"
    alter = "quora/duji2019/val.tgt"
    for path in src.rglob("*"):
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.name == SUMS_FILE or path.relative_to(src).as_posix() == alter:
                shutil.copyfile(path, target)
            else:
                target.symlink_to(path)
    lines = (dst / alter).read_text(encoding="utf-8").split("\n")
    lines[0] = "a falsified reference"
    (dst / alter).write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as raw:
        verify_raw(dst, [alter])
    sums = (dst / SUMS_FILE).read_text(encoding="utf-8")
    new = hashlib.sha256((dst / alter).read_bytes()).hexdigest()
    (dst / SUMS_FILE).write_text("\n".join(f"{new}  ./{alter}" if line.endswith(alter) else line
                                           for line in sums.splitlines()) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as built:
        load_split("quora", "dev", data_dir=dst, cache_dir=tmp_path / "cache")
    for msg in (str(raw.value), str(built.value)):
        assert "restore" in msg and "update the pinned" not in msg and ">>" not in msg
    assert "pins" in str(built.value) and SUMS_FILE in str(built.value)
    assert not (tmp_path / "cache" / "quora" / "v1" / "dev.jsonl").exists()
