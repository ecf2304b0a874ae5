"""Paper tables joined with run records, as plain cell grids (one model for markdown and HTML).

Why one model: the markdown files, the HTML page and the ``--check`` gate must show the very same
numbers, so both renderers only format a :class:`TableView` built here.

Which record a cell shows is :mod:`bench.papers.matching`; how a number is written is
:mod:`bench.report.cells`; this module lays rows, columns, notes and reference rows out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.papers import Group, Row, Table, leading_number, load_paper
from bench.papers.matching import (
    CONTEXT_MARK,
    CONTEXT_SYSTEMS,
    DEFAULT_BUDGETS,
    Match,
    context_match,
    group_matches,
    shows_in,
)
from bench.report import speed, speed_ct2
from bench.report.cells import (
    DEGENERATE_MARK,
    RECIPE_MARK,
    degenerate_flag,
    fmt_delta,
    fmt_num,
    latency_cell,
    quality_cell,
)
from bench.report.spans import code, lit
from bench.scoring.output_stats import degeneracy
from bench.scoring.output_stats import summary as output_summary
from bench.store.records import config_value

METRIC_ORDER = (
    "bleu1",
    "bleu2",
    "bleu3",
    "bleu4",
    "meteor",
    "rougeL",
    "rouge1",
    "rouge2",
    "distinct1",
    "distinct2",
    "f1",
)


@dataclass
class TableView:
    """A rendered table: ``key`` names the file/anchor (``mist-table1``), cells are plain text."""

    key: str
    title: str
    preamble: list[str]
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    #: what a reader must see first, right by the table (a reference baseline above every reproduced row)
    lead: list[str] = field(default_factory=list)
    reproduced: int = 0  # paper rows with a run shown (the index leads with the tables that have some)


def _run_note(m: Match, table: Table, row: Row, group: Group) -> str:
    rec = m.record
    spec = rec["spec"]
    recipe = table.reported_recipe(row, group)
    parts = [f"{code(rec['run_id'])}: system {code(spec['system'])}"]  # every value escaped as it goes in
    if spec["system"] != row.system and row.system:
        parts[0] += f" ({lit(m.budget)} substitute for {code(row.system)})"
    if rec.get("refiled"):
        parts[0] += f" ({_refiled_note(rec['refiled'])})"
    data = rec.get("data") or {}
    where = (
        f"task {code(spec['task'])}, split {code(spec['split'])}, budget {code(m.budget)}, seed "
        f"{lit(spec.get('seed', '?'))}"
    )
    if data.get("n_examples") is not None:
        where += f", {lit(data['n_examples'])} examples"
    if data.get("partial"):
        where += f", PARTIAL split ({lit(data.get('note') or 'subset of the official split')})"
    parts.append(where)
    parts.append(f"quality {code(rec['scores'][recipe]['signature'])}")
    stats = rec.get("output_stats")
    if stats and stats.get("n"):
        reasons = degeneracy(stats)
        lead = "outputs"
        if reasons:
            lead = f"{DEGENERATE_MARK.upper()} ({lit('; '.join(reasons))}): not evidence of learning. Outputs"
        parts.append(f"{lead}: {lit(output_summary(stats))}")
    lat = rec.get("latency")
    if lat:
        lat_text = f"latency {code(lat['signature'])}"
        if lat.get("device"):
            lat_text += f" on {lit(lat['device'])}"
        if lat.get("baseline"):
            lat_text += f", speedup vs {code(lat['baseline'])}"
            ci = lat.get("speedup_ci95")
            if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
                lat_text += f" (95% CI {fmt_num(ci[0])}–{fmt_num(ci[1])})"
        if not lat.get("valid", True):
            lat_text += f"; INVALID: {lit(', '.join(map(str, lat.get('invalid_reasons') or ['no reason given'])))}"
        parts.append(lat_text)
    window = _input_note(rec)
    if window:
        parts.append(window)
    training = _training_note(rec) if m.budget != "paper" else None
    if training:
        parts.append(training)
    from bench.runs import record_stale_reason

    stale = record_stale_reason(rec)
    if stale:
        from bench.workflows.refile import pin_hint

        hint = pin_hint(rec)
        keep = f", or keep it as a row of its own settings (`{hint}`, then a row with those overrides)" if hint else ""
        parts.append(f"STALE: {stale}; re-run it (`bench run` or `bench reproduce` re-runs a stale record){keep}")
    if m.why:
        parts.append(m.why)
    return "; ".join(parts)


def _refiled_note(moves: list[dict]) -> str:
    """Where a record re-filed by `bench refile` was made, so its run id and its commit do not look mismatched."""
    changes = [
        [*(f"set {k}={v}" for k, v in (m.get("set") or {}).items()), *(f"unset {k}" for k in m.get("unset") or [])]
        for m in moves
    ]
    how = "; ".join(", ".join(c) for c in changes)
    return f"made as `{moves[0]['from']}`, re-filed by `bench refile` ({how}) after its preset moved"


def _training_note(rec: dict) -> str | None:
    """How much a reduced-budget run trained: each family's cpu preset is calibrated on its own, so rows of one
    column may differ in updates, and a reader comparing them must see it next to the score."""
    steps = config_value(rec, "steps", "max_update")
    if not isinstance(steps, int) or isinstance(steps, bool):
        return None
    batch, examples, lr = (config_value(rec, name) for name in ("batch_size", "train_examples", "lr"))
    text = f"training: {steps:,} updates" + (f" × {batch}" if batch else "")
    text += f" over {examples:,} training examples" if examples else " over the whole training split"
    return text + (f", lr {lr:g}" if lr else "")


#: marks a run whose source layout departs from its paper's (a budget's stated input deviation)
INPUT_MARK = "CPU INPUT"


def _input_note(rec: dict) -> str | None:
    """What a run fed its encoder when that is not the paper's source (``source_window="answer"``)."""
    if config_value(rec, "source_window") != "answer":
        return None
    n = config_value(rec, "max_source_len")
    if n:  # an encoder source: "answer [SEP] window"
        what = f"source = `answer [SEP]` + a paragraph window around the answer ({n} pieces with [CLS]/[SEP])"
    else:  # CopyBERT: one sequence of paragraph window + question, the answer marked by token types
        seq = config_value(rec, "max_seq_length")
        what = "one paragraph window around the answer per example" + (
            f" (sequences of {seq} pieces with the question)" if seq else "")
    return f"{INPUT_MARK}: {what}, where the paper feeds the whole paragraph (a stated deviation of the budget)"


