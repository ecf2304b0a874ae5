"""Reported numbers of the papers' tables, as data with citations.

Why data and not code: the published numbers are evidence, so they live in one reviewed YAML per
paper (``mist.yaml``, ``copybert.yaml``, ``erniegen.yaml``), each value the string exactly as
printed (``"43.87(+2.17)"``, ``"8.3×"``, ``"N/A"``), and tests check every row against the paper
text. The renderer (:mod:`bench.report`) and ``bench reproduce`` read them through this module.

YAML schema (per paper)::

    paper, short, title, authors, citation, source   # source: path under ../shared/
    defaults.reasons: {name: text}                # reused as "@name" in any `unavailable` map
    tables:
      - id: "1"; title; role: reproduce | reported-only; notes: [..]
        plot: iterations                          # also drawn as metric per decoding iterations
        unavailable: {"*"|paper|cpu|smoke: reason}  # applies to every row
        groups:                                   # column groups, in print order
          - id; label; kind: quality (default) | latency | info
            task; split; recipe                   # quality groups: how our runs are matched/scored
            unavailable: {...}                    # applies to this group's cells
            columns: [{id, label, metric}]        # metric: docs/run-record.md key, `speedup`, `iterations`, or absent
            pareto: metric                        # overlay this group's published points on its task's Pareto plot
        rows:
          - id; label (as printed); anchor (text to find it in the paper, default label); mark ("†")
            section; system (our registry name or null); cpu_system (absent = same as system; null = none)
            task/split (override the groups'); overrides (RunSpec overrides; matched exactly)
            recipes: {group_id: recipe or null}   # recipe behind the *published* number, if not the group's
            quoted_from; note; unavailable: {...}; reported: {column_id: "as printed"}
            harness: why the harness adds this row (an ablation the paper does not print, e.g. a
                     setting a reduced budget needs); such a row has no reported values, runs like
                     any other and is left out of the ordering against the paper

A row whose published number came from another recipe than its group's is "recipe-marked" in tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from bench.api.errors import UserError
from bench.api.reading import UnreadableFile, read_yaml

PAPERS_DIR = Path(__file__).resolve().parent
PAPER_FILES: dict[str, str] = {"mist": "mist.yaml", "copybert": "copybert.yaml", "erniegen": "erniegen.yaml"}
#: Budgets as in bench.api.system.BUDGETS (kept literal here so `bench.papers` never imports `systems`).
BUDGETS: tuple[str, ...] = ("smoke", "cpu", "paper")
GroupKind = Literal["quality", "latency", "info"]
LATENCY_METRICS = ("speedup", "iterations")
#: figures a table may ask for besides the Pareto plots (``plot:``)
PLOTS = ("iterations",)
_ABSENT: Any = object()


class UnknownTableError(UserError, KeyError, ValueError):
    """A table reference (``mist:99``) that names no table of the paper."""


class PaperDataError(UserError, ValueError):
    """A paper YAML is malformed; the message names the file and the table/row."""


@dataclass(frozen=True)
class Column:
    id: str
    label: str
    metric: str | None = None


@dataclass(frozen=True)
class Group:
    id: str
    label: str
    kind: GroupKind
    columns: tuple[Column, ...]
    task: str | None = None
    split: str | None = None
    recipe: str | None = None
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: the metric whose published points this group overlays on its task's speed-quality plot (one group per task)
    pareto: str | None = None


@dataclass(frozen=True)
class Row:
    id: str
    label: str
    anchor: str
    reported: Mapping[str, str]
    system: str | None = None
    cpu_system: str | None = None
    cpu_system_set: bool = False  # True when the YAML names cpu_system (possibly null)
    section: str = ""
    mark: str = ""
    task: str | None = None
    split: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    recipes: Mapping[str, str | None] = field(default_factory=dict)
    quoted_from: str = ""
    note: str = ""
    unavailable: Mapping[str, str] = field(default_factory=dict)
    harness: str = ""  # not in the paper: why the harness adds the row (an ablation)

    def system_for(self, budget: str) -> str | None:
        """The system that stands for this row at ``budget`` (cpu/smoke may use a substitute)."""
        if budget in ("cpu", "smoke") and self.cpu_system_set:
            return self.cpu_system
        return self.system


@dataclass(frozen=True)
class Table:
    paper: str
    id: str
    title: str
    role: str
    groups: tuple[Group, ...]
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: a figure drawn from this table beside the Pareto plots: ``iterations`` (metric per decoding iterations)
    plot: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.paper}:{self.id}"

    def columns(self) -> list[tuple[Group, Column]]:
        return [(g, c) for g in self.groups for c in g.columns]

    def quality_groups(self) -> list[Group]:
        return [g for g in self.groups if g.kind == "quality"]

    def row(self, row_id: str) -> Row:
        for r in self.rows:
            if r.id == row_id:
                return r
        raise KeyError(f"{self.ref}: no row '{row_id}'. Rows: {', '.join(r.id for r in self.rows)}")

    def group(self, group_id: str) -> Group:
        for g in self.groups:
            if g.id == group_id:
                return g
        raise KeyError(f"{self.ref}: no column group '{group_id}'")

    # --- what a row means for one column group -------------------------------------------------
    def task_split(self, row: Row, group: Group) -> tuple[str | None, str | None]:
        return (row.task or group.task, row.split or group.split)

    def scores_on(self, row: Row, task: str, split: str) -> bool:
        """Whether a quality column of ``row`` is on ``task``/``split``: only there can outputs of that split stand
        beside the row's published numbers (a submission naming a row of another task's table is refused)."""
        return any(self.task_split(row, g) == (task, split) for g in self.quality_groups())

    def reported_recipe(self, row: Row, group: Group) -> str | None:
        """Recipe that produced the published number (None = unknown)."""
        return row.recipes[group.id] if group.id in row.recipes else group.recipe

    def recipe_differs(self, row: Row, group: Group) -> bool:
        return group.kind == "quality" and group.id in row.recipes and row.recipes[group.id] != group.recipe

    def unavailable_reason(self, row: Row, group: Group | None, budget: str) -> str | None:
        """Why ``row`` (in ``group``) cannot run here at ``budget``; None when it can."""
        reasons: list[str] = []
        for source in (self.unavailable, group.unavailable if group else {}, row.unavailable):
            for key in (budget, "cpu" if budget == "smoke" else None, "*"):
                if key and key in source and source[key] not in reasons:
                    reasons.append(source[key])
                    break
        if not reasons and row.system_for(budget) is None:
            reasons.append("no system in this harness stands for this row")
        return "; ".join(reasons) if reasons else None


@dataclass(frozen=True)
class Paper:
    key: str
    short: str  # display name, e.g. "ERNIE-GEN"
    title: str
    authors: str
    citation: str
    source: str
    tables: tuple[Table, ...]

    def table(self, table_id: str | int) -> Table:
        tid = str(table_id)
        for t in self.tables:
            if t.id == tid:
                return t
        known = ", ".join(t.id for t in self.tables)
        raise UnknownTableError(f"Paper '{self.key}' has no table '{tid}' in this harness. Tables: {known}.")


@dataclass(frozen=True)
class RowSpec:
    """One runnable (row, column group) of a paper table: what ``bench reproduce`` must run.

    ``metrics`` maps the table's column ids to the record metric keys they show. The run is
    complete for this row when a record has the same system, task, split, budget, overrides and
    holds ``recipe`` in its ``scores``.
    """

    paper: str
    table: str
    row_id: str
    label: str
    group: str
    system: str
    task: str
    split: str
    recipe: str
    budget: str
    metrics: Mapping[str, str]
    overrides: Mapping[str, Any] = field(default_factory=dict)
    substitute_for: str | None = None  # the paper's system when ``system`` is a cpu substitute
    needs_latency: bool = False


# ---------------------------------------------------------------------------------------------
def paper_names() -> list[str]:
    return sorted(PAPER_FILES)


def parse_table_ref(ref: str) -> tuple[str, str]:
    """``"mist:1"`` -> ``("mist", "1")``; also accepts ``mist-table1`` and ``ernie-gen:4``."""
    m = re.fullmatch(r"\s*([A-Za-z-]+?)\s*(?::|-table|-)\s*(\w+)\s*", ref)
    if not m:
        raise UnknownTableError(f"Cannot read table reference '{ref}'. Write it as PAPER:TABLE, e.g. 'mist:1'.")
    return normalize_paper(m.group(1)), m.group(2)


def normalize_paper(name: str) -> str:
    key = name.lower().replace("-", "").replace("_", "")
    if key not in PAPER_FILES:
        import difflib

        close = difflib.get_close_matches(key, PAPER_FILES, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        raise UnknownTableError(f"Unknown paper '{name}'.{hint} Papers: {', '.join(paper_names())}.")
    return key


@cache
def load_paper(name: str) -> Paper:
    """Parse and validate one paper's YAML (cached; the files are part of the package)."""
    key = normalize_paper(name)
    return parse_paper_file(PAPERS_DIR / PAPER_FILES[key], key)


