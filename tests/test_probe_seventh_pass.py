"""#57, a seventh hostile pass (after the sixth pass's id-is-its-content and trained-timing fixes), aimed where the
six before it did not reach: ``compare`` and ``submit`` on self-contradicting records and outputs, the record
rewriters (``promote``, ``rescore``, ``refile``), ``bench latency --runs``'s comparison with a run's recorded
outputs, int8's ``decode_batch_size`` rule, and a hostile mirror through ``fetch --data``. Every probe is a test
here; victims and sentinels outside the tree (``tmp_path``). The table (id: what -> result):

A record whose ``data`` contradicts its spec (resealed: the digest is a checksum anyone recomputes):

- T01 a whole-split run (no ``--limit``) made to say it scored the first 100 examples (``data.n_examples``,
  ``partial``, ``split_sha256``, the outputs and their sha256 and count all made to fit: a cherry-picked prefix) ->
  fixed: it was shown by ``show`` and the boards as that spec's run, and ``--deep`` re-derived it clean, since both
  took the examples from ``data``; now the store holds ``data`` to the spec (:mod:`bench.store.examples`: the
  registry states every split's size) and ``--deep``, ``compare`` and ``rescore`` take the spec's ``--limit``
- T02 a ``--limit 2000`` run made to say 1000 -> fixed (same rule); T03 its ``data.partial`` flipped -> fixed
- T04 ``spec.limit`` of another form (``"x"``, 0, -5, true) under a remade id -> fixed (accepted; now named at the
  field)
- T05 ``bench compare`` of a T01 record -> fixed (refused when read, before any scoring)
- T06 a complete record with ``outputs.path`` or ``outputs.sha256`` removed -> fixed: it was shown (its scores
  standing on no outputs), and T07 ``bench promote`` copied it into results/ without outputs and sealed it again
- T08 an outputs file with a BOM, in UTF-16, in Latin-1 or holding a NUL, its record resealed with the file's sha256
  -> fixed: the boards and ``--check`` hashed the bytes and showed the record; only commands that read the outputs
  refused them. Now the load check reads them as every reader does (:data:`bench.api.textfile.OUTPUTS`)
- T09 an outputs line with a lone CR, resealed -> clean (one output read as two: ``outputs.n`` disagrees)

``bench submit``:

- T10 the same outputs submitted again after their kept copy (``results/outputs/<id>.txt``) was deleted -> fixed (was
  "nothing new to score" and the copy stayed lost: ``show`` said "missing"); the copy is written again
- T11 ``--paper mist:1 --row transformer`` (a SQuAD table) for Quora outputs -> fixed (refused up front, before
  scoring: it was recorded, and the board linked the Quora row to the SQuAD paper row)
- T11b ``--paper mist:1`` without ``--row`` for Quora outputs -> fixed (recorded, then shown under no table: a
  submission naming a table is shown only there, and only on that table's data)
- T12 a submission record naming such a row (resealed, its id remade) -> fixed: the board reads a paper row only on
  the submission's own task and split (:meth:`bench.papers.Table.scores_on`)

Rewriters on forged records:

- T13 ``bench rescore`` of an ``unscored`` record (``--no-score``) whose ``outputs``, ``data``, ``scores``, ``spec``
  or ``rescored`` is of the wrong JSON type, or that names no outputs sha256 -> fixed (AttributeError, TypeError,
  KeyError tracebacks: an unscored record was read with no schema check; it now has a complete one's but scores)
- T14 ``rescore`` of an unscored T01 record -> fixed (it was scored on the prefix and written back ``complete``)
- T15 ``promote`` and T16 ``refile`` of a T01 record -> fixed (refused, nothing written or moved)
- T17 ``refile`` laundering: a record whose config was edited to claim the preset's values, moved to the preset's
  id -> held: the config is the record's claim (the id hashes the spec only) and nothing can re-derive a training;
  refile writes what the record claims, with ``refiled`` naming where it came from

``bench latency --runs`` (the timed outputs against the run's recorded outputs, ``run_references``):

- T18 a whole-split run made to look partial, to skip the comparison -> fixed by T01's rule (refused when read)
- T19 the run's outputs file edited after scoring -> clean (refused, one line, before anything is timed)
- T20 a run stale since int8's ``decode_batch_size`` rule (an int8 record decoded at 64, as the committed one was
  until a47940d; today's preset resolves 1) -> fixed: its model was loaded and timed, and the timed outputs (one at
  a time) could not equal the recorded batched ones (INVALID after the timing); now refused before loading, naming
  the change and the command
- T21 a run of the split's first N examples -> held, by design and named: its outputs are not compared (the meter
  times items of the whole split); the note says so
- T28 ``compare`` and ``latency --runs`` of a record whose status is ``failed`` or ``running`` (no schema check
  applies to it: a spec of the wrong type, no ``data``) -> fixed (TypeError and KeyError tracebacks; now one line:
  only a finished run, :func:`bench.runs.lookup.find_finished`)

int8's ``decode_batch_size`` (resolved to 1 at ``compute_type=int8`` unless set):

- T22 two int8 runs of one model, one with ``--set decode_batch_size=1`` (what the preset resolves anyway) -> fixed:
  the board found the float32 twin of one and "no float32 run" for the other; the twin rule sets the batch aside
- T23 the int8 record made before the rule, beside today's resolution -> held: ``stale_reason`` names
  ``decode_batch_size: 64 -> 1`` (``bench run`` re-runs it; ``refile --set decode_batch_size=64`` pins it)

A hostile mirror through ``fetch --data`` (a pinned file; a local server):

- T24 416 to a resume (the mirror says an earlier try's 3 bytes are whole) -> clean (sha256 refused, nothing kept)
- T25 a redirect to ``ftp://`` -> clean (refused: http and https only)
- T26 the right bytes gzip-encoded (``Content-Encoding: gzip``) -> clean (sha256 refused, nothing kept)
- T27 206 with ``Content-Range: bytes 3-5/6`` to a fresh request -> clean (sha256 refused, nothing kept)

29 probes (T01-T28 and T11b); 20 found a hole, from 9 causes: a record's examples taken from its ``data`` rather
than its spec (T01-T05, T14-T16, T18), a record that names no outputs (T06, T07), outputs checked by their bytes' hash
only (T08), a submission's lost copy (T10), a paper row or table of another task (T11, T11b, T12), an unscored record
read unchecked (T13), a stale run timed as its own model (T20), the twin rule (T22), and a record that is no finished
run given to ``compare`` or ``latency --runs`` (T28). Fixed in the store (:mod:`bench.store.examples`,
:mod:`bench.store.records`), the lookups (:mod:`bench.runs.lookup`), ``submit``, ``latency --runs`` and two board
readers; 6 clean (T09, T19, T24-T27), 3 held (T17, T21 by design, T23).

Left for a later pass: a partial run's timed outputs are never compared (T21); a submission that names a paper row
is shown with that row's architecture speed-up (``run_speed``), which times the harness's model, not the submitted
outputs' one; a submission of the split's references themselves ranks first (no statistic counts outputs equal to
their reference).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from probe_tools import answer as mirror_answer
from probe_tools import raw_mirror
from probe_tools import record_data as _data
from probe_tools import refused as _refused

from bench.api.errors import UserError
from bench.store import kinds
from bench.store.files import StoreError
from bench.store.ids import submission_id
from bench.store.integrity import sealed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
RUN = RESULTS / "fairseq_transformer--quora--test--cpu--s42--b0395e29.json"  # sealed, whole split
COPY = RESULTS / "copy_source--quora--test--cpu--s42--af654a53.json"  # --limit 2000
MIST = RESULTS / "mist_minilm_l6--quora--test--cpu--s42--2acd50eb.json"  # --limit 2000, a trained model
INT8 = RESULTS / "mist_minilm_l6_int8--quora--test--cpu--s42--6272c449.json"  # sealed, an int8 run
NQG = RESULTS / "nqg_du2017--squad_qg--test--external--589acdee.json"  # a --no-copy submission
NQG_OUTPUTS = ROOT.parent / "shared" / "data" / "qg_outputs" / "nqg-du2017-test.txt"


def _outputs(rec: Path) -> bytes:
    return (RESULTS / "outputs" / f"{rec.stem}.txt").read_bytes()


def _folder(tmp_path: Path, data: dict[str, Any], name: str, outputs: bytes | None) -> Path:
    """A results folder holding ``data`` resealed as ``name``.json (and ``outputs`` as its outputs file)."""
    folder = tmp_path / "results"
    (folder / "outputs").mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(sealed(data)), encoding="utf-8")
    if outputs is not None:
        (folder / "outputs" / f"{name}.txt").write_bytes(outputs)
    return folder / f"{name}.json"


def _prefix(rec: Path, n: int) -> tuple[dict[str, Any], bytes]:
    """``rec`` made to say it scored the first ``n`` examples of its split, every field made to fit (a forger's)."""
    from bench.data import load_split
    from bench.runs.evaluation import first_examples

    data = _data(rec)
    split = first_examples(load_split(data["spec"]["task"], data["spec"]["split"]), n)
    text = b"".join(line + b"\n" for line in _outputs(rec).split(b"\n")[:n])
    data["data"].update(n_examples=n, partial=True, split_sha256=split.sha256)
    data["outputs"].update(sha256=hashlib.sha256(text).hexdigest(), n=n)
    data["output_stats"]["n"] = n
    for sc in data["scores"].values():
        sc["n_items"] = min(sc.get("n_items", n), n)
    return data, text


# ---------------------------------------------------------------- T01-T09: data against its spec

def test_a_whole_split_run_made_to_say_it_scored_a_prefix_is_refused() -> None:
    data, _ = _prefix(RUN, 100)
    _refused("run", RUN, data, r"'data\.n_examples' is 100, but its spec \(the whole split of quora/test, 30,000 "
                               r"examples\) scores 30,000")


def test_deep_takes_the_examples_from_the_spec_not_from_data(tmp_path: Path) -> None:
    from bench.data import load_split
    from bench.runs.rederive import rederive_scores
    from bench.store.outputs import StoredRecord

    data, text = _prefix(RUN, 100)
    data["scores"] = {}  # nothing to score: the examples are judged first
    path = _folder(tmp_path, data, RUN.stem, text)
    found = rederive_scores(StoredRecord(data, path), load_split("quora", "test"))
    assert [d.field for d in found] == ["data.split_sha256"]  # was []: the prefix re-derived clean


def test_a_limited_run_whose_data_contradicts_its_limit_is_refused() -> None:
    fewer, _ = _prefix(COPY, 1000)
    _refused("run", COPY, fewer, r"'data\.n_examples' is 1000, but its spec \(--limit 2000 of quora/test, 30,000 "
                                 r"examples\) scores 2,000")
    flipped = _data(COPY)
    flipped["data"]["partial"] = False
    _refused("run", COPY, flipped, r"'data\.partial' is False, but its spec \(--limit 2000 of quora/test\) scores a "
                                   r"part of the split")


@pytest.mark.parametrize("limit", ["x", 0, -5, True], ids=["text", "zero", "negative", "bool"])
def test_a_limit_of_another_form_is_named(limit: Any) -> None:
    from bench.store.ids import run_id_of

    data = _data(COPY)
    data["spec"]["limit"] = limit
    data["run_id"] = run_id_of(data["spec"])  # was accepted under its remade id
    data["outputs"]["path"] = f"results/outputs/{data['run_id']}.txt"
    _refused("run", COPY.with_name(f"{data['run_id']}.json"), data, r"'spec\.limit' must be a positive integer or "
                                                                     r"absent")


def test_compare_refuses_a_prefix_record_before_scoring(tmp_path: Path) -> None:
    from bench.runs.lookup import compare_runs

    data, text = _prefix(RUN, 100)
    folder = _folder(tmp_path, data, RUN.stem, text).parent
    shutil.copy(COPY, folder / COPY.name)
    shutil.copy(RESULTS / "outputs" / f"{COPY.stem}.txt", folder / "outputs" / f"{COPY.stem}.txt")
    with pytest.raises(StoreError, match=r"'data\.n_examples' is 100"):
        compare_runs(RUN.stem, COPY.stem, results_dir=folder, use_cache=False)


@pytest.mark.parametrize("key", ["path", "sha256"])
def test_a_record_that_names_no_outputs_is_refused(key: str) -> None:
    data = _data(RUN)
    del data["outputs"][key]
    _refused("run", RUN, data, rf"'outputs\.{key}' is None: a run record names the outputs it decoded")


def test_promote_refuses_a_run_that_names_no_outputs(tmp_path: Path) -> None:
    from bench.workflows.promote import promote

    data = _data(RUN)
    del data["outputs"]["path"]
    ws = _folder(tmp_path / "ws", data, RUN.stem, None).parent
    with pytest.raises(StoreError, match=r"'outputs\.path' is None"):
        promote(RUN.stem, ws, tmp_path / "evidence")  # was: promoted, sealed again, with no outputs
    assert not (tmp_path / "evidence").exists()


@pytest.mark.parametrize("edit", [lambda b: b"\xef\xbb\xbf" + b, lambda b: b.decode().encode("utf-16"),
                                  lambda b: b.replace(b"how", b"h\xe9w", 1), lambda b: b.replace(b"how", b"h\0w", 1)],
                         ids=["bom", "utf-16", "latin-1", "nul"])
def test_unreadable_outputs_are_refused_at_load_even_with_a_fitting_hash(tmp_path: Path,
                                                                         edit: Callable[[bytes], bytes]) -> None:
    from bench.store.records import load_records

    text = edit(_outputs(COPY))
    data = _data(COPY)
    data["outputs"]["sha256"] = hashlib.sha256(text).hexdigest()  # the bytes' hash: what the load check compared
    folder = _folder(tmp_path, data, COPY.stem, text).parent
    with pytest.raises(StoreError, match=r"byte-order mark|NUL byte|not UTF-8 text") as err:
        load_records(folder)  # was: 1 record, shown by the boards and passing --check
    assert str(err.value).startswith(str(folder / "outputs" / f"{COPY.stem}.txt"))


def test_a_lone_cr_inside_an_output_is_two_outputs(tmp_path: Path) -> None:
    from bench.store.records import load_records

    text = _outputs(COPY).replace(b"how do i overcome ocd", b"how do i\rovercome ocd", 1)
    data = _data(COPY)
    data["outputs"]["sha256"] = hashlib.sha256(text.replace(b"\r", b"\n")).hexdigest()
    with pytest.raises(StoreError, match=r"'outputs\.n' is 2000 but its outputs file .* holds 2001"):
        load_records(_folder(tmp_path, data, COPY.stem, text).parent)


# ---------------------------------------------------------------- T10-T12: submit

def _copied_nqg(tmp_path: Path) -> Path:
    """The committed NQG submission as a kept copy (``--hyp`` without ``--no-copy``), its outputs file deleted."""
    data = _data(NQG)
    data["outputs"].update(copied=True, path=f"results/outputs/{NQG.stem}.txt")
    return _folder(tmp_path, data, NQG.stem, None)


def test_submitting_the_same_outputs_again_restores_their_lost_copy(tmp_path: Path) -> None:
    if not NQG_OUTPUTS.is_file():
        pytest.skip("no shared data")
    from bench.workflows.submit import submit

    record = _copied_nqg(tmp_path)
    kept = record.parent / "outputs" / f"{NQG.stem}.txt"
    before = record.read_bytes()
    rec = submit("nqg_du2017", "squad_qg", "test", NQG_OUTPUTS, results_dir=record.parent)
    assert rec["run_id"] == NQG.stem and record.read_bytes() == before  # nothing scored, the record as it was
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == rec["outputs"]["sha256"]  # was: still missing


def test_submit_refuses_a_paper_row_of_another_tasks_table() -> None:
    from bench.workflows.submit import SubmissionError, check_paper_row

    assert check_paper_row("mist:3", "transformer", "quora", "test") == ("mist:3", "transformer")
    with pytest.raises(SubmissionError, match=r"--row 'transformer' of mist:1 is scored on squad_qg/test, not on "
                                              r"quora/test \(these outputs'\)"):
        check_paper_row("mist:1", "transformer", "quora", "test")
    assert check_paper_row("mist:3", None, "quora", "test") == ("mist:3", None)
    with pytest.raises(SubmissionError, match=r"--paper mist:1 has no column on quora/test"):
        check_paper_row("mist:1", None, "quora", "test")  # was recorded, and shown under no table


def test_the_board_reads_a_submissions_paper_row_on_its_own_task_only() -> None:
    from bench.report.reproduces import paper_rows

    data = _data(NQG)  # squad_qg outputs
    for paper, shown in (("mist:1", ["transformer"]), ("mist:3", [])):  # mist:3 is a Quora table
        data["submission"].update(paper=paper, row="transformer")
        sub, spec = data["submission"], data["spec"]
        data["run_id"] = submission_id(sub["name"], spec["task"], spec["split"], data["outputs"]["sha256"], paper,
                                       "transformer")
        rec = kinds.KINDS["submission"].accept(sealed(data), NQG.with_name(f"{data['run_id']}.json"))
        assert [r.id for _, r in paper_rows(rec)] == shown  # mist:3 was linked


# ---------------------------------------------------------------- T13-T17: rewriters

UNSCORED_EDITS: dict[str, Callable[[dict], None]] = {
    "outputs-text": lambda d: d.__setitem__("outputs", "x"),
    "data-list": lambda d: d.__setitem__("data", []),
    "scores-list": lambda d: d.__setitem__("scores", []),
    "spec-text": lambda d: d.__setitem__("spec", "x"),
    "rescored-text": lambda d: d.__setitem__("rescored", "x"),
    "no-outputs-sha": lambda d: d["outputs"].pop("sha256"),
}


@pytest.mark.parametrize("name", sorted(UNSCORED_EDITS))
def test_rescore_of_a_malformed_unscored_record_is_one_line(tmp_path: Path, name: str) -> None:
    from bench.runs.rescore import rescore

    data = _data(COPY)
    data.update(status="unscored", scores={})
    UNSCORED_EDITS[name](data)
    path = _folder(tmp_path, data, COPY.stem, _outputs(COPY))
    before = path.read_bytes()
    with pytest.raises(UserError) as err:
        rescore(path, say=lambda _m: None)  # was: AttributeError / TypeError / KeyError
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)
    assert path.read_bytes() == before


