"""`bench promote RUN_ID`: a workspace run made evidence, on purpose.

Why: runs land in the workspace (``.cache/results``) so that a smoke run never reaches the committed boards by
accident (docs/commands.md, "Where runs go"). A run worth keeping is copied into ``results/``: its outputs
(sha256 checked against the record) and its record, whose ``outputs.path`` label is restated for its new folder
and which is sealed again by the one record writer. Nothing is overwritten: a run id the evidence already holds is
refused, and the workspace copy stays where it is (the evidence is the copy that counts now).
"""

from __future__ import annotations

from pathlib import Path

from bench.api.atomic import write_text_atomic
from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR, workspace_dir
from bench.runs import display_path
from bench.runs.folders import Folders, label
from bench.runs.lookup import RunLookupError, find_record, outputs_text
from bench.store.outputs import owned_outputs
from bench.store.paths import outputs_text_file, run_record_file
from bench.store.records import RunRecord


class PromoteError(UserError, ValueError):
    """A run that cannot be promoted: incomplete, already evidence, or with outputs that fail their check."""


def promote(run_id: str, source: Path | None = None, dest: Path = RESULTS_DIR) -> Path:
    """Copy the run ``run_id`` (an id, a short id, or its record's path) from ``source`` (default: the workspace)
    into ``dest`` (default: results/); returns the new record's path."""
    given = source is not None
    source = Path(source) if source is not None else workspace_dir()
    if not source.is_dir():
        raise PromoteError(f"--from {source}: no such folder; give the folder that holds the run." if given else
                           f"Your workspace {source} does not exist yet: `bench run` puts runs there, and `bench "
                           "promote RUN_ID` copies one into results/.")
    if source.resolve() == Path(dest).resolve():
        raise PromoteError(f"{label(source)} is where promoted runs go already; nothing to do.")
    try:
        path, rec = find_record(run_id, Folders(source, (source,), explicit=True))
    except RunLookupError as exc:
        raise PromoteError(str(exc)) from exc
    rid = rec["run_id"]
    if rec.get("status") != "complete":
        raise PromoteError(f"{path}: its status is '{rec.get('status')}'; only complete runs are evidence (`bench "
                           f"rescore {rid}` scores an unscored one).")
    target = run_record_file(dest, rid)
    if target.exists():
        raise PromoteError(f"{display_path(target)} exists: the evidence holds this run id already; nothing "
                           "promoted (`git rm` it first if the workspace run should replace it).")
    record = dict(rec)
    if owned_outputs(rec, path) is not None:  # a --no-copy submission's outputs stay in the data folder
        try:
            text = outputs_text(rec)
        except RunLookupError as exc:
            raise PromoteError(f"{exc} Nothing promoted.") from exc
        out = outputs_text_file(dest, rid)
        if out.exists() and out.read_bytes() != text.encode("utf-8"):
            raise PromoteError(f"{display_path(out)} exists with other content; promote never overwrites a file it "
                               "did not write. Move it away first.")
        write_text_atomic(out, text)
        record["outputs"] = {**rec["outputs"], "path": display_path(out)}
    RunRecord.from_json(record, target).save(target)
    return target
