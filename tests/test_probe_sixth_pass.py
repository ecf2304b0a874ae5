"""#57, a sixth hostile pass (after the fifth pass's NaN, caps and stated-threshold fixes), aimed at what the five
before it did not reach: the new ``bench latency --runs`` (a latency record's ``spec.runs`` and the board's trained
speed-up), records that are valid alone but contradict what they claim to be, ``--set`` values, and the pinned
legacy manifest. Every probe is a test here but where it says otherwise; victims and sentinels outside the tree
(``tmp_path``). The table (id: what -> result):

A record's id against what the record says it is (a fresh digest: the digest is a checksum anyone recomputes):

- S01 a sealed run record's ``spec.system`` set to ``copy_source`` under its ``fairseq_transformer--…`` id, resealed:
  the transformer's scores were read as copy_source's -> fixed (an id of the harness's form is its content's:
  :mod:`bench.store.ids`, held by :meth:`bench.store.sealed.SealedStore.check` for every kind with such an id)
- S02 its ``spec.seed``, S03 its ``spec.overrides`` edited under the old id -> fixed (same rule)
- S04 a calibration point's spec edited under its id -> fixed (same rule: points are run records)
- S05 a submission's ``submission.name`` or paper ``row`` edited under its id, S06 its ``outputs.sha256`` -> fixed
  (a submission's id hashes its name, task, split, outputs and row)
- S07 a latency record's ``spec.task`` set to squad_qg under its ``quora--…`` id, S08 its ``spec.weights`` relabelled,
  S09 its ``created`` moved (the newest record is the one shown) -> fixed (its id is task, split, budget, weights,
  mode, time and spec hash)
- S10 a sweep record's ``spec.budget`` edited under its id -> fixed
- S11 the writers' formulas (``RunSpec.run_id``, ``bench submit``, the latency and sweep records) against the store's
  -> a test keeps them equal (run and submission ids call the store's formula; the latency ones are the lead's code)
- S12 a record under an id of no derived form (a test's ``"a"``) -> held: it names no record the harness made, so it
  takes none over; it is a claim of its own, as a record forged under a fresh derived id is (``--deep`` re-derives
  both alike)

A trained timing (``bench latency --runs``) and the run row it is shown on:

- S13 a random-weights record relabelled ``weights: trained`` with ``spec.runs`` added, its overrides still saying
  ``weights: random`` -> fixed (refused: was accepted, and the board showed the architecture's untrained speed-up on
  the run's row as "this run's model")
- S14 ``spec.runs`` pointing fairseq_nat at a copy_source run -> fixed (was shown: copy_source "13.99×, this run's
  model"; a run id must name the system and the record's task, split and budget)
- S15 ``spec.runs`` naming a run of another budget (cpu runs in a paper-budget record) -> fixed (same rule)
- S16 one run named for two systems -> fixed
- S17 ``weights: trained`` with no ``spec.runs`` -> fixed
- S18 a timed system with no run in ``spec.runs`` -> fixed
- S19 the board given a latency record outside the store whose ``spec.runs`` names another system's run -> fixed
  (:func:`bench.report.reproduces._trained_speed` also ties system, task, split and budget to the run shown)
- S20 ``--runs ID,ID`` -> fixed (was "ID and ID are both runs of X"; now "names ID twice")
- S21 ``--runs`` of a reference baseline's run (copy_source) -> fixed (was "the code now resolves this run's
  training settings to another model … run `bench run …` for today's model": no such model exists)
- S22 ``--runs ../../etc/passwd`` -> clean (the identifier rule); S23 a short id matching two runs -> clean (both
  named); S24 ``--runs ""`` and ``--runs ,`` -> clean; S25 ``--runs /elsewhere/x.json`` -> clean ("no record");
  a record path the user gives is the user's, and is read through the sealed path
- S26 a run record's ``model.workdir`` ``../../x``, absolute, or a link -> clean by reading, not kept (building the
  system imports fairseq): the model is looked up where the code resolves the spec, and the record's workdir is
  compared by its last name only, never opened
- S27 a trained speed-up's source line with a device of backticks and ``<img onerror>`` through the board's details
  -> clean (no tag: the report grammar's escaper)

``--set`` (every command's one reading, :func:`bench.api.overrides.parse_override`):

- S28 ``--set steps=[[[…]]]`` (60,000 deep) -> fixed (a RecursionError traceback)
- S29 ``--set x=NaN``, ``Infinity``, ``-Infinity``, ``1e999``, ``[1,NaN]``, ``{"b":1e400}`` -> fixed (refused up
  front: the spec keeps every override, and every record refuses NaN: a run would have trained before its writer
  refused it; a system's own range check caught some, not all)
- S30 a 20,000-character ``--set`` value -> fixed (at most 10,000: a setting, not a document)
- S31 ``--set x=nan`` (text), ``x="NaN"``, ``x=-0.0`` -> clean (a word, a string, a number)

The pinned legacy manifest (matching is by the content's canonical JSON):

- S32 a pinned legacy record re-indented with its keys in another order -> clean (accepted: the same content)
- S33 its strings written with ``\\u`` escapes -> clean (accepted: the same content)
- S34 an integer written as a float (30000 -> 30000.0), S35 0.0 written as -0.0 -> clean (refused: other content)
- S36 a forged record without a digest added to results/ with its entry added to legacy.json -> fixed: the guard
  allowed the list to grow back to 116 entries (now at most today's 95); the manifest is code, reviewed as code

Outputs and promotion:

- S37 an outputs file's last newline dropped or a BOM added -> clean (refused by its sha256); its line endings made
  CRLF, or one made a lone CR -> clean (the same lines: outputs are read with universal newlines, by design, so a
  CRLF checkout reads as written; the CRLF case is kept as a test)
- S38 an outputs file swapped for another run's, with ``outputs.sha256`` and ``n`` edited and resealed -> held: the
  scores no longer follow from the outputs, which is what ``--deep`` re-derives (a submission's id hashes its
  outputs: S06)
- S39 ``bench promote`` of a workspace run whose spec was edited under its id and resealed -> fixed (S01's rule: was
  copied into results/ and sealed again by the harness's own writer)
- S40 ``bench promote`` of a workspace run whose outputs file is a link out of the workspace -> clean (refused,
  nothing written)

The seal's own field and a record's place:

- S41 ``digest`` null, empty, upper-case, ``SHA256:``-prefixed, with a leading space, or a list, on a sealed and on a
  pinned legacy record -> clean (refused: a digest is ``sha256:<hex>`` exactly; a null never makes legacy)
- S42 a pinned legacy test-split run copied into ``results/calibration/`` -> held: it reads as a calibration point
  (pinned by content, wherever it lies), and no summary names it, so nothing shows it (a summary naming it is
  held to its split and system by the third pass's cross-check)

Left for a later pass: a trained timing's output hashes are not compared with the run's recorded outputs (the tie
that would prove the timed model is the run's), and ``bench compare``/``submit`` were not probed further here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from probe_tools import bench_cli as _bench
from probe_tools import one_line as _one_line
from probe_tools import record_data as _data
from probe_tools import refused as _refused

from bench.api.errors import UserError
from bench.store import kinds
from bench.store.files import StoreError
from bench.store.ids import latency_record_id, run_id_of, submission_id, sweep_record_id
from bench.store.integrity import sealed

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INCLUDE = ROOT / "examples" / "bench_example_plugin" / "bench_include.py"
RUN = RESULTS / "fairseq_transformer--quora--test--cpu--s42--b0395e29.json"
COPY = RESULTS / "copy_source--quora--test--cpu--s42--af654a53.json"
LEVT = RESULTS / "fairseq_levt--quora--test--cpu--s42--3707e74f.json"
LEGACY = RESULTS / "bert2bert_minilm_l6--quora--test--cpu--s42--2a4e9a0f.json"
POINT = RESULTS / "calibration" / "bert2bert_minilm_l6--quora--dev--cpu--s42--61dbc594.json"
SUBMISSION = RESULTS / "convs2s_xsum--xsum--test-refs--external--d7438ac2.json"
PAIRED = RESULTS / "latency" / "quora--test--paper--random--forced--20261129T135536--c4499950.json"
SWEEP = RESULTS / "sweep" / "quora--test--paper--sweep--20261129T104545--a98489b8.json"
PAYLOAD = "<img src=x onerror=alert(1)>"


# ---------------------------------------------------------------- S01-S12: an id is its content's

RUN_EDITS = [
    ("system", "copy_source"),
    ("seed", 7),
    ("overrides", {"beam": 5}),
]


@pytest.mark.parametrize("field, value", RUN_EDITS, ids=[f for f, _ in RUN_EDITS])
def test_a_run_spec_edited_under_its_id_is_refused(field: str, value: Any) -> None:
    data = _data(RUN)
    data["spec"][field] = value
    _refused("run", RUN, data, r"'run_id' is 'fairseq_transformer--quora--test--cpu--s42--b0395e29', but what the "
                               r"record says it is gives the id '.*--[0-9a-f]{8}'")


def test_a_calibration_point_spec_edited_under_its_id_is_refused() -> None:
    data = _data(POINT)
    data["spec"]["seed"] = 43
    _refused("calibration point", POINT, data, r"'run_id' is .*gives the id 'bert2bert_minilm_l6--quora--dev--cpu--s43")


@pytest.mark.parametrize("where, value", [(("submission", "name"), "ptgen_xsum"), (("submission", "row"), "x"),
                                           (("outputs", "sha256"), "0" * 64)], ids=["name", "row", "outputs"])
def test_a_submission_edited_under_its_id_is_refused(where: tuple[str, str], value: Any) -> None:
    data = _data(SUBMISSION)
    data[where[0]][where[1]] = value
    if where[1] == "row":
        data["submission"]["paper"] = "mist"
    with pytest.raises(StoreError) as err:
        kinds.KINDS["submission"].accept(sealed(data), SUBMISSION)
    assert str(err.value).startswith(f"{SUBMISSION}: ")  # the id rule, or (outputs) the outputs' own check first


LATENCY_EDITS = [
    ("spec.task", lambda d: d["spec"].__setitem__("task", "squad_qg")),
    ("spec.weights", lambda d: d["spec"].__setitem__("weights", "as-configured")),
    ("created", lambda d: d.__setitem__("created", "2026-11-30T13:55:36+00:00")),
]


@pytest.mark.parametrize("what, edit", LATENCY_EDITS, ids=[w for w, _ in LATENCY_EDITS])
def test_a_latency_record_edited_under_its_id_is_refused(what: str, edit: Any) -> None:
    data = _data(PAIRED)
    edit(data)
    _refused("latency", PAIRED, data, r"'latency_id' is 'quora--test--paper--random--forced--20261129T135536--"
                                      r"c4499950', but what the record says it is gives the id")


def test_a_sweep_edited_under_its_id_is_refused() -> None:
    data = _data(SWEEP)
    data["spec"]["budget"] = "cpu"
    _refused("sweep", SWEEP, data, r"'sweep_id' is .*gives the id 'quora--test--cpu--sweep--")


def test_the_writers_use_the_stores_id_formulas() -> None:
    from bench.runs.spec import RunSpec
    from bench.workflows.submit import submission_id as submit_id

    rec = _data(RUN)
    assert RunSpec.from_json(rec["spec"]).run_id == run_id_of(rec["spec"]) == rec["run_id"]
    sub = _data(SUBMISSION)
    args = (sub["submission"]["name"], sub["spec"]["task"], sub["spec"]["split"], sub["outputs"]["sha256"], None, None)
    assert submit_id(*args) == submission_id(*args) == sub["run_id"]
    assert latency_record_id(_data(PAIRED)) == PAIRED.stem and sweep_record_id(_data(SWEEP)) == SWEEP.stem


def test_the_latency_writer_names_a_record_as_the_store_derives_it() -> None:
    from bench.latency.record import LatencySpec

    rec = _data(PAIRED)
    spec = LatencySpec(**{**rec["spec"], "systems": tuple(rec["spec"]["systems"])})
    assert spec.to_json() == rec["spec"]  # the record's spec is the writer's: build_record's id formula is the store's
    mode = "forced" if spec.length_forced else "free"
    stamp = rec["created"].replace("-", "").replace(":", "").split("+")[0]
    assert f"{spec.task}--{spec.split}--{spec.budget}--{spec.weights}--{mode}--{stamp}--{spec.digest()}" \
        == latency_record_id(rec)


# ---------------------------------------------------------------- S13-S27: a trained timing and its run's row

CPU_RUNS = {"fairseq_transformer": RUN.stem, "fairseq_levt": LEVT.stem}


def _trained(runs: dict[str, str], **spec: Any) -> dict[str, Any]:
    """The committed paired record, relabelled a timing of ``runs`` (its id made again, so only the claim is tested)."""
    data = _data(PAIRED)
    data["spec"].update({"weights": "trained", "runs": runs, **spec})
    data["latency_id"] = latency_record_id(data)
    return data


def _trained_problem(data: dict[str, Any], said: str) -> None:
    _refused("latency", PAIRED, data, said)


def test_a_random_weights_record_relabelled_trained_is_refused() -> None:
    runs = {s: f"{s}--quora--test--paper--s42--0123abcd" for s in _data(PAIRED)["spec"]["systems"]}
    _trained_problem(_trained(runs), r"'spec\.overrides\.\w+\.weights' is 'random' in a record of the runs' trained")


def test_spec_runs_naming_another_systems_run_is_refused() -> None:
    _trained_problem(_trained({"fairseq_nat": COPY.stem}, budget="cpu"),
                     r"'spec\.runs\.fairseq_nat' is 'copy_source--.*', not a run of fairseq_nat on the record's task")


def test_spec_runs_naming_a_run_of_another_budget_is_refused() -> None:
    _trained_problem(_trained(CPU_RUNS), r"'spec\.runs\.fairseq_transformer' is .*, not a run of fairseq_transformer "
                                         r"on the record's task, split and budget \(fairseq_transformer--quora--test--"
                                         r"paper--")


def test_the_store_ties_spec_runs_to_the_timed_systems() -> None:
    from bench.store.paired import runs_problems

    spec = {"systems": ["a", "b"], "task": "quora", "split": "test", "budget": "cpu", "weights": "trained",
            "runs": {"a": "a--quora--test--cpu--s42--12345678", "b": "b--quora--test--cpu--s42--12345678"},
            "overrides": {}}
    assert list(runs_problems(spec)) == []
    cases = [
        ({**spec, "runs": {"a": spec["runs"]["a"], "b": spec["runs"]["a"]}}, "names one run for two systems"),
        ({k: v for k, v in spec.items() if k != "runs"}, "names no runs whose models were timed"),
        ({**spec, "runs": {"a": spec["runs"]["a"]}}, "names no run for b"),
        ({**spec, "runs": {**spec["runs"], "b": "b--quora--dev--cpu--s42--12345678"}}, "not a run of b on"),
        ({**spec, "overrides": {"a": {"weights": "random"}}}, "is 'random' in a record of the runs' trained"),
    ]
    for bad, why in cases:
        assert any(why in p.what for p in runs_problems(bad)), (bad, why)


def test_the_board_shows_a_trained_speedup_only_on_the_run_it_was_timed_as() -> None:
    from bench.report.reproduces import run_speed
    from bench.store.records import read_record

    forged = _trained({"fairseq_transformer": RUN.stem, "fairseq_nat": COPY.stem})  # not through the store
    copy_rec, base = read_record(COPY), read_record(RUN)
    shown = run_speed(copy_rec, [forged])
    assert shown is None or not shown.own, shown  # was: copy_source "13.99×, this run's model"
    forged["spec"]["budget"] = "paper"  # the transformer run is a cpu run: a paper-budget timing is not its own
    shown = run_speed(base, [forged])
    assert shown is None or not shown.own, shown


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("sixth") / "results"
    (results / "outputs").mkdir(parents=True)
    for rec in (RUN, LEVT, COPY):
        (results / rec.name).write_bytes(rec.read_bytes())
        (results / "outputs" / f"{rec.stem}.txt").write_bytes((RESULTS / "outputs" / f"{rec.stem}.txt").read_bytes())
    return results


@pytest.mark.parametrize("given, said", [
    (f"{RUN.stem},{RUN.stem}", f"--runs names {RUN.stem} twice; give each run once."),
    (COPY.stem, "is a run of the reference baseline copy_source, which has no trained model to time"),
    ("../../etc/passwd", "run id is '../../etc/passwd', not an identifier"),
    ("fairseq_", "'fairseq_' names 2 runs (short ids 3707e74f, b0395e29)"),
    ("", "--runs: give at least one run id"),
    (",", "--runs: give at least one run id"),
    ("/nonexistent/elsewhere.json", "no record /nonexistent/elsewhere.json"),
], ids=["twice", "reference", "path", "short-two", "empty", "comma", "json-path"])
def test_runs_that_cannot_be_timed_are_one_line(runs_folder: Path, tmp_path: Path, given: str, said: str) -> None:
    from bench.workflows.trained_latency import TrainedRunError, resolve_runs

    with pytest.raises(UserError) as err:
        resolve_runs([r.strip() for r in given.split(",") if r.strip()], runs_folder)
    assert said in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, TrainedRunError) or "run id" in said or "names 2" in said or "no record" in said


def test_a_trained_source_line_renders_no_markup() -> None:
    from markdown_it import MarkdownIt

    from bench.report import html_escape, md_escape

    source = f"this run's model vs run `{RUN.stem}` (`fairseq_transformer`) on {PAYLOAD} `x`{PAYLOAD}\\`{PAYLOAD}"
    md = MarkdownIt("commonmark", {"html": True})
    for rendered in (html_escape.inline(f"speed-up 2.00×: {source}"),
                     md.render(md_escape.line(f"speed-up 2.00×: {source}"))):
        assert "<img" not in rendered, rendered


# ---------------------------------------------------------------- S28-S31: --set

@pytest.mark.parametrize("value, said", [
    ("[" * 60_000 + "]" * 60_000, "over 10,000"),
    ("[" * 4_000 + "]" * 4_000, "nested too deeply"),
    ("NaN", "NaN is not a finite number"),
    ("Infinity", "Infinity is not a finite number"),
    ("-Infinity", "-Infinity is not a finite number"),
    ("1e999", "overflows to infinity"),
    ("[1,NaN]", "NaN is not a finite number"),
    ('{"b":1e400}', "overflows to infinity"),
    ("x" * 20_000, "over 10,000"),
], ids=["deep-long", "deep", "nan", "inf", "-inf", "1e999", "list-nan", "dict-inf", "long"])
def test_a_set_value_no_record_could_hold_is_refused_up_front(value: str, said: str) -> None:
    from bench.api.overrides import parse_override

    with pytest.raises(ValueError) as err:
        parse_override(f"steps={value}")
    assert said in str(err.value) and len(str(err.value)) < 400


def test_set_words_and_numbers_stay_as_they_were() -> None:
    from bench.api.overrides import parse_override

    assert parse_override("x=nan") == ("x", "nan")
    assert parse_override('x="NaN"') == ("x", "NaN")
    assert parse_override("x=-0.0") == ("x", -0.0)
    assert parse_override('x={"a": [1, 2.5]}') == ("x", {"a": [1, 2.5]})


def test_a_deeply_nested_set_is_one_line_from_the_command(tmp_path: Path) -> None:
    out = _bench("run", "--system", "fairseq_transformer", "--task", "quora", "--limit", "2", "--results-dir",
                 str(tmp_path / "results"), "--set", "steps=" + "[" * 4_000 + "]" * 4_000, tmp_path=tmp_path)
    assert "nested too deeply" in _one_line(out)
    assert not (tmp_path / "results").exists()


# ---------------------------------------------------------------- S32-S36: the legacy manifest

def _legacy(text: str, tmp_path: Path) -> Any:
    from bench.api import reading
    from bench.api.textfile import RECORD

    copy_file = tmp_path / LEGACY.name
    copy_file.write_text(text, encoding="utf-8")
    return kinds.KINDS["run"].accept(reading.read_json(copy_file, limits=RECORD), LEGACY)


def test_a_legacy_record_reordered_and_reindented_is_the_same_record(tmp_path: Path) -> None:
    data = json.loads(LEGACY.read_text(encoding="utf-8"))
    assert "digest" not in data
    shuffled = dict(reversed(list(data.items())))
    assert _legacy(json.dumps(shuffled, indent=7), tmp_path)["run_id"] == LEGACY.stem
    assert _legacy(json.dumps(data, ensure_ascii=True).replace('"run_id"', '"\\u0072un_id"'), tmp_path)


@pytest.mark.parametrize("old, new", [('"n_examples": 30000', '"n_examples": 30000.0'),
                                      ('"examples_per_s": 0.0', '"examples_per_s": -0.0')], ids=["float", "-0.0"])
def test_a_legacy_record_with_a_number_rewritten_is_not_pinned(tmp_path: Path, old: str, new: str) -> None:
    text = LEGACY.read_text(encoding="utf-8")
    assert old in text
    with pytest.raises(StoreError, match=r"digest|legacy|must be an integer"):
        _legacy(text.replace(old, new), tmp_path)


def test_the_legacy_list_cannot_grow() -> None:
    from bench.store.legacy import pinned

    assert len(pinned()) <= 95  # today's size: a forged record pinned by a new entry is a change this test names


# ---------------------------------------------------------------- S37-S40: outputs and promotion

@pytest.mark.parametrize("edit", [lambda b: b.rstrip(b"\n"), lambda b: b"\xef\xbb\xbf" + b],
                         ids=["no-last-newline", "bom"])
def test_an_outputs_file_rewritten_in_another_encoding_is_refused(runs_folder: Path, tmp_path: Path,
                                                                  edit: Any) -> None:
    from bench.store.records import read_record

    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    (results / RUN.name).write_bytes(RUN.read_bytes())
    (results / "outputs" / f"{RUN.stem}.txt").write_bytes(edit((runs_folder / "outputs" / f"{RUN.stem}.txt")
                                                               .read_bytes()))
    from bench.runs.lookup import RunLookupError, outputs_of

    with pytest.raises((RunLookupError, StoreError)):  # a BOM: refused when the record is read (seventh pass, T08)
        outputs_of(read_record(results / RUN.name))


def test_an_outputs_file_checked_out_with_crlf_is_the_same_outputs(runs_folder: Path, tmp_path: Path) -> None:
    """A CRLF checkout (git's autocrlf) holds the same lines: read and hashed as written, by design."""
    from bench.runs.lookup import outputs_of
    from bench.store.records import read_record

    results = tmp_path / "results"
    (results / "outputs").mkdir(parents=True)
    (results / RUN.name).write_bytes(RUN.read_bytes())
    original = (runs_folder / "outputs" / f"{RUN.stem}.txt").read_bytes()
    (results / "outputs" / f"{RUN.stem}.txt").write_bytes(original.replace(b"\n", b"\r\n"))
    assert outputs_of(read_record(results / RUN.name)) == outputs_of(read_record(runs_folder / RUN.name))


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "outputs").mkdir(parents=True)
    (ws / RUN.name).write_bytes(RUN.read_bytes())
    (ws / "outputs" / f"{RUN.stem}.txt").write_bytes((RESULTS / "outputs" / f"{RUN.stem}.txt").read_bytes())
    return ws


