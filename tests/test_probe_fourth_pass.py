"""#57, a fourth hostile pass (after the third pass's JSON, one-file and linked-folder fixes); each probe is a test
here, victims and sentinels outside the tree (``tmp_path``). Findings fixed by this pass:

- An outputs file holding a NUL byte was scored by ``score``, ``submit`` and ``compare`` as a token of text, and a
  UTF-16 file saved without a byte-order mark (half NULs, "valid UTF-8") was scored as garbage: now one line naming
  the file, the line and the fix, alike for every command (:data:`bench.api.textfile.OUTPUTS`), and outputs given in
  memory are held to the same rule (:func:`bench.scoring.inputs.check_hypotheses`).
- The single-file readers (``read_summary``, ``read_ordering``, ``read_record``, ``read_latency_record``,
  ``read_sweep_record``) skipped the one-id-one-file rule the folder loaders apply: now
  :meth:`bench.store.sealed.SealedStore.read` applies it to every read.
- A latency or sweep record whose verdict was flipped and resealed (the digest is a checksum anyone can recompute)
  was shown until ``--deep``: every verdict word is now derived at load from the numbers stored beside it
  (:mod:`bench.store.verdicts`); what stays ``--deep``'s is said there.
  So is an ordering's (its pairs and Kendall's τ-b follow from its rows), a system whose timed outputs differ
  from its reference (the trial hashes stored beside them) must be INVALID and say so, and a latency record shows
  only the systems it timed (an entry copied under another system's name was shown as that system's speed-up).
- A compare-cache entry copied under another comparison's key was shown as that comparison's result.
- An outputs file in a results folder was hashed whole into memory, whatever its size.
- ``$BENCH_RESULTS`` naming a file was skipped in silence by ``bench ls runs``.
- Misleading lines: a calibration point whose run id named the summary's own file, ``$BENCH_DATA`` naming a file
  ("not found"), a raw data file that is a FIFO or a device ("missing"), a symlink loop met while writing the cache
  ("Too many levels of symbolic links", no fix).
"""

from __future__ import annotations

import copy
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
FIXTURE = ROOT / "tests" / "fixtures" / "records" / "mist_minilm_l6--squad_qg--test--cpu--s42--fixture01.json"
INCLUDE = ROOT / "examples" / "bench_example_plugin" / "bench_include.py"
SUMMARY = RESULTS / "calibration" / "bert2bert_minilm_l6--quora--cpu.json"
ORDERING = RESULTS / "ordering" / "mist-table3--quora--cpu.json"
PAIRED = RESULTS / "latency" / "quora--test--paper--random--forced--20261129T135536--c4499950.json"  # UNSTABLE
VALID_PAIRED = RESULTS / "latency" / "squad_qg--test--paper--random--forced--20261129T073810--c9ba045e.json"
BLOCK = RESULTS / "latency" / "quora--test--paper--random--forced--20261126T023433--d03241f6.json"  # schema 1
SWEEP = RESULTS / "sweep" / "quora--test--paper--sweep--20261129T104545--a98489b8.json"


def _bench(*args: str, tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "BENCH_CACHE": str(tmp_path / "cache"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "bench", "--include", str(INCLUDE), *args], capture_output=True,
                          text=True, env=full, cwd=ROOT, timeout=120)


def _one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    return " ".join(out.stderr.split())


def _unsealed(path: Path) -> dict[str, Any]:
    from bench.store.integrity import unsealed

    return unsealed(json.loads(path.read_text(encoding="utf-8")))


def _reseal(path: Path, rec: dict[str, Any]) -> Path:
    """What a forger does: edit, then recompute the digest with the public sealing function."""
    from bench.store.integrity import sealed

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sealed(rec)), encoding="utf-8")
    return path


# ---------------------------------------------------------------- 1. a NUL byte in an outputs file (open end 1)

