"""Which run record a paper-table cell shows: matching records to rows, like-with-like per column.

Matching a record to a row (per quality column group): same system (the row's cpu substitute at
the cpu/smoke budgets), task, split, budget, *exactly* the row's overrides, and the row's recipe
(the one behind the published number) among the record's ``scores``. Several matches: a column
compares like with like (the runs over the examples every row of the group shares, see
:func:`group_matches`), then the whole split beats a ``--limit`` subset, then the newest ``created``
wins (then the larger run_id); the note says how many matched and why this one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.papers import Group, Row, Table, leading_number

#: Budget order tried when no budget is asked for: the most faithful run first (smoke never).
DEFAULT_BUDGETS: tuple[str, ...] = ("paper", "cpu")


# --- matching -----------------------------------------------------------------------------------
def is_partial(rec: dict) -> bool:
    return bool((rec.get("data") or {}).get("partial"))


def scored_examples(rec: dict) -> tuple[bool, int]:
    """Which test examples a record scored, ordered by preference: the whole split, else the most."""
    return (not is_partial(rec), int((rec.get("data") or {}).get("n_examples") or 0))


def _created_key(rec: dict) -> tuple[str, str]:
    return (str(rec.get("created", "")), rec["run_id"])


def _preference_key(rec: dict) -> tuple[tuple[bool, int], str, str]:
    """A run over the whole split beats one over a ``--limit`` subset (a quick decode-only probe of a
    recorded model must not hide its full result); among equals the newest wins."""
    return (scored_examples(rec), *_created_key(rec))


def find_matches(records: Sequence[dict], table: Table, row: Row, group: Group, budget: str) -> list[dict]:
    """Records that reproduce ``row`` in ``group`` at ``budget``: whole-split runs first, newest first."""
    system = row.system_for(budget)
    task, split = table.task_split(row, group)
    recipe = table.reported_recipe(row, group)
    if system is None or recipe is None:
        return []
    found = [
        r
        for r in records
        if r["spec"]["system"] == system
        and r["spec"]["task"] == task
        and r["spec"]["split"] == split
        and r["spec"]["budget"] == budget
        and dict(r["spec"].get("overrides") or {}) == dict(row.overrides)
        and recipe in r["scores"]
    ]
    return sorted(found, key=_preference_key, reverse=True)


@dataclass
class Match:
    record: dict
    budget: str
    n_matches: int
    why: str = ""  # how it was chosen among several matching runs, for the footnote
    note: int = 0  # footnote number


def shows_in(row: Row, group: Group) -> bool:
    """Whether ``row`` has cells in ``group``: the paper reports a number for it there, or the harness
    added the row (an ablation) to the table's quality columns."""
    if row.harness:
        return group.kind == "quality"
    return any(row.reported.get(c.id) for c in group.columns)


def group_matches(
    records: Sequence[dict], table: Table, group: Group, budgets: Sequence[str]
) -> dict[str, Match]:
    """The run shown in ``group`` for each row (by row id) that has one.

    A column compares like with like: when every row with a run has one over the same examples
    (the whole split, or the same ``--limit`` subset), those runs are shown, the whole split first,
    else the largest shared subset. MIST Table 6, say, decodes 3/6 iterations on a subset, so its
    single-pass rows then show the single-pass run on that subset, not the whole-split one. Without a
    shared subset each row shows its own best run (whole split first, then newest)."""
    found: dict[str, tuple[str, list[dict]]] = {}
    for row in (r for r in table.rows if shows_in(r, group)):
        for b in budgets:
            runs = find_matches(records, table, row, group, b)
            if runs:
                found[row.id] = (b, runs)
                break
    shared = set.intersection(*({scored_examples(r) for r in runs} for _, runs in found.values())) if found else set()
    common = max(shared) if shared else None
    out: dict[str, Match] = {}
    for row_id, (b, runs) in found.items():
        pick = next(r for r in runs if common is None or scored_examples(r) == common)
        out[row_id] = Match(pick, b, len(runs), why=_why(pick, runs, shared=common is not None and len(found) > 1))
    return out