def _status(
    table: Table,
    row: Row,
    group: Group,
    budgets: Sequence[str],
    asked: str | None,
    calibrations: Sequence[dict] = (),
) -> str:
    reasons = {b: table.unavailable_reason(row, group, b) for b in budgets}
    # a budget that can run but whose calibration found no healthy point: "not run", with the plateau
    unlearned = {
        b: why for b in budgets
        if b == "cpu" and reasons[b] is None
        and (why := _no_healthy_point(row.system_for(b), group.task, calibrations))
    }
    if asked is not None:
        r = reasons[asked]
        if r:
            return f"cannot run here: {r}"
        return f"not run ({asked}: {unlearned[asked]})" if asked in unlearned else "not run"
    if all(reasons.values()):
        distinct = sorted({r for r in reasons.values() if r})
        if len(distinct) == 1:
            return f"cannot run here: {distinct[0]}"
        return "cannot run here: " + "; ".join(f"{b}: {reasons[b]}" for b in budgets)
    blocked = [f"{b}: {reasons[b] or unlearned[b]}" for b in budgets if reasons[b] or b in unlearned]
    return "not run" + (f" ({'; '.join(blocked)})" if blocked else "")


def _floor_notes(table: Table, by_group: dict[str, dict[str, Match]], calibrations: Sequence[dict]) -> list[str]:
    """One line per cpu run shown here that has a quality floor (bench.workflows.floors): met, or MISSED with the
    calibration's plateau evidence. Runs with other overrides (a stated ablation, a decoding variant) are not
    the preset's system, so the preset's floor does not judge them; a run that only trains longer (a § row
    past the cap) is the same system at a larger schedule, and is judged, so the reader sees where the floor
    is reached."""
    from bench.workflows.floors import SCHEDULE_SETTINGS, floor_line

    lines: list[str] = []
    for g in table.quality_groups():
        for row in table.rows:
            m = by_group.get(g.id, {}).get(row.id)
            if m is None or m.budget != "cpu":
                continue
            if not set((m.record.get("spec") or {}).get("overrides") or {}) <= SCHEDULE_SETTINGS:
                continue
            line = floor_line(row.label, m.record, calibrations)
            if line and (note := f"cpu floor — {line}") not in lines:
                lines.append(note)
    return lines