def test_rescore_of_an_unscored_prefix_record_writes_nothing(tmp_path: Path) -> None:
    from bench.runs.rescore import rescore

    data, text = _prefix(RUN, 100)
    data.update(status="unscored", scores={})
    path = _folder(tmp_path, data, RUN.stem, text)
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"'data\.n_examples' is 100"):
        rescore(path, say=lambda _m: None)  # was: scored on the prefix and written back complete
    assert path.read_bytes() == before


def test_promote_and_refile_refuse_a_prefix_record(tmp_path: Path) -> None:
    from bench.workflows.promote import promote
    from bench.workflows.refile import refile

    data, text = _prefix(RUN, 100)
    ws = _folder(tmp_path / "ws", data, RUN.stem, text).parent
    with pytest.raises(StoreError, match=r"'data\.n_examples' is 100"):
        promote(RUN.stem, ws, tmp_path / "evidence")
    assert not (tmp_path / "evidence").exists()
    listing = sorted(p.name for p in ws.rglob("*"))
    with pytest.raises(StoreError, match=r"'data\.n_examples' is 100"):
        refile(RUN.stem, {"beam": 1}, [], ws)
    assert sorted(p.name for p in ws.rglob("*")) == listing


def test_a_records_config_is_its_claim_compared_with_the_code() -> None:
    """T17, held: refile checks ``--set`` against the record's config (``config_value``), which only the code's own
    resolution checks: an edited config makes the record stale (named), never a record of other outputs."""
    from bench.runs.spec import RunSpec
    from bench.runs.staleness import setting_changes
    from bench.store.records import config_value

    rec = json.loads(MIST.read_text(encoding="utf-8"))
    spec = RunSpec.from_json(rec["spec"])
    assert setting_changes(rec, spec) == []
    rec["system"]["config"]["decode_batch_size"] = 7  # a forger's claim
    assert config_value(rec, "decode_batch_size") == 7  # what `refile --set decode_batch_size=7` would restate
    assert setting_changes(rec, spec) == [("decode_batch_size", 7, 64)]  # and what staleness names