def all_tables() -> list[Table]:
    return [t for p in paper_names() for t in load_paper(p).tables]


def get_table(paper: str, table: str | int) -> Table:
    return load_paper(paper).table(table)


def leading_number(text: str | None) -> float | None:
    """The number a printed cell starts with (``"43.87(+2.17)"`` -> 43.87, ``"8.3×"`` -> 8.3)."""
    if text is None:
        return None
    m = re.match(r"\s*([+-]?\d+(?:\.\d+)?)", text)
    return float(m.group(1)) if m else None


def runnable_rows(paper: str, table: str | int, budget: str = "cpu") -> list[RowSpec]:
    """Every (row, quality column group) of a table that this harness can run at ``budget``.

    Rows with no system, or with an ``unavailable`` reason for the budget, are left out; see
    :meth:`Table.unavailable_reason` for why. The order is the table's print order; a run that
    stands for several rows (MIST Table 6's two single-pass rows) is listed once, at its first row.
    """
    if budget not in BUDGETS:
        raise ValueError(f"Unknown budget '{budget}'. Choose one of: {', '.join(BUDGETS)}.")
    t = get_table(paper, table)
    has_latency = any(g.kind == "latency" for g in t.groups)
    specs: list[RowSpec] = []
    seen: set[tuple] = set()
    for row in t.rows:
        system = row.system_for(budget)
        for g in t.quality_groups():
            task, split = t.task_split(row, g)
            recipe = t.reported_recipe(row, g)
            if system is None or t.unavailable_reason(row, g, budget) or not (task and split and recipe):
                continue
            metrics = {c.id: c.metric for c in g.columns if c.metric}
            if not row.harness and not any(row.reported.get(cid) for cid in metrics):
                continue
            identity = (system, task, split, recipe, tuple(sorted(row.overrides.items())))
            if identity in seen:
                continue
            seen.add(identity)
            specs.append(
                RowSpec(
                    paper=t.paper,
                    table=t.id,
                    row_id=row.id,
                    label=row.label,
                    group=g.id,
                    system=system,
                    task=task,
                    split=split,
                    recipe=recipe,
                    budget=budget,
                    metrics=metrics,
                    overrides=dict(row.overrides),
                    substitute_for=row.system if system != row.system else None,
                    needs_latency=has_latency,
                )
            )
    return specs


