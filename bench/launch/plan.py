"""A run plan: the jobs a table needs, which must wait for which, and what is already done.

Why dependencies: runs that differ only in decode-only settings (MIST Table 6's ``decode=mist_iter
iterations=3`` rows) share one trained model and one training workdir (:func:`bench.runs.training_workdir`).
Started side by side, each would train that model into the same directory at once; ordered, the
decode-only runs load the checkpoint the first run left. A plan computes this from the systems
themselves (:func:`bench.runs.training_key`; building a system loads no weights), not from the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from bench.runs import RESULTS_DIR, RunSpec, completed_record

JobState = Literal["done", "pending"]


@dataclass(frozen=True)
class Job:
    """One ``bench run`` of the plan.

    ``depends_on``: run ids of jobs whose trained model this job decodes (they must finish first).
    ``estimate_s``: ``timings.total_s`` of a recorded run of the same system, task and budget (None: none).
    """

    spec: RunSpec
    label: str
    depends_on: tuple[str, ...] = ()
    state: JobState = "pending"
    estimate_s: float | None = None

    @property
    def run_id(self) -> str:
        return self.spec.run_id


def plan_table(paper: str, table: str, budget: str, results_dir: Path = RESULTS_DIR,
               done_in: Sequence[Path] = ()) -> list[Job]:
    """The plan of every runnable row of ``paper:table`` at ``budget`` (as `bench reproduce` runs them)."""
    from bench.papers import runnable_rows

    items = [(RunSpec(system=row.system, task=row.task, split=row.split, budget=budget,
                      overrides=dict(row.overrides)), f"{row.row_id}/{row.group}")
             for row in runnable_rows(paper, table, budget)]
    return plan_specs(items, results_dir, done_in)


def plan_specs(items: Iterable[RunSpec | tuple[RunSpec, str]], results_dir: Path = RESULTS_DIR,
               done_in: Sequence[Path] = ()) -> list[Job]:
    """Jobs for explicit specs (optionally labelled), in dependency order; a repeated spec is planned once. A job
    is done when ``results_dir`` or one of ``done_in`` (the committed results, for a plan that writes to the
    workspace) holds its complete, up-to-date record."""
    jobs: dict[str, Job] = {}
    for item in items:
        spec, label = item if isinstance(item, tuple) else (item, f"{item.system}/{item.task}")
        if spec.run_id not in jobs:
            jobs[spec.run_id] = Job(spec=spec, label=label)
    edges = training_edges([job.spec for job in jobs.values()])
    from bench.store.records import load_records

    folders = [Path(results_dir), *(Path(d) for d in done_in if Path(d).is_dir())]
    records = [r for d in folders if d.is_dir() for r in load_records(d)]
    planned = [replace(job, depends_on=edges.get(rid, ()),
                       state="done" if any(completed_record(job.spec, d) is not None for d in folders) else "pending",
                       estimate_s=estimate(job.spec, records))
               for rid, job in jobs.items()]
    return in_dependency_order(planned)


def training_edges(specs: Sequence[RunSpec]) -> dict[str, tuple[str, ...]]:
    """run id -> the run id it must wait for: within each group of specs that train the same model,
    every spec waits for the group's trainer (its first spec without decode-only overrides, of the system
    that owns the model where the group has one (:func:`bench.runs.model_owner`), else its first spec).
    Systems that train nothing share nothing and wait for nothing."""
    from bench.runs import build_system, model_spec, model_workdir

    groups: dict[Path, list[tuple[RunSpec, int]]] = {}
    for spec in specs:
        system = build_system(spec)
        if not system.needs_training:
            continue
        decode_only = bool(set(spec.overrides) & set(system.decode_only_overrides))
        trained, key = model_spec(spec, system)
        rank = 2 * decode_only + (trained.system != spec.system)  # 0: a plain run of the model's owner
        groups.setdefault(model_workdir(trained, key), []).append((spec, rank))
    edges: dict[str, tuple[str, ...]] = {}
    for members in groups.values():
        trainer = min(members, key=lambda member: member[1])[0]  # min keeps the first of equal ranks
        for spec, _ in members:
            if spec.run_id != trainer.run_id:
                edges[spec.run_id] = (trainer.run_id,)
    return edges


def in_dependency_order(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` in their own order, except that a job comes after the jobs it depends on."""
    by_id = {job.run_id: job for job in jobs}
    out: list[Job] = []
    placed: set[str] = set()

    def place(job: Job, path: tuple[str, ...]) -> None:
        if job.run_id in placed:
            return
        if job.run_id in path:
            raise ValueError(f"circular dependency between jobs: {' -> '.join((*path, job.run_id))}")
        for dep in job.depends_on:
            if dep in by_id:
                place(by_id[dep], (*path, job.run_id))
        placed.add(job.run_id)
        out.append(job)

    for job in jobs:
        place(job, ())
    return out


def estimate(spec: RunSpec, records: Sequence[dict[str, Any]]) -> float | None:
    """Seconds a recorded run of the same system, task and budget took (the same overrides preferred,
    the latest record first): a guide to the plan's cost, not a promise."""
    same = [r for r in records if r.get("kind", "run") == "run"
            and (r["spec"]["system"], r["spec"]["task"], r["spec"]["budget"]) == (spec.system, spec.task, spec.budget)
            and isinstance(r.get("timings", {}).get("total_s"), (int, float))]
    if not same:
        return None
    overrides = dict(spec.overrides)
    same.sort(key=lambda r: (r["spec"].get("overrides", {}) == overrides, r.get("created", "")), reverse=True)
    return float(same[0]["timings"]["total_s"])