@pytest.mark.parametrize("command", ["score", "submit", "compare"])
def test_a_nul_byte_is_one_line_naming_file_line_and_fix_for_score_submit_and_compare(tmp_path: Path,
                                                                                       command: str) -> None:
    """Decided: refused, never scored (no output text holds a NUL; Perl, Java and the pages read it each their own
    way), with one wording for the three commands: they read through one checked reader."""
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"the orchestra played\nthe hikers\x00 reached the top\nx\ny\nz\nw\n")
    other = tmp_path / "other.txt"
    other.write_text("a\n" * 6)
    args = {"score": ("score", "--hyp", str(hyp), "--task", "toy_pairs", "--recipe", "sacrebleu"),
            "submit": ("submit", "--name", "nul", "--task", "toy_pairs", "--hyp", str(hyp), "--results-dir",
                       str(tmp_path / "results")),
            "compare": ("compare", str(other), str(hyp), "--task", "toy_pairs")}[command]
    said = _one_line(_bench(*args, tmp_path=tmp_path))
    assert f"{hyp}: line 2 holds a NUL byte (0x00) at byte 11 of the line" in said
    assert "Fix: save it as UTF-8 text without NUL bytes" in said
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").glob("*.json"))


def test_a_utf16_file_without_a_bom_is_refused_not_scored_as_garbage(tmp_path: Path) -> None:
    from bench.scoring.errors import ScoringInputError
    from bench.scoring.inputs import read_lines

    hyp = tmp_path / "utf16.txt"
    hyp.write_bytes("what is a fish\nwho are you\n".encode("utf-16-le"))  # valid UTF-8, a NUL after each letter
    with pytest.raises(ScoringInputError, match=r"utf16.txt: line 1 holds a NUL byte .*saved as UTF-16"):
        read_lines(hyp)


def test_outputs_given_in_memory_with_a_nul_are_refused_like_a_file() -> None:
    from bench.scoring.errors import ScoringInputError
    from bench.scoring.inputs import check_hypotheses

    with pytest.raises(ScoringInputError, match=r"outputs: hypothesis 2 contains a NUL byte"):
        check_hypotheses(["fine", "not\x00fine"], "outputs")


def test_a_stored_outputs_file_with_a_nul_is_named_when_it_is_read(tmp_path: Path) -> None:
    from bench.api.reading import UnreadableFile, read_text
    from bench.api.textfile import OUTPUTS

    stored = tmp_path / "outputs" / "x.txt"
    stored.parent.mkdir()
    stored.write_bytes(b"a\nb\x00\n")
    with pytest.raises(UnreadableFile, match=r"x.txt: line 2 holds a NUL byte"):
        read_text(stored, limits=OUTPUTS)


@pytest.mark.parametrize("body, said", [
    (b"one\rtwo\r", "contains a newline"),  # old Mac line ends: one line holding \r, refused, never split silently
    (b"\xc0\xaf\n", "invalid UTF-8"),  # an overlong encoding of '/'
    ("a\u2028b\n".encode(), None),  # a Unicode line separator is a character inside a line: one hypothesis
])
def test_hypothesis_files_that_held_stay_held(tmp_path: Path, body: bytes, said: str | None) -> None:
    from bench.scoring.errors import ScoringInputError
    from bench.scoring.inputs import read_hypotheses

    hyp = tmp_path / "h.txt"
    hyp.write_bytes(body)
    if said is None:
        assert read_hypotheses(hyp, 1, "ref") == ["a\u2028b"]
        return
    with pytest.raises(ScoringInputError, match=said):
        read_hypotheses(hyp, 1 if b"\r" in body else 1, "ref")


def test_hyp_given_as_the_current_folder_is_named_as_a_directory(tmp_path: Path) -> None:
    """``--hyp ""`` reaches the harness as ``.`` (typer's Path): a folder, named as one."""
    from bench.scoring.errors import ScoringInputError
    from bench.scoring.inputs import read_lines

    with pytest.raises(ScoringInputError, match="not a regular file"):
        read_lines(Path(tmp_path) / ".")


def test_an_outputs_file_over_the_cap_is_not_read_into_memory(tmp_path: Path) -> None:
    """A sparse 300 MiB outputs file beside a record: refused by its size, never hashed whole (it was)."""
    from bench.store.records import OutputsChangedError, load_records

    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    shutil.copy(FIXTURE, results / FIXTURE.name)
    big = results / "outputs" / f"{FIXTURE.stem}.txt"
    with open(big, "wb") as fh:
        fh.truncate(300 << 20)
    with pytest.raises(OutputsChangedError, match=r"314,572,800 bytes, over the 256 MiB cap .* not read"):
        load_records(results)


# ---------------------------------------------------------------- 2. one id is one file, by path too (open end 2)