# ---------------------------------------------------------------- T18-T21: bench latency --runs

@pytest.fixture()
def runs_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    (folder / "outputs").mkdir(parents=True)
    for rec in (RUN, COPY, INT8, MIST):
        shutil.copy(rec, folder / rec.name)
        shutil.copy(RESULTS / "outputs" / f"{rec.stem}.txt", folder / "outputs" / f"{rec.stem}.txt")
    return folder


def test_a_whole_split_run_cannot_be_made_partial_to_skip_the_comparison(runs_folder: Path) -> None:
    from bench.workflows.trained_latency import resolve_runs

    data, text = _prefix(RUN, 100)
    _folder(runs_folder.parent, data, RUN.stem, text)
    with pytest.raises(StoreError, match=r"'data\.n_examples' is 100"):
        resolve_runs([RUN.stem], runs_folder)


def test_a_runs_edited_outputs_stop_the_timing_in_one_line(runs_folder: Path) -> None:
    from bench.runs.lookup import RunLookupError
    from bench.workflows.trained_latency import resolve_runs, run_references

    runs = resolve_runs([RUN.stem], runs_folder)
    out = runs_folder / "outputs" / f"{RUN.stem}.txt"
    out.write_bytes(out.read_bytes().replace(b"how", b"who", 1))
    with pytest.raises(RunLookupError, match=r"sha256 differs from its record"):
        run_references(runs, None, lambda _m: None)


