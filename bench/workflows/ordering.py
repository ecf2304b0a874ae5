"""Does the paper's ranking of its rows survive a reduced budget? (``bench order``)

At a reduced budget the absolute Δ to a published number says little; whether the paper's order
of its rows holds says a lot. For one table column with three or more reproduced rows (over the
same test examples) this computes Kendall's τ-b between the reported and the reproduced values,
a 95 % interval from one item bootstrap shared by every row (each resample re-ranks all rows),
and for every adjacent pair in the paper's order the reproduced difference with its paired
bootstrap p-value. A column whose task has a harness reference baseline (``copy_source``,
``lead1``) scored on the same examples also gets every evidence row compared with it, paired
(even with fewer than three rows): a model that does not beat copying its input has not learned the
task, whatever its score. Scoring re-reads each run's stored outputs (checked by sha256), so the
result is data: ``results/ordering/<paper>-table<N>--<group>--<budget>.json``, named by the run ids
it used and the sha256 of each one's outputs. ``bench table`` prints it as the table's ordering and
reference lines while those runs, with those outputs, are still the ones shown, and says how to recompute
it when they are not; ``bench table --check`` fails on an ordering whose runs were re-run since (a re-run
under the same spec keeps its run id but not its outputs).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from bench.api.paths import RESULTS_DIR
from bench.store.orderings import KIND, remove_ordering, write_ordering
from bench.store.paths import ordering_file

MIN_ROWS = 3
SAMPLES = 1000
SEED = 12345


def kendall_tau_b(x: Sequence[float], y: np.ndarray) -> np.ndarray:
    """τ-b of ``x`` against each row of ``y`` (shape [samples, n] or [n]); ties count in neither."""
    y2 = np.atleast_2d(np.asarray(y, dtype=float))
    xs = np.asarray(x, dtype=float)
    pairs = list(combinations(range(len(xs)), 2))
    sx = np.sign([xs[i] - xs[j] for i, j in pairs])
    sy = np.sign(np.stack([y2[:, i] - y2[:, j] for i, j in pairs], axis=1))
    num = (sx[None, :] * sy).sum(axis=1)
    den = np.sqrt(np.count_nonzero(sx) * np.count_nonzero(sy, axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, num / den, np.nan)
    return tau if np.ndim(y) > 1 else tau[:1]


def column_metric(group: Any) -> tuple[str, str] | None:
    """(column id, metric) the ordering is computed on: BLEU-4 where the group has it, else its first metric."""
    cols = [c for c in group.columns if c.metric]
    if not cols:
        return None
    best = next((c for c in cols if c.metric == "bleu4"), cols[0])
    return best.id, best.metric


def compute(
    paper: str,
    table_id: str,
    budget: str,
    results_dir: Path | str = RESULTS_DIR,
    data_dir: Path | None = None,
    samples: int = SAMPLES,
    seed: int = SEED,
    say: Any = print,
    write: bool = True,
) -> list[dict[str, Any]]:
    """Write one record per column with three or more evidence rows, or with a reference baseline run over
    its evidence rows' examples; returns them."""
    from bench.papers import get_table, leading_number
    from bench.papers.matching import CONTEXT_SYSTEMS, group_matches, scored_examples
    from bench.runs.lookup import outputs_of, split_of
    from bench.scoring import ScoringSession, score_split
    from bench.store.records import load_records

    table = get_table(paper, table_id)
    records = load_records(results_dir)
    written = []
    for whole in table.quality_groups():
        cm = column_metric(whole)
        if cm is None:
            continue
        col, metric = cm
        for group, matches in column_blocks(table, whole, group_matches(records, table, whole, (budget,)), col):
            excluded = left_out(matches, table)
            for r, why in excluded.items():
                say(f"[order] {table.ref} {group.id}: {matches[r].record['run_id']} left out ({why})")
                del matches[r]
            block = block_id(whole, group)
            path = ordering_file(results_dir, paper, table_id, block, budget)
            context = CONTEXT_SYSTEMS.get(group.task or "")
            reference = reference_record(records, context, group, list(matches.values()))
            if len(matches) < MIN_ROWS and (reference is None or not matches):
                # an earlier ordering over runs that no longer count
                if write and remove_ordering(results_dir, paper, table_id, block, budget):
                    say(f"[order] {path}: removed (fewer than {MIN_ROWS} rows are evidence now, and no reference)")
                continue
            if len({scored_examples(m.record) for m in matches.values()}) != 1:
                say(f"[order] {table.ref} {group.id}: the shown runs are over different examples; skipped")
                continue
            published = {r: leading_number(table.row(r).reported.get(col)) for r in matches}
            # the paper's order over the rows it prints; harness rows (ablations, no number) only meet the reference
            ranked_rows = sorted((r for r in matches if published[r] is not None), key=lambda r: -(published[r] or 0.0))
            rows = ranked_rows + sorted(r for r in matches if published[r] is None)
            reported = [float(published[r] or 0.0) for r in ranked_rows]
            recipes: dict[str, str] = {}
            for r in rows:
                recipe = table.reported_recipe(table.row(r), group)
                if recipe is None:
                    raise ValueError(f"{table.ref} {group.id}: row {r} names no recipe; the papers file must give one")
                recipes[r] = recipe
            stats, ref_stats = {}, {}
            with ScoringSession() as session:
                for r in rows:
                    rec = matches[r].record
                    say(f"[order] {table.ref} {group.id}: scoring {rec['run_id']} ({recipes[r]})")
                    scores = score_split(recipes[r], outputs_of(rec), split_of(rec, data_dir), session, bootstrap=0)
                    stats[r] = scores.item_stats[metric]
                for recipe in sorted({recipes[r] for r in rows}) if reference is not None else ():
                    say(f"[order] {table.ref} {group.id}: scoring reference {reference['run_id']} ({recipe})")
                    scores = score_split(recipe, outputs_of(reference), split_of(reference, data_dir), session,
                                         bootstrap=0)
                    ref_stats[recipe] = scores.item_stats[metric]
            values = {r: stats[r].value() * 100 for r in rows}
            ranked = _ranking(ranked_rows, reported, stats, values, published, samples, seed)
            versus = _versus(reference, rows, recipes, stats, ref_stats, samples, seed) if reference else None
            out = {
                "kind": KIND,
                "paper": paper,
                "table": table_id,
                "group": whole.id,
                "task": group.task,
                "budget": budget,
                "column": col,
                "metric": metric,
                "rows": [
                    {
                        "row": r,
                        "label": table.row(r).label,
                        "run_id": matches[r].record["run_id"],
                        "outputs_sha256": matches[r].record["outputs"]["sha256"],
                        "reported": published[r],
                        "reproduced": round(values[r], 4),
                    }
                    for r in rows
                ],
                "excluded": [{"row": r, "label": table.row(r).label, "why": why} for r, why in excluded.items()],
                **ranked,
                "reference": versus,
                "samples": samples,
                "seed": seed,
                "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            }
            if write:
                tau = f"τ-b {out['tau_b']:+.2f} {out['tau_ci95']}" if out["tau_b"] is not None else "no ordering"
                kept = unchanged_ordering(results_dir, out, block)  # only the time would change: left as it is
                path = kept or write_ordering(results_dir, out, block)
                say(f"[order] {path}: {tau}" + (f", {len(rows)} row(s) vs {versus['system']}" if versus else "")
                    + (" (unchanged)" if kept else ""))
            written.append(out)
    return written


def unchanged_ordering(results_dir: Path | str, out: dict[str, Any], block: str) -> Path | None:
    """The stored ordering of ``block`` when it says what ``out`` says but for its ``created`` time and the digest
    that seals it (so a command run again on the same records leaves the committed file byte-identical), else None."""
    from bench.store.orderings import read_ordering
    from bench.store.paths import ordering_file

    path = ordering_file(results_dir, out["paper"], out["table"], block, out["budget"])
    if not path.is_file():
        return None
    try:
        stored = read_ordering(path)
    except (OSError, ValueError):
        return None  # unreadable or invalid: written again
    import json

    def content(data: dict[str, Any]) -> str:  # as written (tuples are lists in JSON), less the time and the seal
        return json.dumps({k: v for k, v in data.items() if k not in ("created", "digest")}, sort_keys=True,
                          default=str)

    return path if content(stored) == content(out) else None  # json.dumps writes tuples as lists, as the file has


def _ranking(
    rows: list[str], reported: list[float], stats: dict[str, Any], values: dict[str, float],
    published: dict[str, float | None], samples: int, seed: int,
) -> dict[str, Any]:
    """Kendall τ-b (with its bootstrap interval) between the paper's order of ``rows`` and the reproduced
    values, and each adjacent pair's paired test; empty below :data:`MIN_ROWS` rows."""
    from bench.scoring.resample import bootstrap_values, ci95, paired_bootstrap

    ranked: dict[str, Any] = {"tau_b": None, "tau_ci95": None, "pairs": []}
    if len(rows) < MIN_ROWS:
        return ranked
    boot = bootstrap_values({r: stats[r] for r in rows}, samples, seed)
    taus = kendall_tau_b(reported, np.stack([boot[r] for r in rows], axis=1) * 100)
    ranked["tau_b"] = round(float(kendall_tau_b(reported, np.asarray([values[r] for r in rows]))[0]), 4)
    ranked["tau_ci95"] = [round(x, 4) for x in ci95(taus[~np.isnan(taus)])]
    for a, b in zip(rows, rows[1:], strict=False):
        ranked["pairs"].append(
            {
                "higher": a,
                "lower": b,
                "reported_delta": round(float(published[a] or 0.0) - float(published[b] or 0.0), 4),
                "reproduced_delta": round((stats[a].value() - stats[b].value()) * 100, 4),
                "p_bootstrap": paired_bootstrap(stats[b], stats[a], samples, seed),
            }
        )
    return ranked


def _versus(
    reference: dict[str, Any], rows: list[str], recipes: dict[str, str], stats: dict[str, Any],
    ref_stats: dict[str, Any], samples: int, seed: int,
) -> dict[str, Any]:
    """Each row against the reference baseline over the same examples (paired bootstrap)."""
    from bench.scoring.resample import paired_bootstrap

    return {
        "system": reference["spec"]["system"],
        "run_id": reference["run_id"],
        "outputs_sha256": reference["outputs"]["sha256"],
        "rows": [
            {
                "row": r,
                "recipe": recipes[r],
                "reference_value": round(ref_stats[recipes[r]].value() * 100, 4),
                "delta": round((stats[r].value() - ref_stats[recipes[r]].value()) * 100, 4),
                "p_bootstrap": paired_bootstrap(ref_stats[recipes[r]], stats[r], samples, seed),
            }
            for r in rows
        ],
    }


def reference_record(records: Any, context: tuple[str, str] | None, group: Any, shown: Sequence[Any]) -> Any:
    """The harness reference baseline's record over exactly the examples of the ``shown`` runs, or None."""
    from bench.papers.matching import context_match, scored_examples

    if context is None or not shown:
        return None
    ref = context_match(records, context[0], group, shown)
    if ref is None or {scored_examples(ref)} != {scored_examples(m.record) for m in shown}:
        return None
    return ref


def not_evidence(rec: dict[str, Any]) -> str | None:
    """Why a run cannot stand for its row in an ordering (degenerate outputs, or a stale record), or None."""
    from bench.runs import record_stale_reason
    from bench.scoring.output_stats import degeneracy

    if degeneracy(rec.get("output_stats") or {}):
        return "degenerate outputs"
    if record_stale_reason(rec):
        return "stale: made under another preset"
    return None


def left_out(matches: dict[str, Any], table: Any) -> dict[str, str]:
    """The shown rows an ordering leaves out -> why: runs that are not evidence (:func:`not_evidence`), then
    rows that decode another evidence row's model (:func:`duplicate_rows`); `bench order` and the table
    note both decide with this."""
    excluded = {r: why for r, m in matches.items() if (why := not_evidence(m.record))}
    excluded.update(duplicate_rows({r: m for r, m in matches.items() if r not in excluded}, table))
    return excluded


def duplicate_rows(matches: dict[str, Any], table: Any) -> dict[str, str]:
    """Rows whose run decoded another shown row's model into exactly its outputs -> why they are left out:
    one model under two names (a variant that resolves to another's settings at this budget,
    bench.runs.model_owner) is one system, and ranking it twice would count a tie by construction as
    evidence. The row whose system trained the model stays."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for r, m in matches.items():
        model = m.record.get("model") or {}
        same = (str(model.get("training_key")), str(model.get("workdir")), m.record["outputs"]["sha256"])
        groups.setdefault(same, []).append(r)
    out: dict[str, str] = {}
    for rows in groups.values():
        if len(rows) < 2:
            continue
        owner = next((r for r in rows if _trained_own_model(matches[r].record)), rows[0])
        for r in rows:  # rows the paper prints twice over one run (MIST Table 6's 1-iteration rows) stay
            if matches[r].record["run_id"] != matches[owner].record["run_id"]:
                out[r] = f"the same outputs as '{table.row(owner).label}': one model, ranked once"
    return out


def _trained_own_model(rec: dict[str, Any]) -> bool:
    return Path(str((rec.get("model") or {}).get("workdir", ""))).name.startswith(f"{rec['spec']['system']}--")


def run_key(rec: dict[str, Any]) -> tuple[str, str]:
    """(run id, outputs sha256) of a run record: a same-spec re-run keeps the id but not the outputs."""
    return rec["run_id"], rec["outputs"]["sha256"]


def entry_key(entry: dict[str, Any]) -> tuple[str, str]:
    """(run id, outputs sha256) an ordering's row or reference entry names (the hash is empty in an entry
    written before it was stored, so such an entry matches no run)."""
    return entry["run_id"], entry.get("outputs_sha256", "")


def shown_runs(matches: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """row -> :func:`run_key`: what an ordering must have been computed over to stand for ``matches``."""
    return {r: run_key(m.record) for r, m in matches.items()}


def computed_over(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """row -> :func:`entry_key`: what an ordering record was computed over."""
    return {r["row"]: entry_key(r) for r in data["rows"]}


def stale_orderings(orderings: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[str]:
    """One line per ordering record that no longer describes the runs it names: a run re-run since (its
    outputs changed under the same run id) or deleted, its reference baseline likewise. ``bench table
    --check`` fails on these, because the table would silently stop printing the ordering."""
    outputs = dict(run_key(rec) for rec in records if "outputs" in rec)
    problems = []
    for data in orderings:
        named = [entry_key(r) for r in data["rows"]] + ([entry_key(data["reference"])] if data.get("reference") else [])
        why = [
            f"{run} {_why_stale(run, sha, outputs)}" for run, sha in dict.fromkeys(named) if outputs.get(run) != sha
        ]
        if why:
            problems.append(
                f"- ordering {data['paper']} table {data['table']} ({data['group']}, `{data.get('task')}`, "
                f"{data['budget']}): "
                + "; ".join(why)
                + f"; recompute it: `bench order {data['paper']}:{data['table']} --budget {data['budget']}`"
            )
    return problems


def _why_stale(run: str, sha: str, outputs: dict[str, str]) -> str:
    if run not in outputs:
        return "no longer exists"
    return "was re-run since (its outputs changed)" if sha else "has no outputs hash in it (an older record)"


def column_blocks(
    table: Any, group: Any, matches: dict[str, Any], column: str
) -> list[tuple[Any, dict[str, Any]]]:
    """The matches of rows that count in ``column`` (:func:`in_column`), split by the test set they are
    scored on: ERNIE-GEN Table 4's column holds the Du split's rows and the reversed split's, which no
    order or paired test may mix. Each block is the group with its task and split (the group itself for
    the rows that use the group's), in print order."""
    from dataclasses import replace

    blocks: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row_id, m in matches.items():
        if not in_column(table.row(row_id), column):
            continue
        blocks.setdefault(table.task_split(table.row(row_id), group), {})[row_id] = m
    return [
        (group if (task, split) == (group.task, group.split) else replace(group, task=task, split=split), part)
        for (task, split), part in blocks.items()
    ]


def block_id(group: Any, block: Any) -> str:
    """The ordering record's name for a block: the group's id, plus the task where the block has its own."""
    return group.id if block.task == group.task else f"{group.id}--{block.task}"


def in_column(row: Any, column: str) -> bool:
    """Whether a row's run counts in a column's comparisons: the paper prints a number for it there (it is
    ranked), or the harness added the row (compared with the reference baseline only)."""
    from bench.papers import leading_number

    return leading_number(row.reported.get(column)) is not None or bool(row.harness)


def ordering_line(data: dict[str, Any], labels: dict[str, str]) -> str:
    """The table note: τ-b with its interval and each adjacent pair's verdict."""
    parts = []
    for p in data["pairs"]:
        hi, lo = labels.get(p["higher"], p["higher"]), labels.get(p["lower"], p["lower"])
        held = "holds" if p["reproduced_delta"] > 0 else "reversed" if p["reproduced_delta"] < 0 else "tied"
        sig = "significant" if p["p_bootstrap"] < 0.05 else "not significant"
        parts.append(f"{hi} > {lo}: {held} ({p['reproduced_delta']:+.2f}, p = {p['p_bootstrap']:.3f}, {sig})")
    lo_ci, hi_ci = data["tau_ci95"]
    left_out = [f"{labels.get(e['row'], e['label'])} ({e['why']})" for e in data.get("excluded", [])]
    if left_out:
        parts.append("left out, not evidence: " + ", ".join(left_out))
    n_ranked = sum(r.get("reported", 0) is not None for r in data["rows"])
    return (
        f"Ordering ({data['budget']}, {data['metric']}, {n_ranked} rows): Kendall τ-b between the paper's "
        f"and the reproduced order {data['tau_b']:+.2f} (95% bootstrap interval {lo_ci:+.2f} to {hi_ci:+.2f}); "
        + "; ".join(parts)
        + "."
    )


def reference_line(data: dict[str, Any], labels: dict[str, str], reference_label: str) -> str | None:
    """The table note comparing each evidence row with the harness reference baseline (paired), or None."""
    versus = data.get("reference")
    if not versus or not versus.get("rows"):
        return None
    parts = []
    for r in versus["rows"]:
        where = "above" if r["delta"] > 0 else "below" if r["delta"] < 0 else "tied with"
        sig = "significant" if r["p_bootstrap"] < 0.05 else "not significant"
        parts.append(f"{labels.get(r['row'], r['row'])}: {where} it ({r['delta']:+.2f}, p = {r['p_bootstrap']:.3f}, "
                     f"{sig})")
    values = sorted({f"{r['reference_value']:.2f} ({r['recipe']})" for r in versus["rows"]})
    return (
        f"Versus {reference_label} (`{versus['system']}`, {data['metric']} {', '.join(values)} on the same examples; "
        f"paired bootstrap, {data.get('budget')} runs): " + "; ".join(parts) + "."
    )
