"""#57 probe: every kind of record is read through one sealed path, and that path holds for each kind.

The structure first: every JSON under results/ is kept by a registered kind and read by its reader; the legacy
list (bench/store/legacy.json) pins exactly the committed records without a digest; no module of the store
reads a record another way. Then one class-level probe per kind of record (run, submission, calibration
summary, calibration point, latency, sweep, ordering, significance), on a real record of that kind:

- its digest deleted: refused, unless its content is pinned as legacy (deleting a digest never makes legacy);
- each number field edited (the file as it was, and a forger's fresh digest over out-of-range values): refused;
- each name field pointed at ``..`` (with a fresh digest): refused, naming the field.

Last, the issue's probes as commands, with victim and sentinel files outside the tree (``tmp_path``): a
calibration summary's ``system``, a legacy run record's ``spec.task`` and a calibration point's ``run_id``
that climb out, and an edited sealed record (run, sweep) with its digest deleted.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.api.errors import UserError
from bench.store import kinds
from bench.store.files import StoreError
from bench.store.integrity import DIGEST_FIELD, digest, digest_problem, sealed, unsealed
from bench.store.legacy import pinned
from bench.store.sealed import SealedStore, name_values

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
SWEEP = next((REPO / "tests" / "fixtures" / "sweep").glob("*.json"))
SEALED_RUN = "fairseq_transformer--quora--test--cpu--s42--b0395e29"  # written by the harness after digests
LEGACY_RUN = "copy_source--quora--test--cpu--s42--af654a53"  # committed before digests: pinned
SENTINEL = "SENTINEL-57-never-read-out"


# ---------------------------------------------------------------- the structure


def test_every_json_under_results_is_read_by_a_registered_kind() -> None:
    seen: dict[str, int] = {}
    for path in kinds.json_files_under(RESULTS):
        store = kinds.kind_of(RESULTS, path)
        assert store is not None, f"{path}: no kind keeps it"
        assert kinds.KINDS[store.kind] is store
        rec = store.read(path)
        assert rec.source == path and DIGEST_FIELD not in rec
        seen[store.kind] = seen.get(store.kind, 0) + 1
    # every kind results/ holds today (sweeps are not committed yet: their fixture is read below)
    assert set(seen) >= {"run", "submission", "calibration", "calibration point", "latency", "ordering",
                         "significance"}, seen
    assert kinds.kind_of(SWEEP.parent.parent, SWEEP) is kinds.KINDS["sweep"]  # tests/fixtures/sweep/: that layout
    assert kinds.read(SWEEP.parent.parent, SWEEP)["sweep_id"]


def test_every_registered_kind_checks_names_and_seals() -> None:
    assert set(kinds.KINDS) == {"run", "submission", "calibration", "calibration point", "latency", "sweep",
                                "ordering", "significance"}
    for name, store in kinds.KINDS.items():
        assert isinstance(store, SealedStore) and store.kind == name
        assert store.names or name == "significance", f"{name}: no name fields declared"


def test_the_legacy_list_pins_exactly_the_committed_records_without_a_digest() -> None:
    unsealed_now = {}
    for path in kinds.json_files_under(RESULTS):
        data = json.loads(path.read_text(encoding="utf-8"))
        if DIGEST_FIELD not in data:
            unsealed_now[path.relative_to(REPO).as_posix()] = digest(data)
    stale = sorted(set(pinned().items()) - set(unsealed_now.items()))
    assert not stale, (f"{len(stale)} pinned record(s) no longer in results/ as pinned (re-written sealed, or "
                       f"deleted): remove their entries from bench/store/legacy.json: {stale[:3]}")
    unpinned = sorted(set(unsealed_now) - set(pinned()))
    assert not unpinned, f"records without a digest that are not pinned (never add to the list; seal them): {unpinned}"
    assert len(pinned()) < 117  # the list only shrinks (117 when it was made; 22 re-sealed since, see the docs)


def test_no_module_of_the_store_reads_a_record_another_way() -> None:
    """Only the sealed path reads a results JSON (files.read_json, called by SealedStore.raw); targets.py peeks
    at a file's kind to recognise a results folder, and legacy.py reads its own manifest, nothing else."""
    allowed = {"files.py", "sealed.py", "targets.py", "legacy.py"}
    offenders = []
    for path in sorted((REPO / "bench" / "store").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name not in allowed and re.search(r"\bread_json\(|json\.loads?\(|open\(", text):
            offenders.append(path.name)
    assert offenders == []


def test_a_json_no_kind_keeps_is_named_by_table_check(tmp_path: Path) -> None:
    from bench.report import render_all

    results = tmp_path / "results"
    (results / "stray").mkdir(parents=True)
    (results / "stray" / "x.json").write_text("{}")
    (results / "significance").mkdir()
    (results / "significance" / "other.json").write_text("{}")
    assert kinds.unkept(results) == [results / "significance" / "other.json", results / "stray" / "x.json"]
    with pytest.raises(kinds.UnkeptFileError, match=r"x\.json: no kind of record is kept here"):
        kinds.read(results, results / "stray" / "x.json")
    problems = render_all(results, tmp_path / "reports", check=True)
    assert any("stray/x.json: no kind of record is kept here" in p for p in problems)


def test_a_record_linked_from_outside_its_folder_is_refused(tmp_path: Path) -> None:
    from bench.store.records import RecordError, load_records

    results = tmp_path / "results"
    results.mkdir()
    outside = tmp_path / "outside.json"
    shutil.copyfile(RESULTS / f"{LEGACY_RUN}.json", outside)
    (results / f"{LEGACY_RUN}.json").symlink_to(outside)
    with pytest.raises(RecordError, match="is a link out of its folder"):
        load_records(results)


# ---------------------------------------------------------------- one real record of each kind


@dataclass(frozen=True)
class Sample:
    kind: str
    path: Path  # a real record of the kind (committed, or the sweep fixture)
    #: out-of-range edits a forger would reseal: (dotted path, value, the field the refusal names)
    forged: tuple[tuple[str, Any, str], ...]


def _first(pattern: str, where: Path = RESULTS, kind: str | None = None) -> Path:
    for path in sorted(where.glob(pattern)):
        data = json.loads(path.read_text(encoding="utf-8"))
        if kind is None or data.get("kind") == kind:
            return path
    raise AssertionError(f"no {pattern} ({kind})")


SAMPLES = [
    Sample("run", RESULTS / f"{SEALED_RUN}.json", (
        ("scores.mist-quora.metrics.bleu4", 135.0, "metrics.bleu4"),
        ("scores.mist-quora.metrics.bleu4", -50.0, "metrics.bleu4"),
        ("data.n_examples", 1e308, "data.n_examples"),
        ("timings.fit_s", -1.0, "timings.fit_s"))),
    Sample("run", RESULTS / f"{LEGACY_RUN}.json", (("scores.mist-quora.metrics.bleu4", 135.0, "metrics.bleu4"),)),
    Sample("submission", _first("*--external--*.json"), (("output_stats.distinct_ratio", 2.0, "distinct_ratio"),)),
    Sample("calibration", _first("calibration/*.json", kind="calibration"), (
        ("points[0].score", 135.0, "points[0].score"),
        ("points[0].score", -50.0, "points[0].score"),
        ("points[0].score", 1e308, "points[0].score"),
        ("points[0].lr", -1.0, "points[0].lr"),
        ("points[0].updates", 0, "points[0].updates"),
        ("points[0].distinct_ratio", 1.5, "points[0].distinct_ratio"),
        ("points[0].fit_s", -3.0, "points[0].fit_s"),
        ("dev_examples", 0, "dev_examples"),
        ("pick.score", 99.0, "pick"))),
    Sample("calibration point", _first("calibration/*--dev--*.json"),
           (("output_stats.most_frequent_share", 7.0, "most_frequent_share"),)),
    Sample("latency", _first("latency/quora--test--paper--*.json"),
           (("systems.fairseq_nat.speedup.mean", 123.45, "speedup.mean"),)),
    Sample("sweep", SWEEP, (("sweep.cells[0].sentences_per_s", 1e300, "sentences_per_s"),)),
    Sample("ordering", _first("ordering/*.json"), (("pairs[0].p_bootstrap", 1.5, "p_bootstrap"),
                                                   ("tau_b", 3.0, "tau_b"))),
    Sample("significance", RESULTS / "significance" / "pvalues.json", (("@first", 1.5, "[0, 1]"),)),
]
IDS = [f"{s.kind}:{s.path.stem[:40]}" for s in SAMPLES]


def _load(sample: Sample) -> dict[str, Any]:
    return json.loads(sample.path.read_text(encoding="utf-8"))


def _store(sample: Sample) -> SealedStore:
    return kinds.KINDS[sample.kind]


def _refused(sample: Sample, data: Any, names: str = "") -> str:
    """The store refuses ``data`` as ``sample``'s file: a StoreError naming the file (and ``names``), never
    another exception; returns the message."""
    with pytest.raises(UserError) as err:
        _store(sample).accept(data, sample.path)
    assert isinstance(err.value, StoreError), repr(err.value)
    msg = " ".join(str(err.value).split())
    assert str(sample.path) in msg and names in msg, msg
    return msg


def _leaves(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, value) of every number in a JSON value."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*at, i))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield at, node


def _put(data: Any, at: tuple[Any, ...], value: Any) -> None:
    node = data
    for key in at[:-1]:
        node = node[key]
    node[at[-1]] = value


def _dotted(data: dict[str, Any], path: str) -> tuple[Any, ...]:
    """``a.b[0].c`` as a key path (``@first``: the first key that is not the digest)."""
    if path == "@first":
        return (next(k for k in data if k != DIGEST_FIELD),)
    out: list[Any] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[]+)((?:\[\d+\])*)", part)
        assert m, part
        out.append(m.group(1))
        out += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return tuple(out)