def test_a_stale_int8_run_is_refused_before_its_model_is_loaded(runs_folder: Path) -> None:
    from bench.runs.spec import RunSpec
    from bench.runs.staleness import stale_reason
    from bench.workflows.trained_latency import TrainedRunError, load_trained, resolve_runs

    rec = _data(INT8)
    rec["system"]["config"]["decode_batch_size"] = 64  # decoded batched, as int8 runs were before the rule
    assert stale_reason(rec, RunSpec.from_json(rec["spec"])) == (  # T23: held, named
        "made with other settings than the cpu preset resolves to today: decode_batch_size: 64 -> 1")
    _folder(runs_folder.parent, rec, INT8.stem, None)  # its outputs stay the copied ones (their hash is unchanged)
    (run,) = resolve_runs([INT8.stem], runs_folder)
    with pytest.raises(TrainedRunError, match=r"decode_batch_size: 64 -> 1, so the model timed would not decode as "
                                              r"the run did; run `bench run --system mist_minilm_l6_int8 .* --force`"):
        load_trained(run, "cpu", None, lambda _m: None)


def test_a_partial_runs_outputs_are_named_not_compared(runs_folder: Path) -> None:
    from bench.workflows.trained_latency import resolve_runs, run_references

    said: list[str] = []
    assert run_references(resolve_runs([MIST.stem], runs_folder), None, said.append) == {}
    assert said and "decoded 2000 of the split's 30000 examples" in said[0]