def _no_healthy_point(system: str | None, task: str | None, calibrations: Sequence[dict]) -> str | None:
    """Why a cpu cell stays empty when the system's calibration sweep on the task found no healthy point:
    a run at that budget would be degenerate, so its plateau is the evidence the cell points to."""
    from bench.workflows.calibrate import find_summary

    cal = find_summary(calibrations, system, task, "cpu")
    scored = [p for p in (cal or {}).get("points", []) if p.get("score") is not None]
    if cal is None or cal.get("pick") or not scored:
        return None
    best = max(scored, key=lambda p: p["score"])
    lrs = sorted({p["lr"] for p in scored})
    steps = sorted({p["updates"] for p in scored})
    grid = f"lr {'/'.join(f'{lr:g}' for lr in lrs)} × {'/'.join(f'{u:,}' for u in steps)} updates"
    trends = []
    for lr in lrs:  # one learning rate trained for longer: how far its final dev loss moved
        runs = sorted((p for p in scored if p["lr"] == lr and p.get("final_dev_loss") is not None),
                      key=lambda p: p["updates"])
        losses = list(dict.fromkeys((p["updates"], round(p["final_dev_loss"], 2)) for p in runs))
        if len({u for u, _ in losses}) > 1:
            trends.append(f"at lr {lr:g} the final dev loss went "
                          + " → ".join(f"{loss:.2f} ({u:,})" for u, loss in losses))
    distinct = f", {100 * best['distinct_ratio']:.1f} % distinct" if best.get("distinct_ratio") is not None else ""
    return (
        f"no healthy calibration point: {len(scored)} point(s) over {grid}; the best, dev {cal['metric']} "
        f"({cal['recipe']}) {best['score']:.2f} at lr {best['lr']:g} and {best['updates']:,} updates, is "
        f"DEGENERATE{distinct}" + "".join(f"; {t}" for t in trends) + "; the sweep and its dev loss are drawn in "
        f"`reports/calibration-{system}--{task}--cpu.png`, and a run at this budget would not be evidence"
    )


def _system_cell(row: Row, budget: str | None) -> str:
    if budget is not None:
        return row.system_for(budget) or "—"
    main = row.system or "—"
    cpu = row.system_for("cpu")
    if cpu and cpu != row.system:
        return f"{main} (cpu: {cpu})"
    return main


