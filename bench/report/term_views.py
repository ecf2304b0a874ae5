"""The terminal's views of many records: a task's leaderboard (`bench leaderboard`) and the run list
(`bench ls runs`), as rows of plain strings that the command lays out (bench.env.term_layout).

Why here and not in the command: the leaderboard reuses the HTML board's model (:func:`build_board`: the same
groups, headline, rank clusters and stored p-values), so the terminal and the page can never rank differently;
and the tests check these rows without a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report.board import Board, build_board, display_name, run_settings
from bench.report.ranking import ALPHA, Headline, headline, metric_label, reference_above_all

#: the leaderboard's columns; run id, score and CI are atomic (never wrapped)
BOARD_HEADERS = ("rank", "system", "score", "95% CI", "examples", "budget", "speed-up", "run id")


@dataclass
class TextGroup:
    """One ranked group of a board: its title line, its rows (:data:`BOARD_HEADERS`) and footnotes."""

    title: str
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def board_groups(board: Board) -> list[TextGroup]:
    """Each ranked group of ``board`` as :class:`TextGroup`, best first, as the HTML page ranks it."""
    out: list[TextGroup] = []
    head = board.head
    for g in board.groups:
        items = ""
        if head is not None:
            n_items = {int(r.record["scores"][head.recipe].get("n_items") or 0)
                       for r in g.rows if head.recipe in r.record["scores"]}
            items = f", {n_items.pop():,} scored items" if len(n_items) == 1 else ""
        group = TextGroup(f"{g.name} ({g.examples.n:,} examples{items}; {len(g.rows)} "
                          f"run{'s' if len(g.rows) != 1 else ''})")
        for r in g.rows:
            rec = r.record
            ci = head.ci(rec) if head else None
            speed = board.speeds.get(rec["run_id"])
            sets = run_settings(rec)
            name = display_name(rec) + (f" {sets}" if sets else "") + (" (degenerate)" if r.degenerate else "")
            n = (rec.get("data") or {}).get("n_examples")
            group.rows.append([
                r.rank, name,
                "" if r.value is None else f"{r.value:.2f}",
                f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "", "" if n is None else f"{n:,}",
                str(rec["spec"]["budget"]), _speed(speed), rec["run_id"]])
            if r.unranked:
                group.notes.append(f"{display_name(rec)}: unranked: {r.unranked}")
        if not g.tested and g.untested_reason:
            group.notes.append(f"ranks are a plain order by score: significance not tested ({g.untested_reason})")
        timed = sorted({sp.setting.short() + ("" if sp.own else " (†: the paper row's architecture)")
                        for r in g.rows if (sp := board.speeds.get(r.record["run_id"])) and sp.setting is not None})
        if timed:
            group.notes.append("speed-ups timed on: " + "; ".join(timed))
        out.append(group)
    return out


def reference_lines(board: Board) -> list[str]:
    """One line per group where a reference baseline (no training) scores above every ranked run: the board's
    first lines, as the HTML page's (:func:`bench.report.ranking.reference_above_all`)."""
    head = board.head
    if head is None:
        return []

    def num(r: Any) -> str:
        ci = head.ci(r.record)
        return f"{r.value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    return [f"No ranked run beats the reference {display_name(lead.reference.record)} (no training) on the "
            f"{g.name}: {num(lead.reference)} against the best ranked run, {display_name(lead.best.record)}, "
            f"{num(lead.best)} ({head.label})."
            for g in board.groups for lead in reference_above_all(g, head)]


def _speed(speed: Any) -> str:
    """A speed-up as the page writes it: † where measured on the paper row's architecture, INVALID flagged."""
    if speed is None:
        return ""
    return f"{speed.mean:.2f}×" + ("" if speed.own else "†") + speed.flag


def board_lede(head: Headline | None, board: Board | None = None) -> str:
    """What the board ranks by, and what a cluster is: the recipe is named, since a paper table may use another;
    first, when ``board`` is given, each group where a reference baseline beats every ranked run
    (:func:`reference_lines`)."""
    if head is None:
        return "No scored run yet."
    first = "".join(f"{line}\n" for line in reference_lines(board)) if board is not None else ""
    return first + (f"Ranked by {metric_label(head.metric)} under the scoring recipe {head.recipe} (×100), best first. "
            "A rank such as 1–3 is a cluster: every run in a higher cluster beats every run in a lower one under "
            f"bench compare's paired bootstrap, Holm-corrected (α = {ALPHA}; docs/scoring.md). Reference baselines "
            "(rank ref: no training) stand at their score's place, never ranked; degenerate runs are listed unranked "
            "after the ranked ones; a run with another's exact outputs is ranked once (=). Each "
            "group holds runs over the same examples; do not compare numbers across groups. A paper table may "
            "score with another recipe: `bench show RUN_ID` lists every recipe's numbers.")