@pytest.mark.parametrize("edit", [lambda d: d.update(status="failed", spec="x"),
                                  lambda d: (d.update(status="running"), d.pop("data"))], ids=["failed", "running"])
def test_a_record_that_is_no_finished_run_is_one_line_for_compare_and_latency(runs_folder: Path,
                                                                             edit: Callable[[dict], Any]) -> None:
    from bench.runs.lookup import RunLookupError, compare_runs
    from bench.workflows.trained_latency import resolve_runs

    data = _data(MIST)
    edit(data)
    _folder(runs_folder.parent, data, MIST.stem, None)
    for attempt in (lambda: compare_runs(MIST.stem, COPY.stem, results_dir=runs_folder, use_cache=False),
                    lambda: resolve_runs([MIST.stem], runs_folder)):
        with pytest.raises(RunLookupError, match=r"its status is '(failed|running)'; only a finished run"):
            attempt()  # was: TypeError / KeyError tracebacks (a record of another status has no schema check)


# ---------------------------------------------------------------- T22: int8 twins

def test_an_int8_run_with_its_resolved_batch_set_finds_its_twin() -> None:
    from bench.report.compute_twins import fp32_twin

    model = {"training_key": "k", "workdir": ".cache/runs/m--quora--cpu--s42--k"}
    spec = {"task": "quora", "split": "test", "budget": "cpu", "seed": 42, "overrides": {}}
    fp32 = {"run_id": "m--a", "spec": {**spec, "system": "m"}, "model": model, "system": {"config": {}}}
    int8 = {"run_id": "m_int8--b", "spec": {**spec, "system": "m_int8"}, "model": model,
            "system": {"config": {"compute_type": "int8", "decode_batch_size": 1}}}
    pinned = {**int8, "run_id": "m_int8--c", "spec": {**int8["spec"], "overrides": {"decode_batch_size": 1}}}
    assert fp32_twin(int8, [fp32]) is fp32
    assert fp32_twin(pinned, [fp32]) is fp32  # was None: "no float32 run of the same model recorded"
    beam = {**pinned, "spec": {**int8["spec"], "overrides": {"beam": 4}}}
    assert fp32_twin(beam, [fp32]) is None  # another decoding setting still is not the twin