# --- parsing ----------------------------------------------------------------------------------
def parse_paper_file(path: Path, key: str) -> Paper:
    """Parse and validate one paper YAML file (``key`` must equal its `paper` field)."""
    try:
        raw = read_yaml(path)
    except UnreadableFile as exc:
        raise PaperDataError(f"{path}: {exc.what}; restore it (`git checkout` it)") from None
    where = str(path)
    if not isinstance(raw, dict):
        raise PaperDataError(f"{where}: top level must be a mapping")
    if raw.get("paper") != key:
        raise PaperDataError(f"{where}: 'paper' must be '{key}', got {raw.get('paper')!r}")
    for k in ("title", "citation", "source", "tables"):
        if not raw.get(k):
            raise PaperDataError(f"{where}: missing '{k}'")
    reasons = dict((raw.get("defaults") or {}).get("reasons") or {})
    tables = tuple(_parse_table(t, key, reasons, where) for t in raw["tables"])
    ids = [t.id for t in tables]
    if len(set(ids)) != len(ids):
        raise PaperDataError(f"{where}: duplicate table ids in {ids}")
    return Paper(
        key=key,
        short=str(raw.get("short", key)),
        title=raw["title"],
        authors=raw.get("authors", ""),
        citation=raw["citation"],
        source=raw["source"],
        tables=tables,
    )


