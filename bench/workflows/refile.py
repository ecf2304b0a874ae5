"""Re-file a record under another spec that resolves to exactly its settings, when a preset moved.

A run id hashes the spec, and a spec names a budget whose preset is code. When a calibration moves a
preset, two kinds of record end up under the wrong id. The old preset's records go stale
(:func:`bench.runs.stale_reason`), yet they are exact evidence of the *old* settings, which a table
often keeps as a row of its own (the schedule before the calibration, an ablation sized like it): their
spec should now pin those values (``--set steps=2400``). And the calibration point's test runs, made
with an override (``steps=6000``) the preset has now adopted, are the preset's runs: their spec should
drop it (``--unset steps``). Re-running either would train the same configuration again for nothing.

``bench refile`` restates instead of re-running. It refuses unless every value set is the one the record
was made with, every setting unset is one the preset now resolves to the recorded value, the new spec
resolves today to exactly the record's settings, and it trains the same model (same training key).
Then the record, its outputs (sha256 checked) and its scores move to the new spec's run id unchanged,
with an entry in ``refiled`` saying what changed in the spec, from which run id, and when; the commit, environment
and timings stay those of the run that made them.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.api.atomic import write_text_atomic
from bench.api.errors import UserError
from bench.runs import (
    RunSpec,
    build_system,
    describe_changes,
    display_path,
    model_spec,
    outputs_path,
    record_path,
    setting_changes,
)
from bench.runs.lookup import RunLookupError, find_record, outputs_text
from bench.store.outputs import owned_outputs
from bench.store.records import RunRecord, config_value


class RefileError(UserError, ValueError):
    """A new spec that would not resolve to the record's own settings, or a record that cannot move."""


def refile(run_id: str, set_: dict[str, Any], unset: list[str], results_dir: Path) -> Path:
    """Move the record ``run_id`` to its spec with ``set_`` added to and ``unset`` dropped from the overrides;
    returns the new record's path."""
    path, rec = find_record(run_id, results_dir)
    if rec.get("status") != "complete" or rec.get("kind", "run") != "run":
        raise RefileError(f"{path}: only complete runs of the harness can be re-filed (this one is "
                          f"{rec.get('kind', 'run')}, {rec.get('status')}).")
    if not set_ and not unset:
        raise RefileError("Nothing to change: --set a setting the record was made with (e.g. --set steps=2400) "
                          "or --unset an override the preset now resolves to the same value.")
    for key, value in set_.items():
        made = config_value(rec, key)
        if made is None:
            raise RefileError(f"{path}: its config has no setting '{key}'; --set restates a recorded setting.")
        if made != value:
            raise RefileError(f"{path}: it was made with {key}={made!r}, not {value!r}; --set can only restate "
                              f"the settings a record was made with (--set {key}={json.dumps(made)}).")
    old = RunSpec.from_json(rec["spec"])
    missing = [k for k in unset if k not in old.overrides]
    if missing:
        raise RefileError(f"{path}: its spec does not override {', '.join(missing)}; "
                          f"its overrides are {dict(old.overrides) or 'none'}.")
    overrides = {k: v for k, v in {**dict(old.overrides), **set_}.items() if k not in unset}
    new = replace(old, overrides=overrides)
    if new.run_id == old.run_id:
        raise RefileError(f"{path}: its spec already reads {overrides or 'without overrides'}.")
    system = build_system(new)
    changes = setting_changes(rec, new, system)
    if changes:
        raise RefileError(f"{path}: the {new.budget} preset with overrides {overrides or 'none'} resolves to other "
                          f"settings than the record's ({describe_changes(changes)}); --set those too, or re-run "
                          "the spec.")
    trained, key = model_spec(new, system)
    model = dict(rec.get("model") or {})
    if model.get("training_key") not in (None, key):
        raise RefileError(f"{path}: the new spec would train another model (training key {key}, the record's "
                          f"{model['training_key']}); re-run it instead (bench run … --set …).")
    dest = record_path(new, results_dir)
    if dest.exists():
        raise RefileError(f"{dest} exists already; `git rm` it first if the re-filed record should replace it.")

    try:
        text = outputs_text(rec)
    except RunLookupError as exc:
        raise RefileError(f"{exc} Restore them (git checkout) before re-filing.") from exc
    src_out = owned_outputs(rec, path)  # the record's own file beside it: never where its stored path points
    dest_out = outputs_path(new, results_dir)
    if dest_out.is_symlink() or (dest_out.exists() and (not dest_out.is_file() or dest_out.read_bytes()
                                                        != text.encode("utf-8"))):
        raise RefileError(f"{dest_out} exists already with other content; refile never overwrites a file it did "
                          "not write. Move it away (or `git rm` it) first.")
    write_text_atomic(dest_out, text)

    if model.get("training_run_id") == model_spec(old, build_system(old))[0].run_id:
        model["training_run_id"] = trained.run_id  # it trained its own model: that run is now the new spec
    stamp = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    moved = dict(rec, run_id=new.run_id, spec=new.to_json(), model=model,
                 outputs={**rec["outputs"], "path": display_path(dest_out)},
                 refiled=[*rec.get("refiled", []), {"at": stamp, "from": old.run_id, "set": dict(set_),
                                                     "unset": list(unset)}])
    RunRecord.from_json(moved, dest).save(dest)
    path.unlink()
    if src_out is not None and src_out.resolve() != dest_out.resolve():
        src_out.unlink(missing_ok=True)
    return dest


def pin_hint(rec: dict[str, Any]) -> str | None:
    """The `bench refile` line that would keep a stale record as a row of the settings it was made with (each
    changed setting pinned to its recorded value), or None when it is not stale or a changed setting is nested
    (the NAR family's ``size``), which ``--set`` cannot restate."""
    spec = RunSpec.from_json(rec["spec"])
    try:
        changes = setting_changes(rec, spec)
    except Exception:  # a system that no longer builds: nothing to pin against
        return None
    if not changes or any("." in key for key, _, _ in changes):
        return None
    sets = " ".join(f"--set {key}={json.dumps(made)}" for key, made, _ in changes)
    return f"bench refile {rec['run_id']} {sets}"