def _spread(items: list[Any], most: int = 80) -> list[Any]:
    """At most ``most`` of ``items``, spread evenly (a latency record holds thousands of timings)."""
    if len(items) <= most:
        return items
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_the_record_as_committed_is_read(sample: Sample) -> None:
    rec = _store(sample).read(sample.path)
    assert DIGEST_FIELD not in rec and rec.source == sample.path


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_deleting_the_digest_does_not_make_a_record_legacy(sample: Sample) -> None:
    data = _load(sample)
    if DIGEST_FIELD in data:  # a sealed record: without its digest it is pinned nowhere
        _refused(sample, unsealed(data), "'digest' is missing")
    else:  # a pinned legacy record, given a plausible edit its checks let through: sealed, then unsealed
        assert digest_problem(data) is None
        for at, value in _leaves(data):
            forged = copy.deepcopy(data)
            _put(forged, at, value + 1 if isinstance(value, int) else value * 1.001)
            try:
                _store(sample).accept(sealed(forged), sample.path)
            except StoreError:
                continue  # an edit its own checks see: not the case here
            _refused(sample, forged, "'digest' is missing")
            break
        else:
            raise AssertionError("no plausible edit found")


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_each_number_edited_is_refused(sample: Sample) -> None:
    data = _load(sample)
    leaves = _spread(list(_leaves(data)))
    assert leaves
    text = json.dumps(data)
    for at, value in leaves:
        edited = json.loads(text)
        _put(edited, at, value + 1 if isinstance(value, int) else value * 1.01 + 0.5)
        _refused(sample, edited)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_a_number_out_of_range_is_refused_even_with_a_fresh_digest(sample: Sample) -> None:
    for path, value, names in sample.forged:
        forged = unsealed(_load(sample))
        _put(forged, _dotted(forged, path), value)
        _refused(sample, sealed(forged), names)


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
def test_wrong_json_types_are_one_line_never_a_traceback(sample: Sample) -> None:
    """Every field (a spread of them) given each wrong JSON type, with a fresh digest: read, or refused with a
    StoreError; nothing else escapes the reader (the CLI turns a StoreError into one line, exit 2)."""
    data = unsealed(_load(sample))
    text = json.dumps(data)
    paths = _spread([at for at, _ in _leaves(data)], 16) + [(k,) for k in data]
    for at in paths:
        for wrong in ("x", None, [], {}, True, 1e308):
            forged = json.loads(text)
            _put(forged, at, wrong)
            try:
                _store(sample).accept(sealed(forged), sample.path)
            except StoreError:
                pass