def _kind_file(kind: str, folder: Path) -> tuple[Path, Any]:
    """A committed record of ``kind`` copied under its own name into ``folder``'s layout, and its reader."""
    from bench.store.calibration import read_summary
    from bench.store.latency import read_latency_record
    from bench.store.orderings import read_ordering
    from bench.store.records import read_record
    from bench.store.submissions import read_submission
    from bench.store.sweeps import read_sweep_record

    submission = next(p for p in sorted(RESULTS.glob("*.json")) if '"kind": "external"' in p.read_text())
    source, sub, reader = {
        "run": (FIXTURE, "", read_record), "submission": (submission, "", read_submission),
        "summary": (SUMMARY, "calibration", read_summary), "ordering": (ORDERING, "ordering", read_ordering),
        "latency": (PAIRED, "latency", read_latency_record), "sweep": (SWEEP, "sweep", read_sweep_record),
    }[kind]
    own = folder / sub / source.name
    own.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, own)
    return own, reader


@pytest.mark.parametrize("kind", ["run", "submission", "summary", "ordering", "latency", "sweep"])
def test_a_record_read_by_its_path_under_another_name_is_refused(tmp_path: Path, kind: str) -> None:
    from bench.store.files import StoreError

    own, reader = _kind_file(kind, tmp_path)
    assert reader(own)  # under its own name, anywhere: read
    copy_ = own.with_name("zz-another-name.json")
    shutil.copy(own, copy_)
    with pytest.raises(StoreError, match=r"zz-another-name.json: .*(one id is one file|one sweep is one file|one block "
                                         r"is one file).*Rename it"):
        reader(copy_)


def test_a_summary_merged_by_calibrate_under_another_name_is_refused(tmp_path: Path) -> None:
    """``bench calibrate`` reads the old summary by path to merge a sweep into it: another sweep's file, renamed,
    would have had its points merged in."""
    from bench.store.calibration import CalibrationSummaryError
    from bench.workflows.calibrate import _merge

    own, _ = _kind_file("summary", tmp_path)
    theirs = own.with_name("copy_source--quora--cpu.json")
    own.rename(theirs)
    with pytest.raises(CalibrationSummaryError, match="one sweep is one file"):
        _merge(theirs, {**_unsealed(SUMMARY), "system": "copy_source"})


# ---------------------------------------------------------------- 3. a flipped, resealed verdict (open end 3)

def _all_valid(rec: dict[str, Any]) -> None:
    for entry in rec["systems"].values():
        entry.update(verdict="VALID", valid=True, invalid_reasons=[])
        if isinstance(entry.get("speedup"), dict) and "verdict" in entry["speedup"]:
            entry["speedup"].update(verdict="VALID", reasons=[])


