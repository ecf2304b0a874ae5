"""Finding a recorded run by id and reading back what it scored: for `bench show` and `bench compare A B`.

A record already says which task, split and examples its outputs belong to, so commands that take
run ids never ask for them again; two runs over different examples are refused with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.names import identifier_problem
from bench.api.reading import read_text
from bench.api.text import split_lines
from bench.api.textfile import OUTPUTS
from bench.runs.evaluation import first_examples
from bench.store.outputs import OutputsPathError, record_source
from bench.store.paths import run_record_file
from bench.store.records import OutputsChangedError, check_outputs, outputs_file, read_record, require_dir


class RunLookupError(UserError, ValueError):
    """A run id that names no record, or two runs that cannot be compared."""


def find_record(run_id: str, results_dir: Path) -> tuple[Path, dict[str, Any]]:
    """A run id under ``results_dir``, or a record's own path (``results/<id>.json``, as a shell completes it)."""
    if run_id.endswith(".json"):
        path = Path(run_id)
    else:  # an id is an identifier, never a path (bench.api.names): `../x` reads nothing outside the folder
        problem = identifier_problem(run_id)
        if problem is not None:
            raise RunLookupError(f"run id {problem}; give a recorded run id (`ls {results_dir}`) or a record's "
                                 "path ending in .json.")
        path = run_record_file(require_dir(results_dir), run_id)
    if not path.is_file():
        near = sorted(p.stem for p in path.parent.glob(f"{path.stem.split('--')[0]}*.json"))[:5]
        hint = f" Similar: {', '.join(near)}." if near else f" `ls {path.parent}` lists the recorded runs."
        raise RunLookupError(f"no record {path}.{hint}")
    return path, read_record(path)


def outputs_of(rec: dict[str, Any]) -> list[str]:
    """The run's stored outputs, checked against the sha256 in its record."""
    return split_lines(outputs_text(rec))


def outputs_text(rec: dict[str, Any]) -> str:
    """The run's outputs file as stored, checked against the sha256 in its record (the check every reader
    makes, :func:`bench.store.records.check_outputs`, so the message names the fix here too)."""
    try:
        path = outputs_file(rec)  # beside the record, never where its stored path points
        if path is None or not path.is_file():
            raise RunLookupError(f"{rec['run_id']}: outputs {path} are missing; restore them (git) or re-run the "
                                 "spec.")
        check_outputs(rec, record_source(rec))
    except (OutputsChangedError, OutputsPathError) as exc:  # callers (refile) catch this module's error
        raise RunLookupError(str(exc)) from exc
    # universal newlines: a CRLF checkout reads (and hashes) as written; the outputs caps bound what is read
    return read_text(path, limits=OUTPUTS)


def split_of(rec: dict[str, Any], data_dir: Path | None = None) -> Any:
    """The examples the run scored (its ``--limit`` prefix), checked against the record's split hash."""
    from bench.data import load_split

    spec, data = rec["spec"], rec["data"]
    split = first_examples(
        load_split(spec["task"], spec["split"], data_dir=data_dir), data["n_examples"] if data.get("partial") else None
    )
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