# ---------------------------------------------------------------- T24-T27: a hostile mirror through fetch --data

PINNED = b"ABCDEF" * 20  # gzip makes it smaller: the cap (its pinned size) does not refuse the encoded body


ZIPPED = gzip.compress(PINNED)
HOSTILE: dict[str, tuple[Callable[[int], bytes], str]] = {
    "416 to a resume": (lambda p: b"HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n",
                        "the project pins"),
    "redirect to ftp": (lambda p: f"HTTP/1.1 302 Found\r\nLocation: ftp://127.0.0.1:{p}/x\r\nContent-Length: 0\r\n"
                                  "\r\n".encode(), "redirect to ftp:// URL"),
    "gzip-encoded": (lambda p: b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                               % (len(ZIPPED), ZIPPED), "the project pins"),
    "206 to a fresh request": (lambda p: b"HTTP/1.1 206 Partial\r\nContent-Range: bytes 3-5/6\r\nContent-Length: 3"
                                         b"\r\n\r\nDEF", "the project pins"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_mirror_keeps_nothing_that_is_not_the_pin(tmp_path: Path, name: str) -> None:
    from bench.data.public_sources import Output, Source
    from bench.workflows.fetch_data import fetch_data

    answer, said = HOSTILE[name]
    pin = hashlib.sha256(PINNED).hexdigest()
    source = Source("probe", "probe", "example.org", ("f.txt",), (Output("probe/f.txt", pin, size=len(PINNED)),),
                    sha256=pin, size=len(PINNED))
    part = tmp_path / "probe" / "f.txt.part"
    if "resume" in name:
        part.parent.mkdir(parents=True)
        part.write_bytes(b"abc")  # an earlier try's 3 bytes
    port, server = raw_mirror(mirror_answer(answer))
    base = f"http://127.0.0.1:{port}"
    try:
        (row,) = fetch_data(tmp_path, [source], mirror=base)
    finally:
        server.close()
    assert row.status == "failed" and said in row.detail and "\n" not in row.detail, row
    assert not (tmp_path / "probe" / "f.txt").exists()
    assert not part.exists() or "ftp" in name