def _name_paths(data: dict[str, Any], spec: str) -> list[tuple[tuple[Any, ...], bool]]:
    """Key paths of the values (or keys: True) ``spec`` names in ``data``, the first of each list or object."""
    parts = spec.split(".")
    at: tuple[Any, ...] = ()
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part.endswith("{}"):
            obj = node.get(part[:-2]) if isinstance(node, dict) else None
            if not isinstance(obj, dict) or not obj:
                return []
            key = next(iter(obj))
            if last:
                return [((*at, part[:-2], key), True)]
            at, node = (*at, part[:-2], key), obj[key]
        elif part.endswith("[]"):
            items = node.get(part[:-2]) if isinstance(node, dict) else None
            if not isinstance(items, list) or not items:
                return []
            at, node = (*at, part[:-2], 0), items[0]
        else:
            if not isinstance(node, dict) or node.get(part) is None:
                return []
            at, node = (*at, part), node[part]
    return [(at, False)]


@pytest.mark.parametrize("sample", SAMPLES, ids=IDS)
@pytest.mark.parametrize("hostile", ["..", "../../x", "a/b", ".hidden", "", "x\x00y"])
def test_each_name_field_pointed_at_dot_dot_is_refused(sample: Sample, hostile: str) -> None:
    data = unsealed(_load(sample))
    store = _store(sample)
    checked = 0
    for spec in store.names:
        for at, is_key in _name_paths(data, spec):
            forged = copy.deepcopy(data)
            if is_key:
                parent = forged
                for key in at[:-1]:
                    parent = parent[key]
                parent[hostile] = parent.pop(at[-1])
            else:
                _put(forged, at, hostile)
            _refused(sample, sealed(forged))  # refused by the validator (an empty name), or by the name rule
            if hostile and not is_key:
                shown = next(f for f, v in name_values(forged, (spec,)) if v == hostile)
                msg = _refused(sample, sealed(forged))
                assert f"'{shown}'" in msg or shown in msg, msg
            checked += 1
    assert checked or store.kind == "significance"


