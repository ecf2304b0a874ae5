"""``bench submit``: a file of outputs made elsewhere, scored and stored as an ``external`` record.

A paper's released outputs, or a model the harness cannot run, belong on the leaderboard next to
the runs, scored by the same recipes, but never as a reproduction: the harness did not train or
decode anything, so the record claims no spec beyond task and split, no fingerprint of the machine
that made the outputs and no training. It keeps what can be checked (the outputs' sha256, the
split's sha256, every default recipe's signature and score, the output statistics) and what the
submitter says (``--meta key=value``: who, what, where from). Tables show a submission as its own
row, marked submitted, under the paper table it names (``--paper mist:1 --row "BART(...)"``, with Δ
to that row's published number) or, without one, as a context row under every table whose column
it was scored for.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR
from bench.api.registry import folded, name_problem
from bench.api.text import join_lines
from bench.store import ids
from bench.store.records import RunRecord
from bench.store.submissions import (
    BUDGET,
    KIND,
    read_submission,
    submission_file,
    submitted_outputs_file,
    write_submission,
)


class SubmissionError(UserError, ValueError):
    """A submission that cannot be recorded as given; the message says what to change."""


def submission_id(name: str, task: str, split: str, outputs_sha256: str, paper: str | None, row: str | None) -> str:
    """A submission's id (the store's formula, :func:`bench.store.ids.submission_id`: every reader holds a record to
    it)."""
    return ids.submission_id(name, task, split, outputs_sha256, paper, row)


#: a ``--meta`` key: a short identifier (it becomes a column of `bench export` and a label in the tables)
META_KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: the longest ``--meta`` value: a source URL, a citation, a one-line note; not a document
META_VALUE_MAX = 500


def parse_meta(items: list[str]) -> dict[str, str]:
    """``--meta key=value`` pairs, each within :data:`META_KEY` / :data:`META_VALUE_MAX` and on one line, so
    what a submitter says is a short fact the record keeps, never a place to put markup or forge a row."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise SubmissionError(f"--meta {item!r}: expected key=value, e.g. --meta source=https://... ")
        if not META_KEY.fullmatch(key):
            raise SubmissionError(f"--meta key {key[:80]!r}: use 1 to 64 letters, digits and _ . - "
                                  "(e.g. --meta source=...).")
        if key in out:
            raise SubmissionError(f"--meta {key}: given twice; give each key once.")
        if len(value) > META_VALUE_MAX:
            raise SubmissionError(f"--meta {key}: the value is {len(value):,} characters; keep it within "
                                  f"{META_VALUE_MAX} (a link or a short note).")
        bad = next((c for c in value if _hidden(c)), None)
        if bad is not None:
            raise SubmissionError(f"--meta {key}: the value holds the control character U+{ord(bad):04X} at "
                                  f"position {value.index(bad) + 1}; give it on one line, without control or "
                                  "bidi characters.")
        out[key] = value
    return out


def _hidden(c: str) -> bool:
    """A character that is not text a reader sees: a control (line breaks included), a line or paragraph
    separator, or a bidi control."""
    import unicodedata

    from bench.api.text import BIDI_CONTROLS

    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI_CONTROLS


def check_name(name: str) -> None:
    """A name that can name files and is no registered system's: a submission under ``copy_source`` would
    stand in tables as if the harness had run that system (#40)."""
    from systems import SYSTEMS

    problem = name_problem(name)
    if problem:
        raise SubmissionError(f"--name {name[:80]!r}: {problem}, e.g. nqg_du2017.")
    taken = {folded(system): system for system in SYSTEMS.names()}
    if folded(name) in taken:
        raise SubmissionError(f"--name {name!r} is the registered system {taken[folded(name)]!r} (bench ls "
                              f"systems): a submission cannot take a system's name; use e.g. --name "
                              f"{name}_submitted, or the outputs' source (nqg_du2017).")


def check_no_copy(hyp: Path) -> None:
    """``--no-copy`` records only the path of ``hyp``, and a record may name a file outside its results folder
    only in the data folder (:mod:`bench.store.outputs`): anything else would be refused by every reader."""
    from bench.store.outputs import data_roots, in_data_folder

    if not in_data_folder(hyp):
        roots = " or ".join(str(r) for r in data_roots())
        raise SubmissionError(f"--hyp {hyp}: --no-copy keeps only its path, and a record may name outputs outside "
                              f"its results folder only in the data folder ({roots}); drop --no-copy to keep a "
                              "copy beside the record.")