def _why(pick: dict, runs: Sequence[dict], shared: bool) -> str:
    """The footnote's reason for showing ``pick`` of several matching ``runs`` (empty for one run)."""
    n = len(runs)
    if n == 1:
        return ""
    if pick is max(runs, key=_created_key):
        return f"newest of {n} matching runs"
    if not is_partial(pick):
        return f"whole-split run preferred over newer partial ones ({n} matching runs)"
    if shared:
        return f"of {n} matching runs, the one over the examples every row of this column has"
    return f"of {n} matching runs, the one over the most examples"


#: the harness's reference baselines shown under every table that has a column on these tasks
CONTEXT_SYSTEMS: dict[str, tuple[str, str]] = {
    "quora": ("copy_source", "Copy the source"),
    "squad_qg": ("copy_source", "Copy the source"),
    "squad_qg_reversed": ("copy_source", "Copy the source"),
    "xsum": ("lead1", "Lead-1 (first sentence)"),
}


CONTEXT_MARK = "(harness reference, not in the paper)"


def context_match(records: Sequence[dict], system: str, group: Group, shown: Sequence[Match]) -> dict | None:
    """The reference baseline's record for ``group``: same task, split and recipe, and the examples the
    column's shown runs were scored on (the most common among them), else the whole split, else the most."""
    runs = [
        r
        for r in records
        if r["spec"]["system"] == system
        and r["spec"]["task"] == group.task
        and r["spec"]["split"] == group.split
        and group.recipe in r["scores"]
    ]
    if not runs:
        return None
    if shown:
        counts: dict[tuple[bool, int], int] = {}
        for m in shown:
            counts[scored_examples(m.record)] = counts.get(scored_examples(m.record), 0) + 1
        want = max(counts, key=lambda k: (counts[k], k))
        same = [r for r in runs if scored_examples(r) == want]
        if not same:
            return None  # never put a baseline over other examples next to the column's runs
        runs = same
    return max(runs, key=_preference_key)


def reported_points(table: Table, group_id: str, metric: str) -> list[tuple[str, float, float]]:
    """(label, speedup, metric) of a table's rows with a numeric published speed, for Pareto plots.

    Labels of rows whose published number used another recipe than the group's end in " ‡".
    """
    lat_cols = [c for g in table.groups if g.kind == "latency" for c in g.columns if c.metric == "speedup"]
    qcols = [c for c in table.group(group_id).columns if c.metric == metric]
    if not lat_cols or not qcols:
        return []
    out = []
    for row in table.rows:
        x = leading_number(row.reported.get(lat_cols[0].id))
        y = leading_number(row.reported.get(qcols[0].id))
        if x is not None and y is not None:
            mark = " ‡" if table.recipe_differs(row, table.group(group_id)) else ""
            out.append((row.label + mark, x, y))
    return out


def matched_values(
    records: Sequence[dict], table: Table, group: Group, metric: str, budgets: Sequence[str]
) -> dict[str, tuple[float, str]]:
    """Row id -> (value, budget) of the run each row shows in a group, for plots (rows not run are absent)."""
    rows = {r.id: r for r in table.rows}
    out: dict[str, tuple[float, str]] = {}
    for row_id, m in group_matches(records, table, group, budgets).items():
        recipe = table.reported_recipe(rows[row_id], group) or ""
        value = m.record["scores"][recipe]["metrics"].get(metric)
        if value is not None:
            out[row_id] = (float(value), m.budget)
    return out


def recipes_used(table: Table, task: str) -> list[str]:
    """The recipes ``table``'s reproduced cells score ``task`` with (a row quoted under another recipe is
    scored with that one, so Δ compares like with like), sorted; a leaderboard ranks by one recipe and
    says where a paper table uses another."""
    used = {
        recipe
        for g in table.quality_groups()
        for row in table.rows
        if shows_in(row, g) and table.task_split(row, g)[0] == task
        and (recipe := table.reported_recipe(row, g)) is not None
    }
    return sorted(used)