def _reasons(raw: Any, reasons: Mapping[str, str], where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PaperDataError(f"{where}: 'unavailable' must map a budget or '*' to a reason")
    out = {}
    for budget, text in raw.items():
        if budget != "*" and budget not in BUDGETS:
            raise PaperDataError(f"{where}: unavailable key '{budget}' must be '*' or one of {BUDGETS}")
        if isinstance(text, str) and text.startswith("@"):
            if text[1:] not in reasons:
                raise PaperDataError(f"{where}: unknown reason '{text}'; define it under defaults.reasons")
            text = reasons[text[1:]]
        if not isinstance(text, str) or not text:
            raise PaperDataError(f"{where}: empty reason for '{budget}'")
        out[str(budget)] = text
    return out


def _pareto(raw: dict, columns: tuple[Column, ...], where: str) -> str | None:
    """A group's ``pareto`` metric, checked to be one of its columns' metrics and to need a task."""
    metric = raw.get("pareto")
    if metric is None:
        return None
    if metric not in {c.metric for c in columns} or not raw.get("task"):
        raise PaperDataError(f"{where}: group '{raw.get('id')}' has pareto: {metric!r}, which needs a task and one of "
                             f"its columns' metrics ({', '.join(str(c.metric) for c in columns if c.metric)})")
    return str(metric)


def _parse_table(raw: dict, paper: str, reasons: Mapping[str, str], file: str) -> Table:
    tid = str(raw.get("id", ""))
    where = f"{file}: table {tid or '?'}"
    if not tid or not raw.get("title") or raw.get("role") not in ("reproduce", "reported-only"):
        raise PaperDataError(f"{where}: needs id, title and role (reproduce | reported-only)")
    groups = []
    for g in raw.get("groups") or []:
        kind = g.get("kind", "quality")
        if kind not in ("quality", "latency", "info"):
            raise PaperDataError(f"{where}: group '{g.get('id')}' has unknown kind '{kind}'")
        cols = tuple(
            Column(id=str(c["id"]), label=str(c["label"]), metric=c.get("metric")) for c in g["columns"]
        )
        for c in cols:
            if kind == "latency" and c.metric not in LATENCY_METRICS:
                raise PaperDataError(f"{where}: latency column '{c.id}' needs metric speedup or iterations")
        groups.append(
            Group(
                id=str(g["id"]),
                label=str(g.get("label", "")),
                kind=kind,
                columns=cols,
                task=g.get("task"),
                split=g.get("split"),
                recipe=g.get("recipe"),
                unavailable=_reasons(g.get("unavailable"), reasons, f"{where}, group {g['id']}"),
                pareto=_pareto(g, cols, where),
            )
        )
    col_ids = [c.id for g in groups for c in g.columns]
    if len(set(col_ids)) != len(col_ids):
        raise PaperDataError(f"{where}: duplicate column ids in {col_ids}")
    group_ids = {g.id for g in groups}
    rows = []
    for r in raw.get("rows") or []:
        rid = str(r.get("id", ""))
        rwhere = f"{where}, row '{rid}'"
        if not rid or not r.get("label"):
            raise PaperDataError(f"{rwhere}: needs id and label")
        reported = {str(k): str(v) for k, v in (r.get("reported") or {}).items()}
        for k, v in (r.get("reported") or {}).items():
            if not isinstance(v, str):
                raise PaperDataError(f"{rwhere}: reported '{k}' must be quoted as printed, got {v!r}")
        unknown = set(reported) - set(col_ids)
        if unknown:
            raise PaperDataError(f"{rwhere}: reported values for unknown columns {sorted(unknown)}")
        recipes = dict(r.get("recipes") or {})
        if set(recipes) - group_ids:
            raise PaperDataError(f"{rwhere}: recipes name unknown groups {sorted(set(recipes) - group_ids)}")
        harness = str(r.get("harness") or "")
        if harness and (reported or not r.get("system")):
            raise PaperDataError(f"{rwhere}: a harness row (not in the paper) names a system and reports nothing")
        cpu = r.get("cpu_system", _ABSENT)
        rows.append(
            Row(
                id=rid,
                label=str(r["label"]),
                anchor=str(r.get("anchor", r["label"])),
                reported=reported,
                system=r.get("system"),
                cpu_system=r.get("system") if cpu is _ABSENT else cpu,
                cpu_system_set=cpu is not _ABSENT or r.get("system") is not None,
                section=str(r.get("section", "")),
                mark=str(r.get("mark", "")),
                task=r.get("task"),
                split=r.get("split"),
                overrides=dict(r.get("overrides") or {}),
                recipes=recipes,
                quoted_from=str(r.get("quoted_from", "")),
                note=str(r.get("note", "")),
                unavailable=_reasons(r.get("unavailable"), reasons, rwhere),
                harness=harness,
            )
        )
    row_ids = [r.id for r in rows]
    if len(set(row_ids)) != len(row_ids):
        raise PaperDataError(f"{where}: duplicate row ids")
    return Table(
        paper=paper,
        id=tid,
        title=str(raw["title"]),
        role=raw["role"],
        groups=tuple(groups),
        rows=tuple(rows),
        notes=tuple(raw.get("notes") or ()),
        unavailable=_reasons(raw.get("unavailable"), reasons, where),
        plot=_plot(raw.get("plot"), where),
    )


def _plot(value: Any, where: str) -> str | None:
    if value not in (None, *PLOTS):
        raise PaperDataError(f"{where}: plot: {value!r} is not one of {', '.join(PLOTS)}")
    return value


import typing  # noqa: E402

if not typing.TYPE_CHECKING:  # at run time `bench.papers.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
