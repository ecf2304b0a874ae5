"""The run record (``results/<run_id>.json``): one module writes it and reads it.

:class:`RunRecord` is the record as written by :func:`bench.runs.pipeline.execute` (its fields are the
top-level keys of the JSON, documented field by field in ``docs/run-record.md``, which a test keeps
in step with this class). :func:`read_record` / :func:`load_records` are the only readers: they
check the fields the renderers, exports and lookups use, so a malformed record stops a report with
the file name and the broken field instead of silently dropping a number. They also check that the
outputs file a record names still hashes to the sha256 it was scored with (:func:`check_outputs`):
a table, an export or the "already complete" test of ``bench run`` must not stand on edited outputs.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.names import identifier_problem
from bench.api.textfile import not_a_file
from bench.store.examples import examples_problem
from bench.store.files import StoreError, is_number, write_json
from bench.store.ids import run_record_id
from bench.store.integrity import DIGEST_FIELD, Problem, digest_problem, record_problems, sealed, unsealed
from bench.store.outputs import outputs_location
from bench.store.paths import run_record_file
from bench.store.sealed import SealedStore, name_values

SCHEMA_VERSION = 1
#: the statuses of a record with every section of a complete one: ``unscored`` (``bench run --no-score``) lacks only
#: its scores, and `bench rescore` reads the rest (a wrong type there was a traceback, and a record whose examples
#: contradict its spec was scored before being refused)
SCORED_SHAPE = ("complete", "unscored")
#: what a record's ``kind`` may be: a harness run, or outputs submitted with ``bench submit``
KINDS = ("run", "external")


@dataclass(frozen=True)
class RunRecord:
    """One complete run: its spec, provenance, outputs, statistics, scores and timings (JSON as written)."""

    run_id: str
    created: str  # ISO-8601, UTC, seconds
    spec: dict[str, Any]  # RunSpec.to_json()
    harness: dict[str, Any]  # version, git_sha, dirty: the code at the start of the run
    environment: dict[str, Any]  # fingerprint at the start, plus loadavg_end
    system: dict[str, Any]  # SystemInfo.to_json(): family, iterations, backbone, config (incl. training facts)
    data: dict[str, Any]  # split_sha256, n_examples, partial, note
    outputs: dict[str, Any]  # path, sha256, n (, resumed)
    model: dict[str, Any]  # training_run_id, training_key, workdir: whose checkpoint was decoded
    output_stats: dict[str, Any]  # bench.scoring.output_stats: distinct ratio, most frequent share, ...
    training_curve: dict[str, Any] | None  # bench.runs.curves: train loss, dev loss per checkpoint
    scores: dict[str, Any]  # recipe -> Scores.to_json()
    latency: dict[str, Any] | None  # single-stream measurement when --latency-n was given
    timings: dict[str, float]  # fit_s, decode_s, score_s (, latency_s), total_s
    status: str = "complete"
    schema: int = SCHEMA_VERSION
    #: what ``bench rescore`` added later (recipes, output statistics) and when; absent until then
    rescored: list[dict[str, Any]] = field(default_factory=list)
    #: each time ``bench refile`` moved it: the run id it was under, the overrides set / unset, and when
    refiled: list[dict[str, Any]] = field(default_factory=list)
    #: ``run``: the harness trained/decoded it; ``external``: outputs submitted with ``bench submit``
    kind: str = "run"
    #: external records only: name, paper table and row it stands beside, the submitter's --meta
    submission: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        # key order of the files on disk: identity first, then provenance, then results
        order = ["schema", "run_id", "status", "kind", "created", "spec", "harness", "environment", "system",
                 "data", "outputs", "model", "output_stats", "training_curve", "scores", "latency", "timings"]
        return ({k: out[k] for k in order} | ({"rescored": out["rescored"]} if self.rescored else {})
                | ({"refiled": out["refiled"]} if self.refiled else {})
                | ({"submission": out["submission"]} if self.submission is not None else {}))

    @classmethod
    def from_json(cls, rec: dict[str, Any], path: Path | str = "<record>") -> RunRecord:
        """A complete record, checked (:func:`validate_record`); fields a record predates read as empty."""
        validate_record(rec, path)
        if rec["status"] != "complete":
            raise _fail(path, f"status is '{rec['status']}', not 'complete'")
        names = {f.name for f in fields(cls)}
        rec = {k: v for k, v in rec.items() if k != DIGEST_FIELD}  # the file's seal, made again by save()
        unknown = sorted(set(rec) - names)
        if unknown:
            known = ", ".join(sorted(names))
            raise _fail(path, f"unknown top-level field(s) {unknown}; known: {known}")
        optional: dict[str, Any] = {
            "model": {}, "output_stats": {}, "training_curve": None, "latency": None, "harness": {},
            "environment": {}, "system": {}, "data": {}, "outputs": {}, "timings": {}, "created": "",
        }
        return cls(**{**optional, **rec})

    def write(self, results_dir: Path | str) -> Path:
        """Atomically, as ``<results_dir>/<run_id>.json``."""
        return self.save(run_record_file(results_dir, self.run_id))

    def save(self, path: Path | str) -> Path:
        """Atomically at ``path`` (a crash leaves the old file or the new one, never half of one), sealed with
        its digest (:mod:`bench.store.integrity`) after the checks every reader makes: the harness never writes
        a record its own readers refuse."""
        rec = self.to_json()
        problems = record_problems(rec) if self.status == "complete" else []
        if self.status in SCORED_SHAPE and (mismatch := examples_problem(rec) or unnamed_outputs(rec)) is not None:
            problems.append(mismatch)
        problems += [Problem(field, str(why)) for field, value in name_values(rec, RUN_NAMES)
                     if (why := identifier_problem(value)) is not None]
        if problems:
            raise RecordError(f"{path}: not written: {problems[0]}, which every reader of records refuses. The "
                              "harness computed an inconsistent record: report it with this line.")
        return write_json(path, sealed(rec))


def config_value(rec: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` set in a record's resolved config, read flat or from its ``size`` block (the NAR
    family keeps its budget size there; fairseq calls the updates ``max_update``); None when none is set."""
    cfg = (rec.get("system") or {}).get("config") or {}
    size = cfg.get("size") or {}
    return next((v for n in names for v in (cfg.get(n), size.get(n)) if v is not None), None)