def terminal_board(task: str, results_dir: Path, data_dir: Path | None = None,
                   also: Sequence[dict[str, Any]] = ()) -> tuple[Board, list[TextGroup]]:
    """The board of ``task`` from the records in ``results_dir`` (and ``also``: the workspace's runs, ranked with
    them), with the p-values `bench table` stored (a pair not stored yet is computed from the outputs and not
    written: this command only reads)."""
    from bench.data import TASKS
    from bench.store.latency import load_latency_records
    from bench.store.pvalues import PValues, pvalues_file
    from bench.store.records import load_records, require_dir

    TASKS.get(task)  # a misspelt task names the known ones
    require_dir(results_dir)
    records = [r for r in load_records(results_dir) if r.get("status") == "complete"]
    ids = {r["run_id"] for r in also}
    records = [*(r for r in records if r["run_id"] not in ids), *(r for r in also if r.get("status") == "complete")]
    file = pvalues_file(results_dir)
    board = build_board(task, records, load_latency_records(results_dir), data_dir,
                        pvalues=PValues(file if file.is_file() else None))
    return board, board_groups(board)


#: the run list's columns (run id first: it names system, task, split and budget already)
RUN_HEADERS = ("run id", "system", "task", "split", "budget", "examples", "settings", "headline")


def settings_text(spec: dict[str, Any]) -> str:
    """A run's own settings, as `bench run --set` gave them (``decode=mist_iter iterations=3``): what tells
    apart runs of one system over the same examples; "preset" where it ran its preset as is."""
    overrides = spec.get("overrides") or {}
    return " ".join(f"{k}={v}" for k, v in sorted(overrides.items())) or "preset"


def run_rows(records: Sequence[dict[str, Any]], task: str | None = None, system: str | None = None,
             budget: str | None = None) -> list[list[str]]:
    """One row per record (filtered), sorted by task, system and run id; the headline is the task board's
    (e.g. ``BLEU-4 14.32 (nqg)``), or the record's status when it has no score."""
    mine = [r for r in records if (task is None or r["spec"]["task"] == task)
            and (system is None or r["spec"]["system"] == system)
            and (budget is None or r["spec"]["budget"] == budget)]
    heads: dict[str, Headline | None] = {}
    rows = []
    for rec in sorted(mine, key=lambda r: (r["spec"]["task"], r["spec"]["system"], r["run_id"])):
        spec = rec["spec"]
        if spec["task"] not in heads:
            heads[spec["task"]] = headline(spec["task"], [r for r in records if r["spec"]["task"] == spec["task"]])
        head = heads[spec["task"]]
        value = head.value(rec) if head is not None else None
        shown = f"{metric_label(head.metric)} {value:.2f} ({head.recipe})" if head and value is not None else \
            str(rec.get("status", ""))
        n = (rec.get("data") or {}).get("n_examples")
        rows.append([rec["run_id"], display_name(rec), spec["task"], spec["split"], spec["budget"],
                     "" if n is None else f"{n:,}", settings_text(spec), shown])
    return rows


def brief_line(rec: dict[str, Any], results_dir: str | None = None) -> str:
    """A run's headline in one line (`bench run --brief`, the demo): the number its task's board ranks by, with its
    CI, and the short id that `bench show` takes for every recipe's numbers (with the folder it was written to,
    when that is not one `bench show` reads by default)."""
    head = headline(rec["spec"]["task"], [rec])
    short = rec["run_id"].rsplit("--", 1)[-1] + (f" --results-dir {results_dir}" if results_dir else "")
    value = head.value(rec) if head is not None else None
    if head is None or value is None:
        return f"{rec.get('status') or 'no score'}; bench show {short}"
    ci = head.ci(rec)
    shown = f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
    return f"{head.label}: {shown}; every recipe: bench show {short}"