def _context_rows(
    table: Table,
    records: Sequence[dict],
    by_group: dict[str, dict[str, Match]],
    has_section: bool,
    run_notes: list[str],
) -> list[list[str]]:
    """Rows for the harness's reference baselines (copy the source, lead-1) under a paper's rows."""
    out = []
    systems = {CONTEXT_SYSTEMS[g.task] for g in table.quality_groups() if g.task in CONTEXT_SYSTEMS}
    for system, label in sorted(systems):
        cells = ([""] if has_section else []) + [f"{label} {CONTEXT_MARK}", system]
        statuses = []
        for g, c in table.columns():
            rec, partial = None, False
            if g.kind == "quality" and g.task in CONTEXT_SYSTEMS and CONTEXT_SYSTEMS[g.task][0] == system:
                shown = list(by_group.get(g.id, {}).values())
                rec = context_match(records, system, g, shown)
                if rec is None and not shown:
                    rec = _partial_split_match(records, system, g)
                    partial = rec is not None
            value = rec["scores"][g.recipe]["metrics"].get(c.metric) if rec and c.metric else None
            if rec is None or value is None:
                cells.append("")
                continue
            note = f"`{rec['run_id']}`: reference baseline `{system}`, no training; " + _where(rec)
            if partial:
                note += (f"; PARTIAL: split `{rec['spec']['split']}`, a stated part of the table's `{g.split}` split, "
                         "so not comparable with the published numbers above (ranked with like runs on the "
                         f"`{g.task}` board)")
            if note not in run_notes:
                run_notes.append(note)
                statuses.append(f"run [{len(run_notes)}]")
            cells.append(f"– / {fmt_num(value)}" + (" (partial)" if partial else ""))
        if not statuses:
            tasks = sorted(
                {g.task for g in table.quality_groups() if g.task and CONTEXT_SYSTEMS.get(g.task, ("",))[0] == system}
            )
            cells.append(f"not run: `bench run --system {system} --task {tasks[0]} --budget cpu`")
        else:
            cells.append("reference; " + ", ".join(statuses))
        out.append(cells)
    return out


def _partial_split_match(records: Sequence[dict], system: str, group: Group) -> dict | None:
    """The reference baseline's run on a stated partial split of the task (XSum's ``test-available``), for a
    column where nothing else ran: shown labelled partial rather than "not run", never beside runs on the
    table's own split."""
    runs = [
        r for r in records
        if r["spec"]["system"] == system and r["spec"]["task"] == group.task and r["spec"]["split"] != group.split
        and (r.get("data") or {}).get("partial") and group.recipe in r["scores"]
    ]
    return max(runs, key=lambda r: (int((r.get("data") or {}).get("n_examples") or 0), r["run_id"]), default=None)


SUBMITTED_MARK = "(submitted outputs, not a reproduction)"


def _submitted_rows(
    table: Table, records: Sequence[dict], has_section: bool, run_notes: list[str]
) -> list[list[str]]:
    """Rows for outputs made elsewhere (``bench submit``), scored by the table's recipes.

    A submission that names this table and one of its rows (``--paper``/``--row``) stands beside that
    row's published number with Δ; one that names no table is shown under every table with a column
    on its task and split, like the reference baselines. Never in a reproduction cell.
    """
    from bench.store.submissions import is_submission

    out = []
    rows = {r.id: r for r in table.rows}
    for rec in sorted((r for r in records if is_submission(r)), key=lambda r: r["run_id"]):
        sub = rec.get("submission") or {}
        if sub.get("paper") not in (None, table.ref):
            continue
        paper_row = rows.get(sub.get("row") or "") if sub.get("paper") == table.ref else None
        spec = rec["spec"]
        cells: list[str] = []
        shown = False
        for g, c in table.columns():
            recipe = (table.reported_recipe(paper_row, g) if paper_row is not None else g.recipe) or ""
            task, split = table.task_split(paper_row, g) if paper_row is not None else (g.task, g.split)
            score = rec["scores"].get(recipe) if g.kind == "quality" and c.metric else None
            value = score["metrics"].get(c.metric) if score and (task, split) == (spec["task"], spec["split"]) else None
            if value is None:
                cells.append(paper_row.reported.get(c.id, "") if paper_row is not None else "")
                continue
            shown = True
            reported = paper_row.reported.get(c.id, "") if paper_row is not None else ""
            ref = leading_number(reported)
            delta = f" / {fmt_delta(value - ref)}" if ref is not None else ""
            cells.append(f"{reported or '–'} / {fmt_num(value)} (submitted){degenerate_flag(rec)}{delta}")
        if not shown:
            continue
        meta = ", ".join(f"{lit(k)}: {lit(v)}" for k, v in sorted((sub.get("meta") or {}).items()))
        note = (f"{code(rec['run_id'])}: submitted outputs {code(sub.get('name', spec['system']))} scored by the "
                f"harness (outputs sha256 {lit(str(rec['outputs']['sha256'])[:12])}…); {_where(rec)}"
                + (f"; {meta}" if meta else ""))
        run_notes.append(note)
        label = (f"{paper_row.label} — submitted outputs" if paper_row is not None
                 else f"{code(sub.get('name', spec['system']))} {SUBMITTED_MARK}")
        section = [paper_row.section if paper_row is not None else ""] if has_section else []
        out.append(section + [label, "submitted"] + cells + [f"submitted [{len(run_notes)}]"])
    return out


