"""``bench table --check --deep``: every number the reports show, derived again from its raw inputs.

Why: ``--check`` proves reports/ is what results/ produces; it cannot see a number edited in results/
itself. This module recomputes, and compares with what is stored:

- every score, CI and output statistic of every run record, from its outputs, its split (checked
  against the sha256 pinned in code) and its recipe (:mod:`bench.runs.rederive`, through ``score_split``);
- every p-value of ``results/significance/pvalues.json`` the leaderboards use, with the paired test from
  the two runs' outputs, and the rank clusters formed again from the recomputed p-values;
- every stored ordering (``bench order``), by :func:`bench.workflows.ordering.compute` without writing;
- every latency aggregate and speed-up, from the stored per-item timings (:mod:`bench.latency.rederive`);
- every sweep cell's rates and speed-up, and every crossover, from its per-batch timings
  (:mod:`bench.latency.rederive_sweep`);
- every calibration point's scores (a run record under ``results/calibration/``) as a run record's, where its
  outputs are kept, and every calibration summary from its points' records (:func:`rederive_calibration`).

Each difference names the file it read (the record's own path, never one rebuilt from its id), and the report
says how many records of each kind it derived again.

Nothing is cached: a cache can be edited into agreement. Records are scored in a process pool (one
METEOR JVM per worker), the slowest first, then the orderings, while this process checks the p-values
and the latencies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.store.differences import Difference, compare_numbers, compare_tree

#: (stage, done, total, what was just finished); stages: "splits", "scores", "p-values", "orderings", "latency"
Progress = Callable[[str, int, int, str], None]


@dataclass
class DeepReport:
    """What the deep check found: differences fail it; notes say what could only be checked partly."""

    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # what was recomputed, by kind

    @property
    def ok(self) -> bool:
        return not self.differences


def _quiet(stage: str, done: int, total: int, what: str) -> None:
    return None


def default_jobs() -> int:
    """Both cores where there are two (the machine's usable CPUs, at most 4: each worker runs a JVM)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    return max(1, min(4, n))


def deep_check(results_dir: Path | str, data_dir: Path | None = None, jobs: int | None = None,
               progress: Progress = _quiet) -> DeepReport:
    """Recompute every score, p-value, rank cluster, ordering, latency aggregate and speed-up under
    ``results_dir``."""
    from bench.store.calibration import load_points, load_summaries
    from bench.store.latency import load_latency_records
    from bench.store.orderings import load_orderings
    from bench.store.records import load_records, require_dir

    report = DeepReport()
    records = load_records(require_dir(results_dir))
    latency = load_latency_records(results_dir)
    orderings = load_orderings(results_dir)
    summaries, points = load_summaries(results_dir), load_points(results_dir)
    kept = [p for p in points if _outputs_kept(p)]  # a point's outputs are not in every copy of results/
    if len(kept) < len(points):
        report.notes.append(f"{len(points) - len(kept)} calibration point record(s) without their outputs file "
                            f"(e.g. {_source(next(p for p in points if p not in kept))}): their scores are not "
                            "derived again (their seal, or their pin as legacy, is checked at load)")
    splits = sorted({(r["spec"]["task"], r["spec"]["split"]) for r in [*records, *kept]})
    report.differences += _verify_splits(splits, data_dir, progress)
    if report.differences:  # every number below would be computed on falsified data
        return report
    scored = [*records, *kept]
    jobs = min(jobs or default_jobs(), max(1, len(scored)))
    todo = sorted(scored, key=lambda r: (-_cost(r), r["run_id"]))  # the slowest first: no long tail at the end
    total = len(scored)
    report.counts["run records"] = sum(r.get("kind", "run") != "external" for r in records)
    report.counts["submissions"] = sum(r.get("kind", "run") == "external" for r in records)
    report.counts["calibration point records"] = len(kept)
    report.counts["scores"] = sum(len(r.get("scores") or {}) for r in scored)
    report.counts["orderings"] = len(orderings)
    report.differences += rederive_calibration(summaries, points)
    report.counts["calibration summaries"] = len(summaries)
    if jobs <= 1:
        counter = [0]
        pending = iter(todo)
        report.differences += _score_records(lambda: next(pending, None), data_dir,
                                             lambda rid: _tick(progress, counter, total, rid))
        report.differences += rederive_pvalues(results_dir, records, latency, data_dir, progress, report)
        for i, o in enumerate(orderings, 1):
            report.differences += rederive_ordering(str(results_dir), o, data_dir)
            progress("orderings", i, len(orderings), _ordering_name(o))
    else:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")  # no fork of this process's threads (progress bar, JVM readers)
        with ctx.Manager() as manager, ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            queue, work = manager.Queue(), manager.Queue()
            for rec in todo:  # each worker takes the next record when it is free: one JVM per worker
                work.put(rec)
            futures = [pool.submit(_score_queued, work, data_dir, queue) for _ in range(jobs)]
            ordered = [pool.submit(rederive_ordering, str(results_dir), o, data_dir) for o in orderings]
            report.differences += rederive_pvalues(results_dir, records, latency, data_dir, progress, report)
            _drain(futures, queue, progress, total)
            for fut in futures:
                report.differences += fut.result()
            for i, fut in enumerate(ordered, 1):
                report.differences += fut.result()
                progress("orderings", i, len(ordered), _ordering_name(orderings[i - 1]))
    report.differences += _latency(latency, records, progress, report)
    report.differences += _sweeps(results_dir, progress, report)
    return report


def _sweeps(results_dir: Path | str, progress: Progress, report: DeepReport) -> list[Difference]:
    """Sweep records (``bench latency --batch-sizes --record``): each cell from its batches."""
    from bench.latency.rederive_sweep import rederive_sweep
    from bench.store.sweeps import load_sweep_records

    sweeps = load_sweep_records(results_dir)
    out: list[Difference] = []
    for i, rec in enumerate(sweeps, 1):
        found = rederive_sweep(rec, _source(rec))
        out += found.differences
        report.notes += found.notes
        progress("latency", i, len(sweeps), str(rec.get("sweep_id")))
    report.counts["sweep records"] = len(sweeps)
    return out


def _tick(progress: Progress, n: list[int], total: int, rid: str) -> None:
    n[0] += 1
    progress("scores", n[0], total, rid)


def _drain(futures: Sequence[Future], queue: Any, progress: Progress, total: int) -> None:
    import queue as queue_mod

    done = 0
    while done < total:
        try:
            rid = queue.get(timeout=0.5)
        except queue_mod.Empty:
            if all(f.done() for f in futures):  # a worker failed: its result() raises below
                break
            continue
        done += 1
        progress("scores", done, total, rid)


def _verify_splits(splits: Sequence[tuple[str, str]], data_dir: Path | None,
                   progress: Progress) -> list[Difference]:
    from bench.runs.rederive import verified_split

    out: list[Difference] = []
    for i, (task, split) in enumerate(splits, 1):
        try:
            verified_split(task, split, data_dir)
        except UserError as exc:
            out.append(Difference(f"{task}/{split}", "split", "the pinned examples", " ".join(str(exc).split())))
        progress("splits", i, len(splits), f"{task}/{split}")
    return out


#: seconds of scoring per example and recipe, for the order records are taken in (never compared with anything):
#: Perl ROUGE-1.5.5 with its 1,000 bootstrap resamples is ~30x the Python metrics and a METEOR alignment
RATE = {"rouge155": 8e-3}
DEFAULT_RATE = 2.5e-4


def _cost(rec: dict) -> float:
    n = int((rec.get("data") or {}).get("n_examples") or 0)
    return n * sum(RATE.get(recipe, DEFAULT_RATE) for recipe in (rec.get("scores") or {}))


def _score_records(take: Callable[[], dict | None], data_dir: Path | None,
                   done: Callable[[str], None]) -> list[Difference]:
    """Score records, taken one at a time until none is left, in one scoring session (one JVM); each split is
    loaded and verified once."""
    from bench.runs.rederive import rederive_scores, verified_split
    from bench.scoring import ScoringSession

    splits: dict[tuple[str, str], Any] = {}
    out: list[Difference] = []
    with ScoringSession() as session:
        while (rec := take()) is not None:
            key = (rec["spec"]["task"], rec["spec"]["split"])
            try:
                if key not in splits:
                    splits[key] = verified_split(*key, data_dir=data_dir)
                out += rederive_scores(rec, splits[key], session)
            except UserError as exc:  # a tool or data error: the record cannot be derived again
                out.append(Difference(_source(rec), "scores", "stored", f"not recomputable: {exc}"))
            done(rec["run_id"])
    return out


def _score_queued(work: Any, data_dir: Path | None, queue: Any) -> list[Difference]:
    """A pool worker: records from the shared ``work`` queue, each finished one reported on ``queue``."""
    import queue as queue_mod

    def take() -> dict | None:
        try:
            return work.get_nowait()
        except queue_mod.Empty:
            return None

    return _score_records(take, data_dir, queue.put)


def rederive_pvalues(results_dir: Path | str, records: Sequence[dict], latency: Sequence[dict] = (),
                     data_dir: Path | None = None,
                     progress: Progress = _quiet, report: DeepReport | None = None) -> list[Difference]:
    """Each leaderboard built twice, from the stored p-values and from p-values recomputed from the runs'
    outputs; every pair's p the clusters use (all pairs, not only neighbours) and every run's rank cluster
    must agree."""
    from bench.report.board import build_board
    from bench.report.leaderboard import leaderboard_tasks
    from bench.store.pvalues import PValues, pvalues_file

    path = pvalues_file(results_dir)
    stored_store = PValues(path)
    tasks = leaderboard_tasks(records)
    out: list[Difference] = []
    pairs = 0
    for i, task in enumerate(tasks, 1):
        stored = build_board(task, records, latency, data_dir, pvalues=stored_store)
        fresh_store = PValues()
        fresh = build_board(task, records, latency, data_dir, pvalues=fresh_store)
        names = _pair_names(fresh)
        for key in sorted(fresh_store.used, key=lambda k: (names.get(k, ("~", k)), k)):
            pairs += 1
            a, b = names.get(key, ("?", "?"))
            out += compare_numbers(f"{path} ({task}: {a} vs {b})", "p (paired bootstrap)",
                                   stored_store.used.get(key), fresh_store.used[key])
        for gs, gf in zip(stored.groups, fresh.groups, strict=True):
            if gs.tested and not gf.tested:  # e.g. a run's outputs are gone: its p-values stand on nothing
                out.append(Difference(f"leaderboard {task} ({gs.name})", "p-values", "stored",
                                      f"not recomputable: {gf.untested_reason}"))
                continue
            for rs, rf in zip(gs.rows, gf.rows, strict=True):
                rid = rs.record["run_id"]
                if rid != rf.record["run_id"]:
                    out.append(Difference(f"leaderboard {task} ({gs.name})", "order", rid, rf.record["run_id"]))
                    break
                if rs.rank != rf.rank:
                    out.append(Difference(f"{rid} on leaderboard {task} ({gs.name})", "rank cluster", rs.rank,
                                          rf.rank))
        progress("p-values", i, len(tasks), task)
    if report is not None:
        report.counts["p-values"] = pairs
    return out


def _pair_names(board: Any) -> dict[str, tuple[str, str]]:
    """p-value key -> the two run ids it tests, over every pair of each tested group of ``board``."""
    from bench.report.significance import PairedBootstrap

    if board.head is None:
        return {}
    test = PairedBootstrap(board.head)
    names: dict[str, tuple[str, str]] = {}
    for group in board.groups:
        if not group.tested:
            continue
        recs = [row.record for row in group.rows]
        for x, a in enumerate(recs):
            for b in recs[x + 1:]:
                try:
                    names.setdefault(test._key(a, b), (str(a["run_id"]), str(b["run_id"])))
                except (KeyError, TypeError):  # a record without outputs or that score: not tested
                    continue
    return names


def _ordering_name(data: dict) -> str:
    return f"{data.get('paper')}:{data.get('table')} {data.get('task')} {data.get('column')} ({data.get('budget')})"


def rederive_ordering(results_dir: str, stored: dict, data_dir: Path | None = None) -> list[Difference]:
    """A stored ordering (``bench order``: τ-b, its interval, each pair's Δ and p, each row against the reference)
    computed again by :func:`bench.workflows.ordering.compute` from the runs' outputs, without writing."""
    from bench.workflows.ordering import compute

    where = f"{_source(stored)} ({_ordering_name(stored)})"
    try:
        fresh = compute(str(stored["paper"]), str(stored["table"]), str(stored["budget"]), results_dir,
                        data_dir, int(stored.get("samples") or 1000), int(stored.get("seed") or 12345),
                        say=lambda _m: None, write=False)
    except (UserError, ValueError, KeyError) as exc:
        return [Difference(where, "ordering", "stored", f"not recomputable: {' '.join(str(exc).split())}")]
    same = [o for o in fresh if (o.get("group"), o.get("task"), o.get("column")) ==
            (stored.get("group"), stored.get("task"), stored.get("column"))]
    if len(same) != 1:
        return [Difference(where, "ordering", "stored", "not produced by `bench order` from these records")]
    return compare_tree(where, stored, same[0], skip=frozenset({"created"}))


def _latency(latency: Sequence[dict], records: Sequence[dict], progress: Progress,
             report: DeepReport) -> list[Difference]:
    """Latency records, then the runs' own measurements (``bench run --latency-n``)."""
    from bench.latency.rederive import rederive_latency, rederive_run_latency

    out: list[Difference] = []
    timed = [r for r in records if r.get("latency")]
    for i, rec in enumerate(latency, 1):
        found = rederive_latency(rec, _source(rec))
        out += found.differences
        report.notes += found.notes
        progress("latency", i, len(latency) + len(timed), str(rec.get("latency_id")))
    for i, rec in enumerate(timed, len(latency) + 1):
        found = rederive_run_latency(rec)
        rid, src = f"{rec.get('run_id')} latency", f"{_source(rec)} latency"  # the file read, not its id
        out += [replace(d, where=src + d.where[len(rid):]) if d.where.startswith(rid) else d
                for d in found.differences]
        report.notes += found.notes
        progress("latency", i, len(latency) + len(timed), str(rec.get("run_id")))
    report.counts["latency records"] = len(latency)
    report.counts["run latencies"] = len(timed)
    return out


def _source(rec: Any) -> str:
    """The file a record was read from (:class:`bench.store.outputs.StoredRecord`), else its id."""
    source = getattr(rec, "source", None)
    return str(source) if source is not None else str(rec.get("run_id") or rec.get("latency_id") or "?")


def _outputs_kept(rec: dict) -> bool:
    from bench.store.records import outputs_file

    path = outputs_file(rec)
    return path is not None and path.is_file()


#: what a summary's point holds that is not a claim: the dev loss curve attached at load from its record
_ATTACHED = frozenset({"dev_loss_curve"})


def rederive_calibration(summaries: Sequence[dict], points: Sequence[dict]) -> list[Difference]:
    """Every calibration summary (``bench calibrate``) derived again from its points' run records: each point's
    settings from its record's spec, its score, health figures and cost as :func:`summary_point` takes them,
    the settings every point shares, and the pick (:func:`bench.store.calibration.best_point`)."""
    from bench.store.calibration import best_point
    from bench.store.records import config_value
    from bench.workflows.calibrate import shared_overrides, steps_key, summary_point

    by_id = {p["run_id"]: p for p in points}
    out: list[Difference] = []
    for summary in summaries:
        where = _source(summary)
        fresh_points = []
        for i, point in enumerate(summary["points"]):
            rec = by_id.get(point["run_id"])
            if rec is None:
                out.append(Difference(where, f"points[{i}]", point["run_id"], "no such run record in its folder"))
                continue
            spec = rec["spec"]
            same = {"system": summary["system"], "task": summary["task"], "split": summary["split"],
                    "budget": summary["budget"], "seed": summary.get("seed"), "limit": summary.get("dev_examples")}
            for key, want in same.items():
                if spec.get(key) != want:
                    out.append(Difference(where, f"points[{i}] ({point['run_id']}) spec.{key}", want, spec.get(key)))
            own = {k: v for k, v in (spec.get("overrides") or {}).items() if k not in ("lr", steps_key(spec["system"]))}
            lr, updates = config_value(rec, "lr"), config_value(rec, "steps", "max_update")  # as the run resolved them
            fresh = summary_point(rec, lr, updates, own, summary["recipe"], summary["metric"])
            stored = {k: v for k, v in point.items() if k not in _ATTACHED}
            stored.setdefault("overrides", summary.get("overrides") or {})  # written before points kept theirs
            out += compare_tree(f"{where} points[{i}] ({point['run_id']})", stored, fresh)
            fresh_points.append(fresh)
        if len(fresh_points) == len(summary["points"]):
            out += compare_tree(where, summary.get("overrides") or {}, shared_overrides(fresh_points), "overrides")
            out += compare_tree(where, summary.get("pick"), best_point(fresh_points), "pick")
    return out