def read_record(path: Path | str) -> dict[str, Any]:
    """One record file as written (any status), with the JSON error named; see :func:`validate_record`. Its
    digest, when it has one, must fit its content, and is not in the dict returned (:func:`check_digest`); a
    complete one's ``outputs.n`` must be the number of lines of its outputs file when that file is as scored. It
    knows its file (:class:`bench.store.outputs.StoredRecord`): its outputs are found beside it."""
    return RUNS.read(path)  # a complete one's outputs count is checked against its outputs file (RunStore)


class RecordError(StoreError):
    """A run record does not follow the schema; the message names the file and the field."""


def _fail(path: Path | str, msg: str) -> RecordError:
    return RecordError(f"{path}: {msg}. Records are written by bench/runs/pipeline.py; fix or delete this file.")


def validate_record(rec: Any, path: Path | str = "<record>") -> dict:
    """Check the fields the renderers use; returns ``rec`` or raises :class:`RecordError`."""
    if not isinstance(rec, dict):
        raise _fail(path, "top level must be a JSON object")
    if rec.get("schema") != SCHEMA_VERSION:
        raise _fail(path, f"'schema' must be {SCHEMA_VERSION}, got {rec.get('schema')!r}")
    for key in ("run_id", "status"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    if rec["status"] not in SCORED_SHAPE:
        return rec
    kind = rec.get("kind", "run")
    if kind not in KINDS:
        raise _fail(path, f"'kind' must be one of {', '.join(KINDS)} (or absent: 'run'), got {kind!r}")
    spec = rec.get("spec")
    if not isinstance(spec, dict):
        raise _fail(path, "'spec' must be an object")
    for key in ("system", "task", "split", "budget"):
        if not isinstance(spec.get(key), str) or not spec[key]:
            raise _fail(path, f"'spec.{key}' must be a non-empty string")
    if not isinstance(spec.get("overrides", {}), dict):
        raise _fail(path, "'spec.overrides' must be an object")
    _check_sections(rec, path)
    if "created" in rec and not isinstance(rec["created"], str):
        raise _fail(path, "'created' must be an ISO-8601 string")
    scores = rec.get("scores")
    if not isinstance(scores, dict):
        raise _fail(path, "'scores' must be an object mapping recipe -> scores")
    for recipe, sc in scores.items():
        if not isinstance(sc, dict):
            raise _fail(path, f"'scores.{recipe}' must be an object")
        if not isinstance(sc.get("signature"), str) or not sc["signature"]:
            raise _fail(path, f"'scores.{recipe}.signature' must be a non-empty string")
        metrics = sc.get("metrics")
        if not isinstance(metrics, dict):
            raise _fail(path, f"'scores.{recipe}.metrics' must be an object")
        for name, value in metrics.items():
            if not is_number(value):
                raise _fail(path, f"'scores.{recipe}.metrics.{name}' must be a finite number, got {value!r}")
    lat = rec.get("latency")
    if lat is not None:
        if not isinstance(lat, dict):
            raise _fail(path, "'latency' must be null or an object")
        if not isinstance(lat.get("signature"), str):
            raise _fail(path, "'latency.signature' must be a string")
        for key in ("speedup_mean", "speedup_median"):
            if lat.get(key) is not None and not is_number(lat[key]):
                raise _fail(path, f"'latency.{key}' must be a number or null, got {lat[key]!r}")
        if not isinstance(lat.get("stats", {}), dict):
            raise _fail(path, "'latency.stats' must be an object")
    if kind == "external":
        _check_submission(rec.get("submission"), path)
    elif rec.get("submission") is not None:
        raise _fail(path, "'submission' is only for records of kind 'external' (outputs given to `bench submit`)")
    _check_integrity(rec, path)
    return rec


class RecordIntegrityError(RecordError):
    """A record whose numbers fail its own checks (:mod:`bench.store.integrity`) or whose digest does not fit:
    edited or damaged after the harness wrote it. No command shows a number from it."""


def _integrity_error(rec: dict[str, Any], path: Path | str, problem: Problem) -> RecordIntegrityError:
    return RecordIntegrityError(
        f"{path}: {problem}; the record is not as the harness wrote it (edited or damaged), so no number of it "
        f"is shown. Restore it (`git checkout -- {path}` if it is committed) or {_redo(rec)}."
    )


def _check_integrity(rec: dict[str, Any], path: Path | str) -> None:
    """Raise :class:`RecordIntegrityError` on the first inconsistent number of a complete record."""
    problems = record_problems(rec)
    if problems:
        raise _integrity_error(rec, path, problems[0])


def check_digest(rec: dict[str, Any], path: Path | str) -> dict[str, Any]:
    """``rec`` without its digest, unless the digest does not fit its content, or it has none and is not pinned
    as legacy (:mod:`bench.store.legacy`): :class:`RecordIntegrityError`. docs/integrity.md."""
    problem = digest_problem(rec)
    if problem is not None:
        raise _integrity_error(rec, path, problem)
    return unsealed(rec)


#: the record's sections that readers index as objects: a crafted string or list there must be one line, not
#: an AttributeError deep in a renderer
_SECTIONS = ("harness", "environment", "system", "data", "outputs", "model", "output_stats", "timings")


def _check_sections(rec: dict[str, Any], path: Path | str) -> None:
    for key in ("data", "outputs"):  # every record since schema 1 has them; show, table and export read them
        if key not in rec:
            raise _fail(path, f"'{key}' is missing (a complete record names its split and its outputs)")
    for key in _SECTIONS:
        if rec.get(key) is not None and not isinstance(rec[key], dict):
            raise _fail(path, f"'{key}' must be an object, got {type(rec[key]).__name__}")
    data, outputs = rec.get("data") or {}, rec.get("outputs") or {}
    for key, value in (("data.n_examples", data.get("n_examples")), ("outputs.n", outputs.get("n"))):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise _fail(path, f"'{key}' must be an integer, got {value!r}")
    for key, value in (("outputs.path", outputs.get("path")), ("outputs.sha256", outputs.get("sha256")),
                       ("data.split_sha256", data.get("split_sha256"))):
        if value is not None and not isinstance(value, str):
            raise _fail(path, f"'{key}' must be a string, got {type(value).__name__}")
    for key in ("rescored", "refiled"):
        if not isinstance(rec.get(key, []), list):
            raise _fail(path, f"'{key}' must be a list")


def _check_submission(sub: Any, path: Path | str) -> None:
    """The ``submission`` block the tables read of an external record: who, and which paper row it stands by."""
    if not isinstance(sub, dict):
        raise _fail(path, "'submission' must be an object (name, paper, row, meta) in a record of kind 'external'")
    if not isinstance(sub.get("name"), str) or not sub["name"]:
        raise _fail(path, "'submission.name' must be a non-empty string")
    for key in ("paper", "row"):
        if sub.get(key) is not None and not isinstance(sub[key], str):
            raise _fail(path, f"'submission.{key}' must be a string or null")
    if sub.get("row") is not None and sub.get("paper") is None:
        raise _fail(path, "'submission.row' needs 'submission.paper' (the table the row is in)")
    if not isinstance(sub.get("meta", {}), dict):
        raise _fail(path, "'submission.meta' must be an object of key -> text")


def load_records(results_dir: Path | str) -> list[dict]:
    """Complete records under ``results_dir`` (top-level ``*.json``), sorted by run_id.

    Failed or running records are skipped; a malformed one raises :class:`RecordError`, and so does one
    whose outputs were edited since they were scored (:func:`check_outputs`); a missing directory gives an
    empty list (nothing has been run yet: commands that only read records call :func:`require_dir` first).
    """
    out: dict[str, dict] = {}
    seen: dict[str, Path] = {}
    for path in RUNS.files(results_dir):
        data = RUNS.raw(path)
        if isinstance(data, dict) and data.get("kind") == "calibration":
            continue  # results/calibration/ keeps each sweep's summary beside its points' run records
        rec = RUNS.named_right(results_dir, RUNS.accept(data, path))
        if rec["status"] != "complete":
            continue
        rid = rec["run_id"]
        if rid in seen:
            raise _fail(path, f"run_id '{rid}' is also used by {seen[rid]}")
        seen[rid] = path
        check_outputs(rec, path)
        out[rid] = rec
    return [out[k] for k in sorted(out)]


class MissingDirError(UserError, FileNotFoundError):
    """A folder a command reads (``--results-dir``) does not exist: most often a typo, which must not
    read as "no records" (``bench table`` once rewrote reports/ from an empty set and deleted 51 files)."""


def require_dir(path: Path | str, option: str = "--results-dir", holds: str = "the run records") -> Path:
    """``path`` if it is a directory, else :class:`MissingDirError` naming it, a close sibling, and the fix."""
    p = Path(path)
    if p.is_dir():
        return p
    state = f"is {not_a_file(p) or 'a file'}, not a folder" if p.exists() else "does not exist"  # /dev/null: a device
    parent = p.absolute().parent
    siblings = [d.name for d in parent.iterdir() if d.is_dir()] if parent.is_dir() else []
    close = difflib.get_close_matches(p.name, siblings, n=1, cutoff=0.6)
    hint = f" Did you mean '{parent / close[0] if p.is_absolute() else p.with_name(close[0])}'?" if close else ""
    where = "" if p.is_absolute() else f" (looked in {Path.cwd()})"
    raise MissingDirError(f"{option} {path}: {state}{where}.{hint} Give the folder that holds {holds}; "
                          "nothing was read or written.")


class OutputsChangedError(RecordError):
    """A record's outputs file no longer hashes to the sha256 it was scored with."""


#: (path, mtime_ns, size) -> (sha256, lines): `bench table` checks every record's outputs, once per file version
_HASHES: dict[tuple[str, int, int], tuple[str, int]] = {}


def outputs_file(rec: dict[str, Any], record: Path | str | None = None) -> Path | None:
    """The outputs file of ``rec`` (read from ``record``, default: the file it was loaded from), where its run
    id puts it beside the record, or None when it names none (:func:`bench.store.outputs.outputs_location`:
    a stored path that is not that file is refused, never followed)."""
    return outputs_location(rec, record)


def outputs_sha256(path: Path) -> str:
    """The sha256 the harness records for an outputs file: of its text read back with universal newlines
    (as `bench show` reads it), cached by (path, mtime, size) so a table of ~100 records stays fast."""
    return _hash_and_lines(path)[0]


def outputs_lines(path: Path) -> int:
    """The outputs in an outputs file as the harness writes it: one per ``\n`` (universal newlines), the last
    one counted without its final newline too; cached with :func:`outputs_sha256`."""
    return _hash_and_lines(path)[1]


def _hash_and_lines(path: Path) -> tuple[str, int]:
    from bench.api.textfile import OUTPUTS, size_label

    st = path.stat()
    if st.st_size > OUTPUTS.max_bytes:  # never read whole into memory: no outputs file the harness scores is so large
        raise OutputsChangedError(f"{path}: {st.st_size:,} bytes, over the {size_label(OUTPUTS.max_bytes)} cap for an "
                                  "outputs file, so it is not read (the harness scores no outputs file that large). "
                                  "Restore the file (`git checkout` it) or re-run the spec.")
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _HASHES:
        from bench.api.reading import UnreadableFile, read_text

        try:  # read as every reader of outputs reads them: a BOM, a NUL or bytes that are not UTF-8 are no outputs
            text = read_text(path, limits=OUTPUTS)  # the harness wrote (its scores cannot stand on them), whatever
        except UnreadableFile as exc:  # the hash a resealed record gives them
            raise OutputsChangedError(str(exc)) from None
        data = text.encode("utf-8")  # universal newlines, as reading it as text gives
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        _HASHES[key] = (hashlib.sha256(data).hexdigest(), lines)
    return _HASHES[key]


def check_outputs(rec: dict[str, Any], record: Path | str) -> None:
    """Raise :class:`OutputsChangedError` when the outputs file ``rec`` names is there but no longer hashes
    to the record's sha256, naming the file and the fix; and :class:`RecordIntegrityError` when it does but
    holds another number of outputs than the record's ``outputs.n`` (the count was edited).

    An absent file is not checked here: the scores are in the record, and calibration points' outputs and
    third-party outputs submitted with ``--no-copy`` are not kept in every copy of results/ (`bench show`,
    which prints outputs, says when they are missing).
    """
    from bench.api.textfile import not_a_file

    want = (rec.get("outputs") or {}).get("sha256")
    path = outputs_file(rec, record)
    if want and path is not None and (what := not_a_file(path)) is not None:
        raise OutputsChangedError(f"{path}: {what}, not the outputs file its record {record} scored (a FIFO is "
                                  f"never read: it could hang). Restore the file (`git checkout` it) or {_redo(rec)}.")
    if not want or path is None or not path.is_file():
        return
    if outputs_sha256(path) != want:
        raise OutputsChangedError(
            f"{path}: sha256 differs from its record {record}; the outputs were edited after they were scored. "
            f"Restore the file (`git checkout` it) or {_redo(rec)}."
        )
    _check_outputs_count(rec, record)


def unnamed_outputs(rec: Mapping[str, Any]) -> Problem | None:
    """What is missing when a complete (or unscored) record names no outputs (``outputs.path`` or ``outputs.sha256``
    absent or empty): the harness writes both, and without them its scores stand on nothing a reader can check (such
    a record was shown, and `bench promote` copied it into results/ without outputs); None when it names both."""
    outputs = rec.get("outputs")
    for key in ("path", "sha256"):
        value = outputs.get(key) if isinstance(outputs, Mapping) else None
        if not isinstance(value, str) or not value:
            return Problem(f"outputs.{key}", f"is {value!r}: a run record names the outputs it decoded (their file "
                                             "and their sha256)")
    return None


def _check_outputs_count(rec: dict[str, Any], record: Path | str) -> None:
    """:class:`RecordIntegrityError` when the outputs file is there, hashes to the record's sha256, and holds
    another number of outputs than ``outputs.n`` (the count was edited, the evidence was not)."""
    outputs = rec.get("outputs") or {}
    path, n = outputs_file(rec, record), outputs.get("n")
    if n is None or not outputs.get("sha256") or path is None or not path.is_file():
        return
    if outputs_sha256(path) == outputs["sha256"] and n != outputs_lines(path):
        raise _integrity_error(rec, record, Problem(
            "outputs.n", f"is {n!r} but its outputs file {path} (sha256 as recorded) holds {outputs_lines(path)}"))


def _redo(rec: Mapping[str, Any]) -> str:
    """The command that makes the record again from fresh outputs."""
    spec = rec.get("spec") or {}
    if rec.get("kind", "run") != "run":
        return f"submit the outputs again with `bench submit --name {spec.get('system')} ... --force`"
    sets = " ".join(f"--set {k}={v if isinstance(v, str) else json.dumps(v)}"
                    for k, v in sorted((spec.get("overrides") or {}).items()))
    limit = f" --limit {spec['limit']}" if spec.get("limit") is not None else ""
    words = (f"bench run --system {spec.get('system')} --task {spec.get('task')} --split {spec.get('split')} "
             f"--budget {spec.get('budget')} --seed {spec.get('seed', 42)}{limit} {sets}").rstrip()
    return f"re-run it with `{words} --force`"


#: the fields of a run record a file name is built from (its file, its outputs, report pages, a split to load)
RUN_NAMES = ("run_id", "spec.system", "spec.task", "spec.split", "spec.budget")


class RunStore(SealedStore):
    """Run records (and submissions, calibration points: the same schema) through the one sealed path, with
    their own wording: the fix is the command line that makes the record again (:func:`_redo`)."""

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return _fail(path, msg)

    def edited(self, path: Path | str, problem: Problem, rec: Any = None) -> StoreError:
        return _integrity_error(dict(rec or {}), path, problem)

    def consistent(self, rec: Any, path: Path | str) -> None:
        if rec.get("status") in SCORED_SHAPE:
            _check_outputs_count(rec, path)  # the outputs file first: an edited count is named at 'outputs.n'
            problem = examples_problem(rec) or unnamed_outputs(rec)  # the spec's examples; outputs named
            if problem is not None:
                raise _integrity_error(rec, path, problem)


def _run_folder(results_dir: Path | str) -> Path:
    return Path(results_dir)


#: run records (``results/<run_id>.json``; kind ``run`` or ``external``), the store's kind ``run``
RUNS = RunStore(RecordError, "Run", "bench run", _redo, "run_id", _run_folder, run_record_file, validate_record,
                names=RUN_NAMES, kind="run", id_names_file=True, identity=run_record_id)
