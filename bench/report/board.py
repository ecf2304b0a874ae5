"""A task's leaderboard as data: ranked groups of runs, each run with its speed and paper rows.

The HTML (:mod:`bench.report.leaderboard`) only formats what is built here, so the tests can check
the ranking on records without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.report.compute_twins import QualityChange, quality_changes
from bench.report.ranking import Headline, RankedGroup, group_records, headline, rank_group
from bench.report.reproduces import OtherRecipe, PaperRow, RunSpeed, other_recipes, paper_row_links, run_speed
from bench.report.significance import PairedBootstrap, Untestable
from bench.store.pvalues import PValues


@dataclass
class Board:
    """Everything one task's page shows."""

    task: str
    head: Headline | None
    groups: list[RankedGroup]
    speeds: dict[str, RunSpeed]  # run id -> speed-up, where measured
    paper_rows: dict[str, list[PaperRow]]  # run id -> the paper rows it reproduces
    latency_ids: list[str]  # latency records the speeds come from (for the notes)
    other_recipes: list[OtherRecipe]  # paper tables that score this task under another recipe than the board
    #: run id -> its headline against its fp32 twin's, for runs decoded at another compute type (int8)
    quality_changes: dict[str, QualityChange] = field(default_factory=dict)


def settings(spec: dict) -> str:
    """What tells two records of one system apart: its overrides (``--set``)."""
    return " ".join(f"{k}={v}" for k, v in sorted((spec.get("overrides") or {}).items()))


def decoded_with(rec: dict) -> dict[str, str]:
    """How the run's system says it decoded, where its overrides may not say: a CTranslate2 system's compute type
    as run ("default" is int8 on a CPU, float16 on a GPU) and its beam. Read from the record's ``system.config``
    (``describe()``), so an int8 and a float32 run of one system are told apart on every board."""
    config = (rec.get("system") or {}).get("config") or {}
    ct2 = config.get("ctranslate2")
    if not isinstance(ct2, dict):
        return {}
    used = ct2.get("compute_type_used") or ct2.get("compute_type")
    out = {"compute_type": str(used) if used else "not recorded"}
    if config.get("beam") is not None:
        out["beam"] = str(config["beam"])
    return {k: v.replace("`", "'") for k, v in out.items()}


def run_settings(rec: dict) -> str:
    """:func:`settings` of the run's spec, with what :func:`decoded_with` reads from its system in place of a
    setting the overrides leave implicit (or name as "default")."""
    merged = {k: str(v) for k, v in (rec["spec"].get("overrides") or {}).items()} | decoded_with(rec)
    return " ".join(f"{k}={v}" for k, v in sorted(merged.items()))


def display_name(rec: dict) -> str:
    """The system, or a submission's name."""
    if rec.get("kind") == "external":
        return str((rec.get("submission") or {}).get("name", rec["spec"]["system"]))
    return str(rec["spec"]["system"])


def build_board(
    task: str,
    records: Sequence[dict],
    latency_records: Sequence[dict] = (),
    data_dir: Path | None = None,
    test: PairedBootstrap | None = None,
    pvalues: PValues | None = None,
) -> Board:
    """Rank every record of ``task`` (complete records; unscored ones never reach here) by its headline.

    ``test`` defaults to ``bench compare``'s paired bootstrap over the stored outputs."""
    mine = sorted((r for r in records if r["spec"]["task"] == task), key=lambda r: r["run_id"])
    head = headline(task, mine)
    groups: list[RankedGroup] = []
    if head is not None:
        pair = test or PairedBootstrap(head, data_dir, store=pvalues)
        for examples, recs in group_records(mine).items():
            try:
                pair.check_recipe()
                groups.append(rank_group(examples, recs, head, pair.p))
            except Untestable as exc:  # this group is ranked by score alone, and says why
                groups.append(rank_group(examples, recs, head, None, str(exc)))
    speeds = {r["run_id"]: s for r in mine if (s := run_speed(r, latency_records)) is not None}
    lat_ids = sorted({s.latency_id for s in speeds.values() if s.latency_id})
    others = other_recipes(task, head.recipe) if head is not None else []
    changes = quality_changes(mine, head.value) if head is not None else {}
    return Board(task, head, groups, speeds, {r["run_id"]: paper_row_links(r) for r in mine}, lat_ids, others,
                 changes)