def _where(rec: dict) -> str:
    spec, data = rec["spec"], rec.get("data") or {}
    where = f"task {code(spec['task'])}, split {code(spec['split'])}"
    if data.get("n_examples") is not None:
        where += f", {lit(data['n_examples'])} examples" + (" (first of the split)" if data.get("partial") else "")
    return where


def _ordering_notes(
    table: Table, records: Sequence[dict], by_group: dict[str, dict[str, Match]], orderings: Sequence[dict]
) -> list[str]:
    """The ordering line of each column with three or more reproduced rows, and the line comparing its
    evidence rows with the harness reference baseline (bench.workflows.ordering)."""
    from bench.papers.matching import CONTEXT_SYSTEMS
    from bench.workflows.ordering import (
        MIN_ROWS,
        column_blocks,
        column_metric,
        computed_over,
        entry_key,
        left_out,
        ordering_line,
        reference_line,
        reference_record,
        run_key,
        shown_runs,
    )

    counts = Counter(r.label for r in table.rows)  # rows told apart by another column (MIST Table 6's Iter.)
    labels = {r.id: r.label if counts[r.label] == 1 else f"{r.label} (`{r.id}`)" for r in table.rows}
    out = []
    for whole in table.quality_groups():
        cm = column_metric(whole)
        if cm is None:
            continue
        for g, shown in column_blocks(table, whole, by_group.get(whole.id, {}), cm[0]):
            budgets = {m.budget for m in shown.values()}
            if not shown or len(budgets) != 1:
                continue
            b = budgets.pop()
            prefix = f"{whole.label}: " if len(table.quality_groups()) > 1 else ""
            if g.task != whole.task:  # the rows of another test set in this column (ERNIE-GEN's reversed split)
                prefix += f"`{g.task}` rows: "
            excluded = left_out(shown, table)
            evidence = {row_id: m for row_id, m in shown.items() if row_id not in excluded}
            runs = shown_runs(evidence)
            printed = [r for r in shown if not table.row(r).harness]  # the rows the paper ranks
            ranked_runs = [r for r in runs if not table.row(r).harness]
            data = next(
                (
                    o for o in orderings
                    if (o["paper"], o["table"], o["group"], o["budget"]) == (table.paper, table.id, whole.id, b)
                    and computed_over(o) == runs
                ),
                None,
            )
            command = f"`bench order {table.ref} --budget {b}`"
            if len(printed) >= MIN_ROWS:
                if len(ranked_runs) < MIN_ROWS:
                    why = "; ".join(f"{labels[r]}: {excluded[r]}" for r in printed if r in excluded)
                    out.append(f"{prefix}Ordering not computed: {len(ranked_runs)} of the {len(printed)} reproduced "
                               f"rows are evidence, fewer than {MIN_ROWS} (left out: {why}).")
                elif data is None or data.get("tau_b") is None:
                    out.append(f"{prefix}Ordering not computed for the runs shown: {command}.")
                else:
                    out.append(prefix + ordering_line(data, labels))
            context = CONTEXT_SYSTEMS.get(g.task or "")
            if context is None or not runs:
                continue
            reference = reference_record(records, context, g, list(evidence.values()))
            versus = (data or {}).get("reference")
            same_reference = reference is not None and versus is not None and entry_key(versus) == run_key(reference)
            line = reference_line(data, labels, context[1]) if data is not None and same_reference else None
            if line is not None:
                out.append(prefix + line)
            elif reference is not None:
                out.append(f"{prefix}Not yet compared with `{context[0]}` (paired, same examples): {command}.")
    return out