# ---------------------------------------------------------------- the probes, as commands


@dataclass
class Work:
    """``work/results`` (records), ``work/reports``, ``work/cache``; victims beside them, outside the trees."""

    tmp: Path
    work: Path
    results: Path
    reports: Path

    def bench(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "BENCH_CACHE": str(self.work / "cache"), "COLUMNS": "400",
               "HOME": str(self.tmp / "home")}
        env.pop("BENCH_INCLUDE", None)
        return subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=600)

    def table(self) -> subprocess.CompletedProcess[str]:
        return self.bench("table", "--results-dir", str(self.results), "--reports-dir", str(self.reports))


def _tree(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture()
def work(tmp_path: Path) -> Work:
    w = tmp_path / "a" / "b" / "work"  # deep enough that every climb below lands inside tmp_path
    results, reports = w / "results", w / "reports"
    (results / "outputs").mkdir(parents=True)
    for rid in (LEGACY_RUN,):
        shutil.copyfile(RESULTS / f"{rid}.json", results / f"{rid}.json")
        shutil.copyfile(RESULTS / "outputs" / f"{rid}.txt", results / "outputs" / f"{rid}.txt")
    (w / "cache").mkdir()
    return Work(tmp_path, w, results, reports)


def _check(w: Work, proc: subprocess.CompletedProcess[str], names: str, before: dict[str, object]) -> None:
    out = proc.stdout + proc.stderr
    flat = " ".join(out.split())
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{out[-3000:]}"
    assert names in flat, f"the message does not name {names!r}:\n{out[-3000:]}"
    assert SENTINEL not in out, "a file outside the results folder was read out"
    after = {"tmp": _tree(w.tmp), "results/": _tree(RESULTS), "reports/": _tree(REPO / "reports")}
    changed = {k: sorted(set(before[k].items()) ^ set(after[k].items()))[:5]  # type: ignore[attr-defined]
               for k in before if before[k] != after[k]}
    assert not changed, f"written: {changed}"


def _state(w: Work) -> dict[str, object]:
    return {"tmp": _tree(w.tmp), "results/": _tree(RESULTS), "reports/": _tree(REPO / "reports")}


def _summary(**changes: Any) -> dict[str, Any]:
    data = unsealed(json.loads(_first("calibration/*.json", kind="calibration").read_text(encoding="utf-8")))
    data.update(changes)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("seal", [sealed, lambda d: d], ids=["fresh digest", "no digest"])
def test_a_summary_s_system_never_makes_table_overwrite_a_file(work: Work, seal: Callable) -> None:
    """system="../../../R/copy_source": the plot's file name would climb out of --reports-dir onto a record."""
    victims = [work.work / "R" / f"copy_source--{s['task']}--{s['budget']}.{ext}"
               for s in (_summary(),) for ext in ("json", "png")]
    for v in victims:
        v.parent.mkdir(parents=True, exist_ok=True)
        v.write_text(f'{{"note": "{SENTINEL}"}}\n', encoding="utf-8")
    (work.results / "calibration").mkdir()
    hostile = _summary(system="../../../R/copy_source")
    (work.results / "calibration" / "x--quora--cpu.json").write_text(json.dumps(seal(hostile)), encoding="utf-8")
    before = _state(work)
    _check(work, work.table(), "'system'", before)
    assert all(SENTINEL in v.read_text() for v in victims)


@pytest.mark.slow
@pytest.mark.parametrize("seal", [sealed, lambda d: d], ids=["fresh digest", "no digest"])
def test_a_run_record_s_task_never_makes_table_write_outside_reports(work: Work, seal: Callable) -> None:
    """A legacy record's spec.task "../../../X": a leaderboard or plot named after it would land outside."""
    path = work.results / f"{LEGACY_RUN}.json"
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["spec"]["task"] = "../../../X"
    path.write_text(json.dumps(seal(rec)), encoding="utf-8")
    before = _state(work)
    _check(work, work.table(), "'spec.task'", before)
    assert not [p for p in work.tmp.rglob("X*") if p.is_file()]


@pytest.mark.slow
def test_a_calibration_point_s_run_id_is_never_read_outside_its_folder(work: Work) -> None:
    outside = work.work / "elsewhere" / "outside.json"  # where calibration/../../elsewhere/outside.json points
    outside.parent.mkdir(parents=True)
    outside.write_text(json.dumps({"training_curve": {"dev_loss": [[1, SENTINEL]]}, "note": SENTINEL}))
    summary = _summary()
    summary["points"][0]["run_id"] = "../../elsewhere/outside"
    if summary["pick"] and summary["pick"]["run_id"] == _summary()["points"][0]["run_id"]:
        summary["pick"]["run_id"] = "../../elsewhere/outside"
    (work.results / "calibration").mkdir()
    (work.results / "calibration" / "s--quora--cpu.json").write_text(json.dumps(sealed(summary)))
    before = _state(work)
    _check(work, work.table(), "'points[0].run_id'", before)


def test_a_point_s_record_is_found_only_by_an_identifier_inside_the_folder(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """In process: the hostile run id is refused before any path is built, so no file outside is opened."""
    from bench.api import reading
    from bench.store.calibration import CalibrationSummaryError, load_summaries

    opened: list[str] = []
    real = reading.read_json
    monkeypatch.setattr(reading, "read_json", lambda p, *a, **k: (opened.append(str(p)), real(p, *a, **k))[1])
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "outside.json").write_text("{}")
    summary = _summary()
    summary["points"][0]["run_id"] = "../../elsewhere/outside"
    root = tmp_path / "results" / "calibration"
    root.mkdir(parents=True)
    (root / "s--quora--cpu.json").write_text(json.dumps(sealed(summary)))
    with pytest.raises(CalibrationSummaryError, match=r"'points\[0\]\.run_id' is '\.\./\.\./elsewhere/outside', "
                                                      "not an identifier"):
        load_summaries(tmp_path / "results")
    assert opened == [str(root / "s--quora--cpu.json")]


@pytest.mark.slow
@pytest.mark.parametrize("score", [135.0, -50.0, 1e308])
def test_a_calibration_score_out_of_range_is_never_plotted(work: Work, score: float) -> None:
    """A summary's point scored 135, -50 or 1e308 (freshly sealed): `bench table` refuses it, naming the field."""
    summary = _summary()
    summary["points"][0]["score"] = score
    (work.results / "calibration").mkdir()
    (work.results / "calibration" / "s--quora--cpu.json").write_text(json.dumps(sealed(summary)))
    before = _state(work)
    _check(work, work.table(), "'points[0].score'", before)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["show", "table", "table --check"])