def check_paper_row(paper: str | None, row: str | None, task: str | None = None,
                    split: str | None = None) -> tuple[str | None, str | None]:
    """``--paper P:T`` must name a table and ``--row`` one of its rows (label or id), one with a column on ``task``
    / ``split`` when given (outputs stand beside a row of their own data only); returns the table's canonical
    reference (``mist:1``) and the row's id."""
    if paper is None:
        if row is not None:
            raise SubmissionError("--row needs --paper PAPER:TABLE (e.g. --paper mist:1).")
        return None, None
    from bench.papers import get_table, parse_table_ref

    table = get_table(*parse_table_ref(paper))
    if row is None:
        if task is not None and split is not None and not any(table.scores_on(r, task, split) for r in table.rows):
            raise SubmissionError(f"--paper {table.ref} has no column on {task}/{split} (these outputs'), so the "
                                  "submission would be shown under no table: name a table on that data, or leave "
                                  "--paper out.")
        return table.ref, None
    for r in table.rows:
        if row in (r.label, r.id):
            if task is not None and split is not None and not table.scores_on(r, task, split):
                on = sorted({f"{t}/{s}" for g in table.quality_groups() for t, s in [table.task_split(r, g)]})
                raise SubmissionError(f"--row {row!r} of {table.ref} is scored on {', '.join(on) or 'no data'}, not "
                                      f"on {task}/{split} (these outputs'): name a row of a table on {task}/{split}, "
                                      "or leave --paper and --row out.")
            return table.ref, r.id
    labels = "; ".join(f"{r.label!r}" for r in table.rows)
    raise SubmissionError(f"--row {row!r} is not a row of {table.ref}. Its rows: {labels}.")


def submit(
    name: str,
    task: str,
    split: str,
    hyp: Path,
    *,
    paper: str | None = None,
    row: str | None = None,
    meta: Mapping[str, str] | None = None,
    results_dir: Path = RESULTS_DIR,
    data_dir: Path | None = None,
    force: bool = False,
    copy: bool = True,
) -> dict[str, Any]:
    """Score ``hyp`` under every default recipe of ``task`` on ``split`` and write the external record.

    ``copy``: keep the outputs as scored under ``results/outputs/`` (a user's own outputs). Without
    it the record points at ``hyp`` and keeps its sha256 only: third-party releases (the shared
    data's NQG, PTGEN and ConvS2S outputs) are never copied into the repository.
    """
    from bench.api.atomic import write_text_atomic
    from bench.data import TASKS, load_split
    from bench.runs import check_recipes, harness_info, sha256_text
    from bench.scoring import ScoringSession, read_hypotheses, score_split
    from bench.scoring.output_stats import output_stats

    check_name(name)
    if not copy:
        check_no_copy(Path(hyp))
    paper, row_id = check_paper_row(paper, row, task, split)
    info = TASKS.get(task)
    check_recipes(info)
    sp = load_split(task, split, data_dir=data_dir)
    outputs = read_hypotheses(hyp, expected=len(sp), ref_label=f"{task}/{split}")
    text = join_lines(outputs)
    sha = sha256_text(text)
    run_id = submission_id(name, task, split, sha, paper, row_id)
    spec = {"system": name, "task": task, "split": split, "budget": BUDGET, "overrides": {}}
    rec_path = submission_file(results_dir, run_id)
    if rec_path.exists() and not force:  # the same outputs, submitted again: nothing new to score
        existing = read_submission(rec_path)
        kept = submitted_outputs_file(results_dir, run_id)
        if (existing.get("outputs") or {}).get("copied") is not False and not kept.exists() and not kept.is_symlink():
            write_text_atomic(kept, text)  # its kept copy was lost: these outputs hash to the id, so they are it
        return existing
    started = time.perf_counter()
    scores: dict[str, Any] = {}
    with ScoringSession() as session:
        for recipe in info.default_recipes:
            scores[recipe] = score_split(recipe, outputs, sp, session=session).to_json()
    if copy:
        out_path = submitted_outputs_file(results_dir, run_id)
        write_text_atomic(out_path, text)  # the outputs as scored (one per line, final newline)
        from bench.runs import display_path

        shown = display_path(out_path)  # in the results folder: repo-relative or absolute, never '..'
    else:
        shown = _display(Path(hyp))
    record = RunRecord(
        run_id=run_id,
        created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        kind=KIND,
        spec=spec,
        harness=harness_info(),  # the code that scored it
        environment={},  # no claim about the machine that made the outputs
        system={"name": name, "family": "submitted", "origin": "submitted outputs"},
        data={"split_sha256": sp.sha256, "n_examples": len(sp), "partial": sp.partial, "note": sp.note,
              "task_origin": TASKS.meta(task)["origin"]},
        outputs={"path": shown, "sha256": sha, "n": len(outputs), "copied": copy, "submitted_file": str(hyp)},
        model={},
        output_stats=output_stats(outputs, [ex.target for ex in sp.examples]),
        training_curve=None,
        scores=scores,
        latency=None,
        timings={"score_s": round(time.perf_counter() - started, 3)},
        submission={"name": name, "paper": paper, "row": row_id, "meta": dict(meta or {})},
    )
    write_submission(results_dir, record)
    return record.to_json()


def _display(path: Path) -> str:
    """A ``--no-copy`` file's label: :func:`bench.runs.display_path`, and a file beside the checkout (the shared
    data) relative to it, as the committed third-party records name theirs."""
    import os

    from bench.runs import REPO_ROOT, display_path

    shown = display_path(path)
    beside = Path(shown).is_absolute() and Path(shown).parts[:2] == REPO_ROOT.parts[:2]
    return os.path.relpath(shown, REPO_ROOT) if beside else shown

