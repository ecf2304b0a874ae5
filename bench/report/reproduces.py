"""What a leaderboard row says beside its score: the paper rows the run reproduces, and its speed-up.

A run reproduces a paper row when the paper table would match it to that row (same system — the
row's cpu substitute at the cpu budget —, task, split, budget, overrides and recipe;
:func:`bench.papers.matching.find_matches`). A submission reproduces the row it was submitted for.

A speed-up is never copied: it is the run's own measurement (``bench run`` with latency), else the
one ``bench latency --record`` measured for the architecture of the row the run reproduces (at the
paper's sizes, in the same process as the AR baseline: the number the paper table shows in its
speed column). The second kind is marked, because it times the architecture, not this checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.papers import Row, Table, all_tables, load_paper
from bench.papers.matching import find_matches, recipes_used
from bench.report import speed
from bench.report.timing_label import TimingSetting, timing_setting
from bench.report.views import table_key


@dataclass(frozen=True)
class PaperRow:
    """A row of a paper table, as a leaderboard links to it."""

    anchor: str  # the table's section id in index.html (``mist-table3``)
    table: str  # "MIST Table 3"
    label: str  # the row's label in the paper

    @property
    def short(self) -> str:
        return f"{self.table.replace(' Table ', ' T')}: {self.label}"


@dataclass(frozen=True)
class RunSpeed:
    """A measured speed-up over the AR baseline and where it comes from."""

    mean: float
    ci: tuple[float, float] | None
    own: bool  # measured on this run (True) or on the architecture of its paper row (False)
    valid: bool
    source: str  # one line: machine, mode, record
    latency_id: str | None = None  # the `bench latency --record` record it comes from
    setting: TimingSetting | None = None  # device, threads, weights, batch (:mod:`bench.report.timing_label`)
    verdict: str | None = None  # a paired record's verdict of this speed-up (VALID | INCONCLUSIVE | UNSTABLE | INVALID)
    work: str = ""  # the baseline's passes and FLOPs over the system's, e.g. "passes 9.6×, FLOPs 8.9×"
    baseline: bool = False  # the record's baseline itself: 1.00× by definition, nothing to judge

    @property
    def flag(self) -> str:
        """What a page writes after the number: "(baseline)" for the baseline, nothing for a VALID speed-up, else
        its verdict (INVALID for an older record that was not valid)."""
        if self.baseline:
            return " (baseline)"
        if self.verdict is not None:
            return "" if self.verdict == "VALID" else f" {self.verdict}"
        return "" if self.valid else " INVALID"


def _label(table: Table) -> str:
    return f"{load_paper(table.paper).short} Table {table.id}"


def paper_rows(rec: dict) -> list[tuple[Table, Row]]:
    """Every (table, row) the run reproduces, in table order, each row once."""
    sub = rec.get("submission") or {}
    out: list[tuple[Table, Row]] = []
    for t in all_tables():
        if rec.get("kind") == "external":
            if sub.get("paper") == t.ref and sub.get("row"):  # a row on the submission's own task and split only
                spec = rec.get("spec") or {}
                out += [(t, r) for r in t.rows if r.id == sub["row"]
                        and t.scores_on(r, str(spec.get("task")), str(spec.get("split")))]
            continue
        for row in t.rows:
            if any(find_matches([rec], t, row, g, rec["spec"]["budget"]) for g in t.quality_groups()):
                out.append((t, row))
    return out


def paper_row_links(rec: dict) -> list[PaperRow]:
    return [PaperRow(table_key(t), _label(t), r.label) for t, r in paper_rows(rec)]


def _ci(value: Any) -> tuple[float, float] | None:
    """A stored ``[lo, hi]`` as a pair of floats (None where a record has none)."""
    return (float(value[0]), float(value[1])) if isinstance(value, list) and len(value) == 2 else None


def run_speed(rec: dict, latency_records: Sequence[dict]) -> RunSpeed | None:
    """The run's own speed-up, else the one measured for the architecture of a paper row it reproduces (never for a
    smoke run: a paper-size timing says nothing of a smoke-size model)."""
    lat = rec.get("latency") or {}
    if lat.get("speedup_mean") is not None:
        ci = lat.get("speedup_ci95")
        return RunSpeed(
            float(lat["speedup_mean"]),
            _ci(ci),
            own=True,
            valid=bool(lat.get("valid", True)),
            source=f"this run, timed on {lat.get('device', '?')} against `{lat.get('baseline', '?')}` "
            f"(`{lat.get('signature', '')}`)",
            setting=timing_setting(rec),
        )
    trained = _trained_speed(rec, latency_records)
    if trained is not None:
        return trained
    spec = rec.get("spec") or {}
    if spec.get("budget") == "smoke":
        return None  # a paper row's timing speaks for the trained budgets' models, not for a smoke-size one
    for table, row in paper_rows(rec):
        src = speed.find_source(table, latency_records, None)
        if src is None or src.record is None:
            continue
        hit = speed.timed_as(src.record, row.system)
        sp = (hit[1].get("speedup") or {}) if hit else {}
        if hit and hit[0] == src.baseline and sp.get("mean") is None:  # a paired record's baseline: 1.00x by
            sp = {"mean": 1.0, "mean_ci95": [1.0, 1.0]}  # definition, no speed-up of its own to judge
        if not hit or sp.get("mean") is None:
            continue
        timed, entry = hit
        is_base = timed == src.baseline
        lo_hi = sp.get("mean_ci95")
        alias = f" (timed as `{timed}`)" if timed != row.system else ""
        paired = speed.is_paired(src.record)
        verdict = str(sp.get("verdict")) if paired and sp.get("verdict") else None
        return RunSpeed(
            float(sp["mean"]),
            _ci(lo_hi),
            own=False,
            valid=is_base or (verdict == "VALID" if paired else bool(entry.get("valid", True)
                                                                   and src.record.get("valid", True))),
            verdict=verdict,
            baseline=is_base,
            work=speed.work_text(src.record, str(src.baseline), timed).strip(" ()") if paired else "",
            source=f"`{row.system}`{alias} vs `{src.baseline}` at `{src.record['spec']['budget']}` sizes "
            f"({speed.timing_mode(src.record)}) on {speed.machine(src.record)}: "
            f"`results/latency/{src.record['latency_id']}.json` ({_label(table)}'s speed column)",
            latency_id=src.record["latency_id"],
            setting=timing_setting(src.record),
        )
    return None


#: what a trained timing and the run it is shown for must share, beside the system
_SAME = ("task", "split", "budget")


def _trained_speed(rec: dict, latency_records: Sequence[dict]) -> RunSpeed | None:
    """The run's own model timed by ``bench latency --runs`` (the record's ``spec.runs`` names this run): the
    newest such timing, paired against the trained baseline run it was timed with. Only a timing against an AR
    baseline speaks here: a board's speed column is the speed-up over the AR baseline, so a timing of an int8 model
    against its own float32 one (a NAR baseline) is evidence of another frame, not this column's."""
    run_id, spec = rec.get("run_id"), rec.get("spec") or {}
    hits = [lr for lr in latency_records
            if run_id and run_id in ((lr.get("spec") or {}).get("runs") or {}).values()]
    for lr in sorted(hits, key=lambda r: (str(r.get("created")), str(r.get("latency_id"))), reverse=True):
        runs = lr["spec"]["runs"]
        system = next(s for s, r in runs.items() if r == run_id)
        if (system, *(lr["spec"].get(k) for k in _SAME)) != (spec.get("system"), *(spec.get(k) for k in _SAME)):
            continue  # the store refuses such a record (its run ids are their specs'); a record is never trusted here
        entry, base = lr["systems"].get(system) or {}, lr.get("baseline")
        if ((lr["systems"].get(str(base)) or {}).get("system") or {}).get("family") != "AR":
            continue
        sp = entry.get("speedup") or {}
        is_base = system == base
        if is_base:
            sp = {"mean": 1.0, "mean_ci95": [1.0, 1.0]}
        if sp.get("mean") is None:
            continue
        lo_hi = sp.get("mean_ci95")
        verdict = str(sp.get("verdict")) if speed.is_paired(lr) and sp.get("verdict") else None
        return RunSpeed(
            float(sp["mean"]),
            _ci(lo_hi),
            own=True,
            valid=is_base or verdict == "VALID",
            verdict=None if is_base else verdict,
            baseline=is_base,
            work=speed.work_text(lr, str(base), system).strip(" ()") if speed.is_paired(lr) else "",
            source=f"this run's model vs run `{runs.get(str(base), base)}` (`{base}`), {speed.timing_mode(lr)} on "
            f"{speed.machine(lr)}: `results/latency/{lr['latency_id']}.json`",
            latency_id=lr["latency_id"],
            setting=timing_setting(lr),
        )
    return None


@dataclass(frozen=True)
class OtherRecipe:
    """A paper table that scores a board's task under another recipe than the board ranks by."""

    anchor: str  # the table's section id in index.html
    table: str  # "CopyBERT Table 1"
    recipes: tuple[str, ...]


def other_recipes(task: str, recipe: str) -> list[OtherRecipe]:
    """The paper tables whose cells on ``task`` use a recipe other than ``recipe``, in table order: the same
    run then shows another number there (and its pairs another p), which the board must say."""
    out = []
    for t in all_tables():
        others = tuple(r for r in recipes_used(t, task) if r != recipe)
        if others:
            out.append(OtherRecipe(table_key(t), _label(t), others))
    return out