def _reference_lead(table: Table, records: Sequence[dict], by_group: dict[str, dict[str, Match]]) -> list[str]:
    """One line per quality column where the harness reference baseline (copy the source, lead-1: no training)
    scores above every reproduced row, on the same examples, under the column's recipe and metric (BLEU-4 where
    the column has it): nothing the table reproduces beats copying, which its reader must see first."""
    from bench.papers.matching import scored_examples
    from bench.report.ranking import metric_label
    from bench.workflows.ordering import column_metric

    out = []
    groups = table.quality_groups()
    for g in groups:
        context, cm, shown = CONTEXT_SYSTEMS.get(g.task or ""), column_metric(g), list(by_group.get(g.id, {}).items())
        if context is None or cm is None or not shown or not g.recipe:
            continue
        recipe, metric = g.recipe, cm[1]
        ref = context_match(records, context[0], g, [m for _, m in shown])
        ref_value = ((ref or {}).get("scores", {}).get(recipe) or {}).get("metrics", {}).get(metric)
        if ref is None or ref_value is None:
            continue
        rivals = [(row_id, m, v) for row_id, m in shown
                  if scored_examples(m.record) == scored_examples(ref)
                  and (v := ((m.record["scores"].get(recipe) or {}).get("metrics") or {}).get(metric)) is not None]
        if not rivals or ref_value <= max(v for _, _, v in rivals):
            continue
        row_id, best, value = max(rivals, key=lambda x: (x[2], x[0]))
        label = table.row(row_id).label
        if sum(r.label == label for r in table.rows) > 1:  # rows told apart by another column (MIST Table 6's Iter.)
            label += f" (`{row_id}`)"
        prefix = f"{g.label}: " if len(groups) > 1 and g.label else ""
        out.append(
            f"{prefix}Nothing reproduced here beats {context[1]} (`{context[0]}`, a reference baseline with no "
            f"training): it scores {fmt_num(ref_value)} {metric_label(metric)} under `{recipe}`, above every one of "
            f"the {len(rivals)} reproduced row(s) on the same examples; the best, {label}, scores "
            f"{fmt_num(value)} ({best.budget})."
        )
    return out


def _board_recipe_notes(table: Table, records: Sequence[dict]) -> list[str]:
    """One line per task whose leaderboard ranks by another recipe than this table scores it with: the same
    run then shows two numbers (and a pair two p-values), and neither page may leave the reader to guess why."""
    from bench.papers.matching import recipes_used
    from bench.report.ranking import headline

    tasks = sorted({t for g in table.quality_groups() for row in table.rows
                    if shows_in(row, g) and (t := table.task_split(row, g)[0])})
    out = []
    for task in tasks:
        head = headline(task, [r for r in records if r["spec"]["task"] == task])
        others = [r for r in recipes_used(table, task) if head is not None and r != head.recipe]
        if head is None or not others:
            continue
        out.append(
            f"Leaderboard: `leaderboard-{task}.html` ranks `{task}` runs by {head.label}; this table scores them "
            f"with {', '.join(f'`{r}`' for r in others)} (the paper's protocol), so a run's number here can differ "
            "from the board's, and so can the p-value of a pair and the order it supports."
        )
    return out


def table_key(table: Table) -> str:
    return f"{table.paper}-table{table.id}"