def test_promote_refuses_a_workspace_run_edited_under_its_id(tmp_path: Path) -> None:
    from bench.workflows.promote import PromoteError, promote

    ws = _workspace(tmp_path)
    data = _data(RUN)
    data["spec"]["system"] = "copy_source"
    (ws / RUN.name).write_text(json.dumps(sealed(data)), encoding="utf-8")
    with pytest.raises((PromoteError, StoreError), match=r"'run_id' is .*but what the record says it is"):
        promote(RUN.stem, ws, tmp_path / "evidence")
    assert not (tmp_path / "evidence").exists()


def test_promote_refuses_outputs_linked_out_of_the_workspace(tmp_path: Path) -> None:
    from bench.workflows.promote import promote

    ws = _workspace(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes((ws / "outputs" / f"{RUN.stem}.txt").read_bytes())
    (ws / "outputs" / f"{RUN.stem}.txt").unlink()
    (ws / "outputs" / f"{RUN.stem}.txt").symlink_to(victim)
    with pytest.raises(UserError, match="link"):
        promote(RUN.stem, ws, tmp_path / "evidence")
    assert not (tmp_path / "evidence" / RUN.name).exists()


def test_a_record_copied_for_a_probe_is_unchanged() -> None:
    """The committed records the probes copy are read as they are (the probes edit copies only)."""
    for path in (RUN, COPY, LEVT, LEGACY, POINT, SUBMISSION, PAIRED, SWEEP):
        kind = kinds.kind_of(RESULTS, path)
        assert kind is not None and kind.read_in(RESULTS, path)
    assert copy.deepcopy(_data(RUN))["run_id"] == RUN.stem


# ---------------------------------------------------------------- S41-S42: the seal's own field, a record's place

@pytest.mark.parametrize("value", [None, "", "upper", "SHA256:", " ", ["list"]],
                         ids=["null", "empty", "upper-hex", "upper-prefix", "leading-space", "list"])
def test_a_digest_of_another_form_is_refused_even_on_a_legacy_record(value: Any) -> None:
    for path in (RUN, LEGACY):
        data = json.loads(path.read_text(encoding="utf-8"))
        real = data.get("digest") or "sha256:" + "0" * 64
        data["digest"] = {"upper": real.upper(), "SHA256:": real.replace("sha256:", "SHA256:"),
                          " ": " " + real, ("list",): [real]}.get(value if not isinstance(value, list) else ("list",),
                                                                 value)
        with pytest.raises(StoreError, match=r"'digest' must be 'sha256:<hex>'"):
            kinds.KINDS["run"].accept(data, path)


def test_a_test_split_run_copied_into_calibration_is_shown_by_no_summary(tmp_path: Path) -> None:
    from bench.store.calibration import load_summaries

    folder = tmp_path / "results" / "calibration"
    (folder / "outputs").mkdir(parents=True)
    (folder / LEGACY.name).write_bytes(LEGACY.read_bytes())
    (folder / "outputs" / f"{LEGACY.stem}.txt").write_bytes((RESULTS / "outputs" / f"{LEGACY.stem}.txt").read_bytes())
    assert kinds.read(tmp_path / "results", folder / LEGACY.name)["spec"]["split"] == "test"
    assert load_summaries(tmp_path / "results") == []