def _latency_forgery(forge: str) -> tuple[dict[str, Any], str]:
    if forge in ("top", "speed-ups"):
        rec = _unsealed(PAIRED)
        rec.update(verdict="VALID", valid=True, invalid_reasons=[])
        if forge == "speed-ups":
            _all_valid(rec)
            for c in ("aa", "x2"):
                rec[c].update(verdict="VALID", reasons=[])
            return rec, r"'systems\.encoder_bert\.speedup\.verdict' is 'VALID', but .* give 'INCONCLUSIVE'"
        return rec, r"'verdict' is 'VALID', but the verdicts stored beside it .* give 'UNSTABLE'"
    rec = _unsealed(VALID_PAIRED)
    if forge == "a/a control read":  # the control's read edited to a failure: every speed-up it judges follows
        rec["aa"]["mean_ci95"] = rec["aa"]["median_ci95"] = [1.05, 1.08]  # excludes 1
        rec["aa"]["mean"] = rec["aa"]["median"] = 1.06
        return rec, r"'systems\.\w+\.speedup\.verdict' is 'VALID', but .* give 'UNSTABLE'"
    if forge == "a/a control verdict":
        rec["aa"].update(verdict="UNSTABLE", reasons=["made up"])
        return rec, r"'aa\.verdict' is 'UNSTABLE', but its mean and CI .* give 'VALID'"
    if forge == "system valid":
        name = next(n for n, e in rec["systems"].items() if e.get("speedup"))
        rec["systems"][name]["valid"] = False
        return rec, rf"'systems\.{name}\.valid' is False with verdict 'VALID'"
    # ms label: the canary's readings drift 300 % (samples and medians edited together), the label left VALID
    samples = rec["canary"]["samples_ms_per_round"]
    samples[-1] = [x * 4 for x in samples[-1]]
    rec["canary"]["median_ms_per_round"] = [sorted(s)[len(s) // 2] for s in samples]
    from bench.store.verdicts import _drift

    rec["canary"]["drift"] = _drift(rec["canary"]["median_ms_per_round"])
    return rec, r"'canary\.drift' is \d+%, past the tolerance 25%, but no reason says so"


@pytest.mark.parametrize("forge", ["top", "speed-ups", "a/a control read", "a/a control verdict", "system valid",
                                   "ms label"])
def test_a_flipped_resealed_latency_verdict_is_refused_at_load(tmp_path: Path, forge: str) -> None:
    from bench.store.latency import LatencyRecordError, load_latency_records

    rec, said = _latency_forgery(forge)
    path = _reseal(tmp_path / "results" / "latency" / f"{rec['latency_id']}.json", rec)
    with pytest.raises(LatencyRecordError) as info:
        load_latency_records(tmp_path / "results")
    text = str(info.value)
    assert text.startswith(f"{path}: ") and "\n" not in text, text
    assert "Restore it" in text and "measure again" in text  # the fix
    import re

    assert re.search(said, text), text


@pytest.mark.parametrize("forge", ["drift edited", "readings past tolerance", "valid with reasons"])
def test_a_block_design_latency_record_is_checked_at_load(tmp_path: Path, forge: str) -> None:
    """Schema 1 (no paired evidence): its canary drift is a function of its stored readings, and a drift past the
    tolerance makes it invalid (the issue's "drift edited to 60 % still shows verdict VALID")."""
    from bench.store.latency import LatencyRecordError, read_latency_record
    from bench.store.verdicts import _drift

    rec = _unsealed(BLOCK)
    if forge == "drift edited":
        rec["canary"]["drift"], said = 0.6, "'canary.drift' is 0.6, but its stored per-round readings drift"
    elif forge == "readings past tolerance":
        medians = rec["canary"]["median_ms_per_round"]
        rec["canary"]["median_ms_per_round"] = [x * (3 if i % 2 else 1) for i, x in enumerate(medians)]
        rec["canary"]["drift"] = _drift(rec["canary"]["median_ms_per_round"])
        said = "'valid' is true, but the canary drifted"
    else:
        rec["invalid_reasons"], said = ["made up"], "'valid' is True with 1 invalid reason(s)"
    path = _reseal(tmp_path / "latency" / BLOCK.name, rec)
    with pytest.raises(LatencyRecordError, match=said.replace("(", r"\(").replace(")", r"\)")):
        read_latency_record(path)


def _sweep_forgery(forge: str) -> tuple[dict[str, Any], str]:
    rec = _unsealed(SWEEP)
    words = {"verdict": "VALID", "valid": True, "invalid_reasons": []}
    if forge == "one copy":
        rec.update(words)
        return rec, r"'sweep\.verdict' is 'UNSTABLE', but the record's 'verdict' is 'VALID'"
    if forge == "ms label":
        labels = {"ms_label": "VALID", "ms_reasons": []}
        rec.update(labels)
        rec["sweep"].update(labels)
        return rec, r"canary\.drift' is 84%, past the tolerance 25%, but no reason says so"
    if forge == "canary drift":
        rec["sweep"]["groups"][2]["canary"]["device"]["drift"] = 0.01
        return rec, r"'sweep\.groups\[2\]\.canary\.drift' is 0\.01, but its stored per-round readings drift"
    rec.update(words)
    rec["sweep"].update(words)
    if forge == "both copies":
        return rec, r"'verdict' is 'VALID', but the verdicts stored beside it .* give 'UNSTABLE'"
    for cell in rec["sweep"]["cells"]:
        cell["verdict"] = "VALID"
        if cell.get("speedup"):
            cell["speedup"].update(verdict="VALID", reasons=[])
    return rec, r"'sweep\.cells\[\d+\]\.speedup\.verdict' is 'VALID', but .* give 'INCONCLUSIVE'"


@pytest.mark.parametrize("forge", ["both copies", "one copy", "cells", "ms label", "canary drift"])
def test_a_flipped_resealed_sweep_verdict_is_refused_at_load(tmp_path: Path, forge: str) -> None:
    import re

    from bench.store.sweeps import SweepRecordError, load_sweep_records

    rec, said = _sweep_forgery(forge)
    path = _reseal(tmp_path / "results" / "sweep" / SWEEP.name, rec)
    with pytest.raises(SweepRecordError) as info:
        load_sweep_records(tmp_path / "results")
    text = str(info.value)
    assert text.startswith(f"{path}: ") and "Restore it" in text and "sweep again" in text
    assert re.search(said, text), text


def test_every_committed_latency_and_sweep_record_passes_the_verdict_checks() -> None:
    from bench.store.verdicts import latency_verdict_problems, sweep_verdict_problems

    for path in sorted((RESULTS / "latency").glob("*.json")):
        assert latency_verdict_problems(_unsealed(path)) == [], path
    fixtures = sorted((ROOT / "tests" / "fixtures" / "sweep").glob("*.json"))
    for path in [*sorted((RESULTS / "sweep").glob("*.json")), *fixtures]:
        assert sweep_verdict_problems(_unsealed(path)) == [], path


def test_the_store_judges_a_speed_up_as_the_meter_does() -> None:
    """The rules are the meter's (bench.latency.paired); the store repeats them below the meter. Random speed-ups
    and controls around every threshold, under both known-ratio rules: the two give the same verdicts."""
    from bench.latency.paired import PairedSpeedup, Thresholds, aa_problems, own_problems, worst, x2_problems
    from bench.store.verdicts import Rules, aa_verdicts, own_verdicts, x2_verdicts
    from bench.store.verdicts import worst as store_worst

    rng = random.Random(57)

    def speedup(centre: float) -> PairedSpeedup:
        mean = centre * rng.uniform(0.9, 1.1)
        lo, hi = mean / rng.uniform(1.0, 1.12), mean * rng.uniform(1.0, 1.12)
        rounds = [mean * rng.uniform(0.9, 1.1) for _ in range(rng.randint(1, 5))]
        return PairedSpeedup(mean, mean, (lo, hi), (lo, hi), 100, mean, rounds, 10, len(rounds))

    for i in range(3000):
        band = None if i % 3 == 0 else rng.choice([0.03, 0.05])
        th = Thresholds(x2_band=band)
        rules = Rules.of(th.to_json())
        sp, aa, x2 = speedup(rng.uniform(0.5, 3)), speedup(1.0), speedup(2.0)
        aa_or_none = None if i % 7 == 0 else aa
        x2_or_none = None if i % 5 == 0 else x2
        meter = worst([v for v, _ in aa_problems(aa_or_none, th) + x2_problems(x2_or_none, th) + own_problems(sp, th)])
        store = store_worst(aa_verdicts(None if aa_or_none is None else aa_or_none.to_json(), rules)
                            + x2_verdicts(None if x2_or_none is None else x2_or_none.to_json(), rules)
                            + own_verdicts(sp.to_json(), rules))
        assert store == meter, (i, sp, aa_or_none, x2_or_none, th)


# ---------------------------------------------------------------- the compare cache

def _result() -> dict[str, Any]:
    return {"recipe": "nqg", "signature": "s", "n_items": 3, "delta_is": "a - b",
            "a": {"signature": "s", "metrics": {"bleu4": 12.5}}, "b": {"signature": "s", "metrics": {"bleu4": 10.0}},
            "metrics": {"bleu4": {"a": 12.5, "b": 10.0, "delta": 2.5, "p_bootstrap": 0.01, "p_ar": 0.02,
                                  "ci95_a_minus_b": [1.0, 4.0]}}}


def test_a_compare_cache_entry_filed_under_another_key_is_a_miss(tmp_path: Path) -> None:
    """An intact entry (its own hash fits) of one comparison copied over another's key was shown for that pair."""
    from bench.scoring.compare_cache import read_entry, write_entry

    mine = tmp_path / ("a" * 64 + ".json")
    write_entry(mine, _result())
    assert read_entry(mine) == _result()
    theirs = tmp_path / ("b" * 64 + ".json")
    shutil.copy(mine, theirs)
    assert read_entry(theirs) is None


def test_a_compare_cache_entry_linked_to_a_victim_is_replaced_never_written_through(tmp_path: Path) -> None:
    from bench.scoring.compare_cache import write_entry

    victim = tmp_path / "victim.txt"
    victim.write_text("sentinel")
    cache = tmp_path / "cache"
    cache.mkdir()
    entry = cache / ("c" * 64 + ".json")
    entry.symlink_to(victim)
    write_entry(entry, _result())
    assert victim.read_text() == "sentinel" and not entry.is_symlink()


# ---------------------------------------------------------------- environment and folders a careless user names

@pytest.mark.parametrize("env, said", [
    ("BENCH_CACHE=file", "{file} is a file, not a folder; set $BENCH_CACHE to a folder"),
    ("BENCH_CACHE=loop", "loop1 is a symbolic link that leads nowhere (or back to itself)"),
    ("BENCH_DATA=file", "$BENCH_DATA: {file} (is a file, not a folder)"),
    ("BENCH_DATA=loop", "Symlink loop from"),
])
def test_an_environment_folder_that_is_a_file_or_a_loop_is_one_line(tmp_path: Path, env: str, said: str) -> None:
    name, what = env.split("=")
    file = tmp_path / "a-file"
    file.write_text("x")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    value = str(file if what == "file" else tmp_path / "loop1")
    hyp = tmp_path / "h.txt"
    hyp.write_text("a\n" * 6)
    out = _bench("score", "--hyp", str(hyp), "--task", "quora", "--recipe", "sacrebleu", tmp_path=tmp_path,
                 env={name: value})
    if name == "BENCH_CACHE":  # the machine's state, not an input: exit 1 (bench.api.errors.EnvironmentProblem)
        assert out.returncode == 1 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        out.returncode = 2
    assert said.format(file=file) in _one_line(out)


def test_reports_dir_equal_to_results_dir_is_refused_and_nothing_written(tmp_path: Path) -> None:
    from bench.report.build import render_all
    from bench.store.targets import UnsafeTargetError

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(FIXTURE, results / FIXTURE.name)
    with pytest.raises(UnsafeTargetError, match="inside the results folder"):
        render_all(results, results)
    assert sorted(p.name for p in results.iterdir()) == [FIXTURE.name]


# ---------------------------------------------------------------- a hostile contributor's records

def test_a_pvalues_file_linked_to_a_victim_is_refused_and_never_written_through(tmp_path: Path) -> None:
    from bench.store.pvalues import PValues, PValuesError, pvalues_file

    victim = tmp_path / "victim.json"
    victim.write_text('{"sentinel": 1}')
    folder = tmp_path / "results" / "significance"
    folder.mkdir(parents=True)
    (folder / "pvalues.json").symlink_to(victim)
    with pytest.raises(PValuesError, match="is a link out of its folder"):
        PValues(pvalues_file(tmp_path / "results")).save()
    assert victim.read_text() == '{"sentinel": 1}'


def test_a_record_hard_linked_to_a_victim_is_replaced_on_write_never_written_through(tmp_path: Path) -> None:
    from bench.store.records import RunRecord, read_record

    victim = tmp_path / "victim.json"
    victim.write_bytes(FIXTURE.read_bytes())
    results = tmp_path / "results"
    results.mkdir()
    os.link(victim, results / FIXTURE.name)
    RunRecord.from_json(read_record(results / FIXTURE.name)).write(results)  # as rescore/refile rewrite it
    assert victim.read_bytes() == FIXTURE.read_bytes()
    assert os.stat(results / FIXTURE.name).st_ino != os.stat(victim).st_ino


def test_a_summary_point_naming_the_summary_itself_is_named_as_such(tmp_path: Path) -> None:
    """Was: "'run_id' must be a non-empty string. Records are written by bench/runs/pipeline.py" about the summary."""
    from bench.store.calibration import CalibrationSummaryError, best_point, load_summaries

    summary = _unsealed(SUMMARY)
    summary["points"] = [dict(summary["points"][0], run_id=SUMMARY.stem)]
    summary["pick"] = best_point(summary["points"])
    _reseal(tmp_path / "results" / "calibration" / SUMMARY.name, summary)
    with pytest.raises(CalibrationSummaryError, match="names this summary's own file, not a point's run record"):
        load_summaries(tmp_path / "results")


@pytest.mark.parametrize("field, value", [("system", "\u0441opy_source"), ("task", "quora\u202e"),
                                          ("budget", "cpu\n")])
def test_a_look_alike_or_invisible_name_is_no_identifier(tmp_path: Path, field: str, value: str) -> None:
    """A Cyrillic 'с' that shows as 'c', a bidi override, a trailing newline: ASCII identifiers only, so no record
    passes itself off as another system's row."""
    from bench.store.calibration import CalibrationSummaryError, load_summaries

    summary = _unsealed(SUMMARY)
    summary[field] = value
    _reseal(tmp_path / "results" / "calibration" / SUMMARY.name, summary)
    with pytest.raises(CalibrationSummaryError, match=f"'{field}' is .*not an identifier"):
        load_summaries(tmp_path / "results")


# ---------------------------------------------------------------- a hostile mirror's archive

def _tar(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info in members:
            tar.addfile(info, io.BytesIO(data[info.name]) if info.name in data else None)
    return path


@pytest.mark.parametrize("how", ["symlink", "hardlink", "traversal"])
def test_a_mirror_archive_member_that_is_a_link_or_climbs_out_writes_nothing_outside(tmp_path: Path,
                                                                                      how: str) -> None:
    """Members are read into memory by base name (regular files only) and written by the harness where the data
    folder says: a link member is never followed, a ``../`` name never becomes a path."""
    from bench.data.public_sources import Output
    from bench.workflows.fetch_data import _members

    victim = tmp_path / "victim.txt"
    victim.write_text("sentinel")
    info = tarfile.TarInfo("data/src-train.txt" if how != "traversal" else "../../victim.txt")
    body = b"payload\n"
    if how == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, str(victim)
    elif how == "hardlink":
        info.type, info.linkname = tarfile.LNKTYPE, str(victim)
    else:
        info.size = len(body)
    archive = _tar(tmp_path / "a.tar.gz", [info], {info.name: body})
    wanted = [Output("du2017/src-train.txt", "0" * 64, member="src-train.txt"),
              Output("du2017/victim.txt", "0" * 64, member="victim.txt")]
    found = _members(archive, wanted, "again")
    assert found == ({"victim.txt": body} if how == "traversal" else {})
    assert victim.read_text() == "sentinel"
    assert not (tmp_path.parent / "victim.txt").exists() or (tmp_path.parent / "victim.txt").read_text() != "payload\n"


# ---------------------------------------------------------------- who was timed

@pytest.mark.parametrize("forge, said", [
    ("ghost system", r"'systems' holds .*'ghost_system'.*but 'spec\.systems' \(what was timed\)"),
    ("ghost listed too", r"'systems\.ghost_system' is not an arm of 'design\.arms': it was never timed"),
    ("baseline swapped", r"'baseline' is 'encoder_bert', but 'spec\.baseline'|but the baseline's mean_ms over this"),
])
def test_a_latency_record_shows_only_systems_it_timed(tmp_path: Path, forge: str, said: str) -> None:
    """A timed system's entry copied under another name (a row of the boards) was shown as that system's speed."""
    from bench.store.latency import LatencyRecordError, read_latency_record

    rec = _unsealed(VALID_PAIRED)
    if forge == "baseline swapped":
        rec["baseline"] = "encoder_bert"
    else:
        rec["systems"]["ghost_system"] = copy.deepcopy(rec["systems"]["encoder_bert"])
        if forge == "ghost listed too":
            rec["spec"]["systems"].append("ghost_system")
    path = _reseal(tmp_path / "latency" / VALID_PAIRED.name, rec)
    with pytest.raises(LatencyRecordError, match=said):
        read_latency_record(path)


def test_a_sweep_cell_of_a_system_never_timed_is_refused(tmp_path: Path) -> None:
    from bench.store.sweeps import SweepRecordError, read_sweep_record

    rec = _unsealed(SWEEP)
    rec["spec"]["systems"].append("ghost_system")
    rec["sweep"]["cells"].append(dict(rec["sweep"]["cells"][1], system="ghost_system"))
    path = _reseal(tmp_path / "sweep" / SWEEP.name, rec)
    with pytest.raises(SweepRecordError, match=r"'sweep\.cells\[\d+\]\.system' is not an arm of its group's design"):
        read_sweep_record(path)


def test_bench_results_that_is_a_file_is_named_not_skipped(tmp_path: Path) -> None:
    """Was: `bench ls runs` silently listed the committed results only (the workspace was skipped)."""
    file = tmp_path / "not-a-folder"
    file.write_text("x")
    out = _bench("ls", "runs", tmp_path=tmp_path, env={"BENCH_RESULTS": str(file)})
    assert f"$BENCH_RESULTS {file}: is a file, not a folder" in _one_line(out)


# ---------------------------------------------------------------- an ordering's verdict

@pytest.mark.parametrize("forge, said", [
    ("tau 1", r"'tau_b' is 1\.0, but its rows' reported and reproduced values give 0\.3333"),
    ("a pair dropped", r"'pairs' are .*, but the adjacent rows in the paper's order are"),
    ("reported delta", r"'pairs\[0\]\.reported_delta' is 9\.0, but the reported numbers differ by 2\.4600"),
    ("no tau, pairs kept", r"'pairs' are listed, but 'tau_b' is null"),
])
def test_a_flipped_resealed_ordering_verdict_is_refused_at_load(tmp_path: Path, forge: str, said: str) -> None:
    """τ-b says whether the paper's order survives; it follows from the rows stored beside it."""
    from bench.store.orderings import OrderingError, load_orderings

    rec = _unsealed(ORDERING)
    if forge == "tau 1":
        rec.update(tau_b=1.0, tau_ci95=[1.0, 1.0])
    elif forge == "a pair dropped":
        del rec["pairs"][1]
    elif forge == "reported delta":
        rec["pairs"][0]["reported_delta"] = 9.0
    else:
        rec.update(tau_b=None, tau_ci95=None)
    path = _reseal(tmp_path / "results" / "ordering" / ORDERING.name, rec)
    with pytest.raises(OrderingError, match=said) as info:
        load_orderings(tmp_path / "results")
    assert str(info.value).startswith(f"{path}: ") and "bench order" in str(info.value)


@pytest.mark.parametrize("kind", ["latency", "sweep"])
def test_a_system_whose_timed_outputs_differ_is_invalid_and_says_so(tmp_path: Path, kind: str) -> None:
    """A forger deletes the reason "timed outputs differ from the reference" and the INVALID it gave: the trials'
    hashes stored beside them still differ from the reference hashes, and that is read at load."""
    from bench.store.files import StoreError
    from bench.store.latency import read_latency_record
    from bench.store.sweeps import read_sweep_record

    rec = _unsealed(VALID_PAIRED if kind == "latency" else SWEEP)
    block = rec if kind == "latency" else rec["sweep"]["groups"][0]
    k = block["trials"]["arm"].index("encoder_bert")
    block["trials"]["out_hash"][k] = "0" * 16
    path = _reseal(tmp_path / kind / (VALID_PAIRED if kind == "latency" else SWEEP).name, rec)
    said = (r"'systems\.encoder_bert\.design_reasons' is empty, but its timed outputs differ" if kind == "latency"
            else r"'sweep\.groups\[0\]\.trials' show its timed outputs differ .* 'threads=1 B=1: encoder_bert: '")
    with pytest.raises(StoreError, match=said):
        (read_latency_record if kind == "latency" else read_sweep_record)(path)


@pytest.mark.parametrize("what", ["fifo", "device", "folder"])
def test_a_raw_data_file_that_is_no_file_is_named_as_what_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               what: str) -> None:
    """A --data-dir whose raw file is a FIFO (a mirror's, a careless copy's) was called "missing"; never opened."""
    from bench.data import load_split
    from bench.data.sources import DataError

    shared = ROOT.parent / "shared" / "data"
    if not (shared / "quora" / "duji2019").is_dir():
        pytest.skip("no shared Quora data here")
    data = tmp_path / "data"
    (data / "quora" / "duji2019").mkdir(parents=True)
    shutil.copy(shared / "SHA256SUMS", data / "SHA256SUMS")
    for f in (shared / "quora" / "duji2019").iterdir():
        (data / "quora" / "duji2019" / f.name).symlink_to(f)
    odd = data / "quora" / "duji2019" / "test.tgt"
    odd.unlink()
    if what == "fifo":
        os.mkfifo(odd)
    elif what == "device":
        odd.symlink_to("/dev/zero")
    else:
        odd.mkdir()
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    kind = {"fifo": "a FIFO", "device": "a character device", "folder": "a directory"}[what]
    with pytest.raises(DataError, match=f"test.tgt: {kind}.*, not the raw data file quora/duji2019/test.tgt"):
        load_split("quora", "test", data_dir=data)
