"""Finding a recorded run by id and reading back what it scored: for `bench show` and `bench compare A B`.

A record already says which task, split and examples its outputs belong to, so commands that take
run ids never ask for them again; two runs over different examples are refused with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.reading import read_text
from bench.api.text import split_lines
from bench.api.textfile import OUTPUTS
from bench.runs.evaluation import first_examples
from bench.runs.folders import Folders, RunNotFound, find, folders
from bench.store.examples import spec_limit
from bench.store.outputs import OutputsPathError, record_source
from bench.store.records import OutputsChangedError, check_outputs, outputs_file


class RunLookupError(UserError, ValueError):
    """A run id that names no record, or two runs that cannot be compared."""


def find_record(run_id: str, results_dir: Path | str | Folders | None = None) -> tuple[Path, dict[str, Any]]:
    """A run id, a short id the pages show (its hash, or a unique start), or a record's own path
    (``results/<id>.json``, as a shell completes it); looked up in ``results_dir`` alone, or (None) in the workspace
    and then the committed results (:mod:`bench.runs.folders`)."""
    where = results_dir if isinstance(results_dir, Folders) else folders(results_dir)
    try:
        return find(run_id, where)
    except RunNotFound as exc:
        raise RunLookupError(str(exc)) from exc


def find_finished(run_id: str, results_dir: Path | str | Folders | None = None) -> tuple[Path, dict[str, Any]]:
    """:func:`find_record`, for commands that use a run's outputs and spec (``compare``, ``latency --runs``): a record
    of another status than complete or unscored has none of their checks (a failed one, a forged one), and was a
    TypeError or KeyError traceback there."""
    from bench.store.records import SCORED_SHAPE

    path, rec = find_record(run_id, results_dir)
    if rec.get("status") not in SCORED_SHAPE:
        raise RunLookupError(f"{path}: its status is {rec.get('status')!r}; only a finished run (complete, or "
                             "unscored: `bench rescore` scores it) has outputs to use. Re-run its spec.")
    return path, rec


def outputs_of(rec: dict[str, Any]) -> list[str]:
    """The run's stored outputs, checked against the sha256 in its record."""
    return split_lines(outputs_text(rec))


def outputs_text(rec: dict[str, Any]) -> str:
    """The run's outputs file as stored, checked against the sha256 in its record (the check every reader
    makes, :func:`bench.store.records.check_outputs`, so the message names the fix here too)."""
    try:
        path = outputs_file(rec)  # beside the record, never where its stored path points
        check_outputs(rec, record_source(rec))  # a FIFO or a folder in the outputs' place is named as what it is
        if path is None or not path.is_file():
            raise RunLookupError(f"{rec['run_id']}: outputs {path} are missing; restore them (git) or re-run the "
                                 "spec.")
    except (OutputsChangedError, OutputsPathError) as exc:  # callers (refile) catch this module's error
        raise RunLookupError(str(exc)) from exc
    # universal newlines: a CRLF checkout reads (and hashes) as written; the outputs caps bound what is read
    return read_text(path, limits=OUTPUTS)


def split_of(rec: dict[str, Any], data_dir: Path | None = None) -> Any:
    """The examples the run scored (its spec's ``--limit`` prefix), checked against the record's split hash."""
    from bench.data import load_split

    spec, data = rec["spec"], rec["data"]
    split = first_examples(load_split(spec["task"], spec["split"], data_dir=data_dir), spec_limit(spec))
    if split.sha256 != data["split_sha256"]:
        raise RunLookupError(f"{rec['run_id']}: the {spec['task']}/{spec['split']} split changed since it was scored.")
    return split


def same_examples(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Refuse, with a one-line reason, two runs that did not score the same examples."""
    sa, sb, da, db = a["spec"], b["spec"], a["data"], b["data"]
    if (sa["task"], sa["split"]) != (sb["task"], sb["split"]):
        raise RunLookupError(
            f"different data: {a['run_id']} scored {sa['task']}/{sa['split']}, "
            f"{b['run_id']} {sb['task']}/{sb['split']}."
        )
    if da["split_sha256"] != db["split_sha256"] or da.get("n_examples") != db.get("n_examples"):
        raise RunLookupError(
            f"different examples: {a['run_id']} scored {da.get('n_examples')}, {b['run_id']} {db.get('n_examples')} "
            f"of {sa['task']}/{sa['split']}; compare runs over the same examples (same --limit)."
        )


@dataclass(frozen=True)
class Compared:
    """`bench compare A B` of two recorded runs: one result per recipe (as ``--json`` prints it: a, b, per metric
    ``delta`` = a − b with its 95% CI ``ci95_a_minus_b``, ``p_bootstrap``, ``p_ar``; and ``identical``: how many
    outputs are byte-identical), and the two records' full run ids (a short id given is resolved)."""

    results: list[dict[str, Any]]
    run_a: str
    run_b: str


def compare_runs(a: str, b: str, recipes: Sequence[str] | None = None, *,
                 results_dir: Path | str | Folders | None = None, data_dir: Path | None = None,
                 use_cache: bool = True, agree_first: int = 200,
                 on_miss: Callable[[str, int], None] | None = None) -> Compared:
    """Paired significance of two recorded runs (ids, short ids or record paths) over the same examples, under
    ``recipes`` (default: the task's first): what `bench compare` and ``bench.compare`` both return, read from
    the compare cache in ``$BENCH_CACHE/compare`` when an intact entry agrees with the records' own scores."""
    from bench.data import TASKS
    from bench.scoring import ScoringSession
    from bench.scoring.agreement import identical_outputs
    from bench.scoring.compare_cache import cached_compare

    (_, ra), (_, rb) = find_finished(a, results_dir), find_finished(b, results_dir)
    same_examples(ra, rb)
    split = split_of(ra, data_dir)
    hyps_a, hyps_b = outputs_of(ra), outputs_of(rb)
    names = list(recipes or [TASKS.get(ra["spec"]["task"]).default_recipes[0]])
    with ScoringSession() as session:
        results = [cached_compare(n, hyps_a, hyps_b, split, session=session, use_cache=use_cache, on_miss=on_miss,
                                  stored={"a": ra["scores"].get(n), "b": rb["scores"].get(n)}) for n in names]
    agree = identical_outputs(hyps_a, hyps_b, agree_first)
    return Compared([{**r, "identical": agree} for r in results], ra["run_id"], rb["run_id"])
