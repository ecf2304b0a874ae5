"""The score stage re-run from stored outputs: a run stage, so it sits with the pipeline that calls it for
``--no-score`` records. Scores a finished run's stored outputs under recipes it was not scored with, without
re-running it (and adds the output statistics, :mod:`bench.scoring.output_stats`, to records written before
they existed).

A task's default recipe set can grow (a new paper table needs another protocol); the outputs a
record points to are the evidence, so scoring them again is exact as long as they and the test
split are the ones the run used. Both are checked by sha256 before anything is written, and the
record is replaced atomically with the old scores kept.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.reading import read_text
from bench.api.text import split_lines
from bench.api.textfile import OUTPUTS
from bench.runs.evaluation import first_examples
from bench.runs.outputs import sha256_text
from bench.runs.reporter import Reporter
from bench.store.examples import spec_limit
from bench.store.records import RecordError, RunRecord, check_outputs, outputs_file, read_record


class RescoreError(UserError, ValueError):
    """A record whose outputs or test split no longer match what it says it scored."""


def missing_recipes(record: dict[str, Any]) -> list[str]:
    """The task's default recipes the record has no scores for."""
    from bench.data import TASKS

    task = TASKS.get(record["spec"]["task"])
    return [r for r in task.default_recipes if r not in (record.get("scores") or {})]


def rescore(path: Path, *, data_dir: Path | None = None, say: Reporter = print) -> list[str]:
    """Add the missing default recipes' scores (and missing output statistics) to the record at ``path``;
    returns what was added (recipe names, and ``output_stats``)."""
    from bench.data import load_split
    from bench.scoring import ScoringSession, score_split

    path = Path(path)
    record = read_record(path)
    unscored = record.get("status") == "unscored"  # bench run --no-score: outputs without scores
    if record.get("status") != "complete" and not unscored:
        raise RescoreError(f"{path}: status is {record.get('status')!r}; only complete or unscored runs can be "
                           "rescored.")
    todo = missing_recipes(record)
    needs_stats = not record.get("output_stats")
    if not todo and not needs_stats:
        return []
    out_path = outputs_file(record, path)  # beside the record; a stored path elsewhere is refused
    try:
        check_outputs(record, path)  # the one rule for a record's outputs: a file, hashing to its sha256
    except RecordError as exc:
        raise RescoreError(str(exc)) from exc
    if out_path is None or not out_path.is_file():
        raise RescoreError(f"{path}: its outputs {out_path} are missing; restore them (git) or re-run the spec.")
    text = read_text(out_path, "restore it (git checkout) or re-run the spec", limits=OUTPUTS)
    if sha256_text(text) != record["outputs"]["sha256"]:  # changed between the check and this read
        raise RescoreError(f"{out_path}: sha256 differs from its record {path}; the outputs changed while being "
                           "read. Run the command again.")
    spec, data = record["spec"], record["data"]
    split = load_split(spec["task"], spec["split"], data_dir=data_dir)
    split = first_examples(split, spec_limit(spec))  # the spec's examples, whatever 'data' says (the store's rule)
    if split.sha256 != data["split_sha256"]:
        raise RescoreError(f"{path}: the {spec['task']}/{spec['split']} split now hashes to {split.sha256[:12]}…, "
                           f"not the {data['split_sha256'][:12]}… it was scored on; rescoring would mix data versions.")
    outputs = split_lines(text)
    if len(outputs) != len(split):
        raise RescoreError(
            f"{out_path}: {len(outputs)} lines for {len(split)} examples of {spec['task']}/{spec['split']}."
        )
    added = list(todo)
    if todo:
        with ScoringSession() as session:
            for recipe in todo:
                say(f"[rescore] {record['run_id']}: {recipe}")
                record["scores"][recipe] = score_split(recipe, outputs, split, session=session).to_json()
    if needs_stats:
        from bench.scoring.output_stats import output_stats

        say(f"[rescore] {record['run_id']}: output statistics")
        record["output_stats"] = output_stats(outputs, [ex.target for ex in split.examples])
        added.append("output_stats")
    stamp = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    entry = {"at": stamp, "recipes": todo, **({"added": added} if needs_stats else {})}
    record.setdefault("rescored", []).append(entry)
    record["status"] = "complete"  # an unscored run's scores are in: tables show it from now on
    RunRecord.from_json(record, path).save(path)
    return added