def test_an_edited_sealed_record_without_its_digest_is_refused(work: Work, command: str) -> None:
    """The seal cannot be undone by deleting it: an edited sealed run record, its digest deleted."""
    rec = json.loads((RESULTS / f"{SEALED_RUN}.json").read_text(encoding="utf-8"))
    shutil.copyfile(RESULTS / "outputs" / f"{SEALED_RUN}.txt", work.results / "outputs" / f"{SEALED_RUN}.txt")
    del rec[DIGEST_FIELD]
    rec["scores"]["mist-quora"]["metrics"]["bleu4"] += 0.3  # plausible, inside its CI: only the seal sees it
    (work.results / f"{SEALED_RUN}.json").write_text(json.dumps(rec, indent=2), encoding="utf-8")
    before = _state(work)
    args = {"show": ("show", SEALED_RUN, "--results-dir", str(work.results)),
            "table": ("table", "--results-dir", str(work.results), "--reports-dir", str(work.reports)),
            "table --check": ("table", "--check", "--results-dir", str(work.results), "--reports-dir",
                              str(work.reports))}[command]
    _check(work, work.bench(*args), f"{SEALED_RUN}.json: 'digest' is missing", before)


@pytest.mark.slow
def test_an_edited_sweep_without_its_digest_is_refused(work: Work) -> None:
    rec = unsealed(json.loads(SWEEP.read_text(encoding="utf-8")))
    rec["device"] = rec["device"] + " "  # an edit no cross-check sees: only the missing seal can refuse it
    (work.results / "sweep").mkdir()
    (work.results / "sweep" / SWEEP.name).write_text(json.dumps(rec, indent=2), encoding="utf-8")
    before = _state(work)
    _check(work, work.table(), f"{SWEEP.name}: 'digest' is missing", before)