def build_table_view(
    table: Table,
    records: Sequence[dict],
    budget: str | None,
    latency_records: Sequence[dict] = (),
    orderings: Sequence[dict] = (),
    calibrations: Sequence[dict] = (),
) -> TableView:
    """Join one paper table with the records; see the module docstring for the matching rule.

    A table with a speed column reads it from the newest matching latency record (:mod:`.speed`).
    """
    paper = load_paper(table.paper)
    source = speed.find_source(table, latency_records, budget)
    speed_col = speed.speed_column(table)
    budgets = (budget,) if budget else DEFAULT_BUDGETS
    has_section = any(r.section for r in table.rows)
    header = (["Section"] if has_section else []) + ["Model", "System"]
    header += [c.label for _, c in table.columns()] + ["Status"]
    versus_at = None  # where the "vs CT2" column goes: right after the speed column
    if source is not None and speed_col is not None:
        ids = [(g.id, c.id) for g, c in table.columns()]
        versus_at = len(header) - 1 - len(ids) + ids.index(speed_col) + 1
        header.insert(versus_at, speed_ct2.ct2_column(source).header)
    int8 = speed_ct2.int8_timed(source)
    if int8 and versus_at is not None:
        header.insert(versus_at + 1, speed_ct2.INT8_HEADER)
    versus: list[str] = []  # the column's cells of the paper rows
    int8_cells: list[str] = []

    run_notes: list[str] = []
    recipe_rows: dict[tuple[str, str | None, str | None], list[str]] = {}
    row_notes: list[str] = []
    rows_out: list[list[str]] = []
    by_group = {g.id: group_matches(records, table, g, budgets) for g in table.quality_groups()}
    for row in table.rows:
        matches: dict[str, Match] = {}
        statuses: list[tuple[str, str]] = []
        marked = False
        for g in table.quality_groups():
            if not shows_in(row, g):
                continue
            if table.recipe_differs(row, g):
                marked = True
                key = (g.recipe or "", table.reported_recipe(row, g), row.quoted_from or None)
                if row.label not in recipe_rows.setdefault(key, []):
                    recipe_rows[key].append(row.label)
            m = by_group[g.id].get(row.id)
            if m:
                run_notes.append(_run_note(m, table, row, g))
                m.note = len(run_notes)
                matches[g.id] = m
                statuses.append((g.label, f"run [{m.note}]"))
            else:
                statuses.append((g.label, _status(table, row, g, budgets, budget, calibrations)))
        label = row.label + (f" {row.mark}" if row.mark else "") + (f" {RECIPE_MARK}" if marked else "")
        if row.harness:
            label += " §"
            row_notes.append(f"{row.label} §: not in the paper; added by the harness: {row.harness}")
        if row.note and f"{row.label}: {row.note}" not in row_notes:
            row_notes.append(f"{row.label}: {row.note}")
        cells = ([row.section] if has_section else []) + [label, _system_cell(row, budget)]
        first = next(iter(matches.values()), None)
        versus.append(speed_ct2.versus_cell(row.system, source))
        int8_cells.append(speed_ct2.int8_cell(row.system, source))
        for g, c in table.columns():
            reported = row.reported.get(c.id, "")
            if source is not None and source.record is not None and (g.id, c.id) == speed_col:
                cells.append(speed.speed_cell(reported, row, source))
            elif g.kind == "quality" and g.id in matches and c.metric:
                cells.append(
                    quality_cell(reported, matches[g.id], table.reported_recipe(row, g) or "", c.metric)
                )
            elif g.kind == "latency" and first is not None and c.metric:
                cells.append(latency_cell(reported, first, c.metric))
            else:
                cells.append(reported)
        if len({s for _, s in statuses}) <= 1:
            cells.append(statuses[0][1] if statuses else "reported only")
        else:
            cells.append("; ".join(f"{lab}: {s}" for lab, s in statuses))
        rows_out.append(cells)
    if versus_at is not None and source is not None:
        for cells, cell, low in zip(rows_out, versus, int8_cells, strict=True):
            cells.insert(versus_at, cell)
            if int8:
                cells.insert(versus_at + 1, low)
        base_at = next((i for i, r in enumerate(table.rows) if r.system == source.baseline), len(table.rows) - 1)
        section = table.rows[base_at].section if has_section else None
        ct2 = speed_ct2.ct2_row(source, section, versus_at - 1 - (3 if has_section else 2))
        if int8:
            ct2.insert(versus_at + 1, speed_ct2.int8_cell(speed_ct2.CT2_SYSTEM, source))
        rows_out.insert(base_at + 1, ct2)
    tail = _context_rows(table, records, by_group, has_section, run_notes)
    tail += _submitted_rows(table, records, has_section, run_notes)
    if versus_at is not None:
        for cells in tail:
            cells.insert(versus_at, "")
            if int8:
                cells.insert(versus_at + 1, "")
    rows_out += tail

    notes = [f"[{i}] run {text}" for i, text in enumerate(run_notes, 1)]
    if any(DEGENERATE_MARK.upper() in text for text in run_notes):
        notes.append(
            f"{DEGENERATE_MARK}: the run's most frequent output is more than 2 % of its outputs, or its outputs are "
            "less than half as distinct as the references on the same examples; its number is shown but is not "
            "evidence that the system learned (figures in the run's note)."
        )
    for (ours, theirs, quoted), labels in sorted(
        recipe_rows.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))
    ):
        src = f" (quoted from {quoted})" if quoted else ""
        if theirs is None:
            notes.append(
                f"{RECIPE_MARK} The scoring script behind the published number is not stated{src}, so it "
                f"may differ from this table's recipe `{ours}`: {', '.join(labels)}."
            )
        else:
            notes.append(
                f"{RECIPE_MARK} Published number computed with recipe `{theirs}`{src}, not this table's "
                f"`{ours}`; reproduced cells use `{theirs}` so Δ compares like with like: "
                f"{', '.join(labels)}."
            )
    notes += _board_recipe_notes(table, records)
    notes += _ordering_notes(table, records, by_group, orderings)
    notes += _floor_notes(table, by_group, calibrations)
    notes += [f"Row note — {n}" for n in row_notes]
    notes += [f"Paper note — {n}" for n in table.notes]

    scoring = [
        f"{g.label or g.id}: task `{g.task}`, split `{g.split}`, recipe `{g.recipe}`"
        for g in table.quality_groups()
        if g.task
    ]
    preamble = [
        f"Paper: {paper.citation}.",
        f"Reported numbers transcribed from `{paper.source}` into `bench/papers/{table.paper}.yaml`; "
        f"role: {'reproduction target' if table.role == 'reproduce' else 'reported only'}.",
        "Budget: " + (f"`{budget}`." if budget else "best available per row (`paper`, else `cpu`).")
        + (f" Runs whose note says {INPUT_MARK} read a shorter source than the paper's (the note says which)."
           if any(INPUT_MARK in text for text in run_notes) else ""),
        "Cells: reported / reproduced (budget) / Δ = reproduced − reported; rows without a run show the "
        "reported value only, and the Status column says why.",
    ]
    if scoring:
        moved = sorted(
            {(r.section or r.label, r.task or "", r.split or "") for r in table.rows if r.split or r.task}
        )
        for where, task, split in moved:
            scoring.append(
                f"rows of '{where}' use"
                + (f" task `{task}`" if task else "")
                + (f" split `{split}`" if split else "")
            )
        preamble.append("Our scoring: " + "; ".join(scoring) + ".")
    if source is not None:
        preamble.append(speed.speed_preamble(source))
        if versus_at is not None:
            notes.append(speed_ct2.versus_note(source))
            if speed_ct2.int8_timed(source):
                notes.append(speed_ct2.int8_note(source))
    title = f"{paper.short} Table {table.id}: {table.title}"
    reproduced = sum(1 for row in table.rows if any(row.id in by_group[g.id] for g in table.quality_groups()))
    return TableView(
        key=table_key(table), title=title, preamble=preamble, header=header, rows=rows_out, notes=notes,
        lead=_reference_lead(table, records, by_group), reproduced=reproduced,
    )