# ---------------------------------------------------------------- names and report paths, in process


@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "a\\b", "", ".hidden", "x\x00", "é", "a" * 201])
def test_the_identifier_rule(name: str) -> None:
    from bench.api.names import UnsafeNameError, identifier, identifier_problem
    from bench.store.paths import calibration_summary_file, ordering_file, run_record_file

    assert identifier_problem(name) is not None
    with pytest.raises(UnsafeNameError):
        identifier(name)
    for build in (lambda: run_record_file("r", name), lambda: calibration_summary_file("r", "s", name, "cpu"),
                  lambda: ordering_file("r", "mist", "3", name, "cpu")):
        with pytest.raises(UnsafeNameError):
            build()
    for ok in ("copy_source--quora--test--cpu--s42--af654a53", "test-available", "1.5e-4", "a+b"):
        assert identifier_problem(ok) is None


def test_every_report_path_stays_inside_reports_dir(tmp_path: Path) -> None:
    from bench.report.build import report_file
    from bench.store.targets import UnsafeTargetError

    out = tmp_path / "reports"
    out.mkdir()
    assert report_file(out, "index.html") == out / "index.html"
    for name in ("../x.html", "leaderboard-../../x.html", "..", "a/b.md", ""):
        with pytest.raises(UnsafeTargetError, match="--reports-dir"):
            report_file(out, name)
    (tmp_path / "victim.html").write_text(SENTINEL)
    (out / "index.html").unlink(missing_ok=True)
    (out / "index.html").symlink_to(tmp_path / "victim.html")
    with pytest.raises(UnsafeTargetError, match="leads out of"):
        report_file(out, "index.html")


def test_no_committed_record_holds_a_name_that_is_not_an_identifier() -> None:
    for path in kinds.json_files_under(RESULTS):
        store = kinds.kind_of(RESULTS, path)
        assert store is not None
        data = json.loads(path.read_text(encoding="utf-8"))
        for field, value in name_values(data, store.names):
            assert isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", value), (path, field)
    assert not math.isnan(0.0)


def test_a_run_id_given_to_show_is_an_identifier_never_a_path(tmp_path: Path) -> None:
    from bench.runs.lookup import RunLookupError, find_record

    (tmp_path / "results").mkdir()
    shutil.copyfile(RESULTS / f"{LEGACY_RUN}.json", tmp_path / "outside.json")
    with pytest.raises(RunLookupError, match=r"run id is '\.\./outside', not an identifier"):
        find_record("../outside", tmp_path / "results")
