"""``bench calibrate``: a learning-rate × updates sweep on a fixed dev subset, as data and as a plot.

A ``cpu`` preset is a choice (how many updates, which learning rate) that decides whether a
reduced-budget model learns at all; it must be read off measured learning curves, not
estimated. Each grid point is an ordinary run (``bench.runs.pipeline.execute``: resumable, recorded with
its spec, fingerprint, output statistics and training curve) of the system on the first ``dev``
examples of the task's dev split, written under ``results/calibration/``. The sweep itself is a
summary record ``results/calibration/<system>--<task>--<budget>.json`` listing every point
(lr, updates, dev score, distinct ratio, degenerate or not, training time) and the point this
sweep picks: the best dev score among non-degenerate points. Sweeps of one system, task and budget
on the same dev items share the summary whatever their other settings (a decoding sweep next to the
training sweep whose model it decodes, a second source window): each point keeps its sweep's
``overrides``, the summary's ``overrides`` are the ones every point shares, and the pick is taken
over all of them. ``bench table`` draws each summary as
``reports/calibration-<system>--<task>--<budget>.png`` (dev score vs updates, one line per learning
rate and setting; beside it each trained model's dev loss, where a plateau shows).

Budgets still fix updates, batch and examples, never wall time: a preset chosen from a sweep
names the summary that justifies it.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.api.paths import RESULTS_DIR
from bench.runs import Reporter, RunSpec, build_system
from bench.runs.pipeline import execute
from bench.store.calibration import KIND, SCHEMA, best_point, read_summary, write_summary
from bench.store.paths import calibration_dir, calibration_summary_file


def steps_key(system: str) -> str:
    """The override that sets the number of updates (fairseq's recipes call it ``max_update``)."""
    return "max_update" if system.startswith("fairseq_") else "steps"


def dev_split(task: str) -> str:
    from bench.data import TASKS

    splits = TASKS.get(task).splits
    for name in ("dev", "validation", "validation-available"):
        if name in splits:
            return name
    raise ValueError(f"task {task!r} has no dev split to calibrate on (splits: {', '.join(splits)})")


def calibrate(
    system: str,
    task: str,
    lrs: Sequence[float],
    steps: Sequence[int],
    *,
    budget: str = "cpu",
    dev: int = 500,
    recipe: str | None = None,
    metric: str = "bleu4",
    overrides: dict[str, Any] | None = None,
    seed: int = 42,
    results_dir: Path = RESULTS_DIR,
    data_dir: Path | None = None,
    say: Reporter = print,
    progress: Any = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Run (or reuse) every grid point and write the sweep's summary record; returns it."""
    from bench.data import TASKS

    if not lrs or not steps:
        raise ValueError("calibrate needs at least one learning rate and one number of updates")
    task_info = TASKS.get(task)
    recipe = recipe or task_info.default_recipes[0]
    split = dev_split(task)
    out_dir = calibration_dir(results_dir)
    key = steps_key(system)
    grid = [(lr, n, RunSpec(system=system, task=task, split=split, budget=budget,
                            overrides={**(overrides or {}), "lr": lr, key: n}, seed=seed, limit=dev))
            for lr, n in itertools.product(lrs, steps)]
    for _, _, spec in grid:  # every point's settings (ranges, types) before the first one trains
        build_system(spec)
    points = []
    for lr, n, spec in grid:
        say(f"[calibrate] lr {lr:g}, {n} updates: {spec.run_id}")
        rec = execute(spec, results_dir=out_dir, data_dir=data_dir, say=say, progress=progress, device=device)
        points.append(summary_point(rec, lr, n, overrides or {}, recipe, metric))
    summary = {
        "schema": SCHEMA,
        "kind": KIND,
        "system": system,
        "task": task,
        "split": split,
        "budget": budget,
        "dev_examples": dev,
        "seed": seed,
        "recipe": recipe,
        "metric": metric,
        "overrides": overrides or {},
        "created": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "points": sorted(points, key=lambda p: (p["lr"], p["updates"])),
    }
    summary["pick"] = _pick(points)
    merged = _merge(calibration_summary_file(results_dir, system, task, budget), summary)
    path = write_summary(results_dir, merged)
    best = merged["pick"]
    chosen = f"pick lr {best['lr']:g}, {best['updates']} updates" if best else "no healthy point"
    say(f"[calibrate] {path}: {chosen}")
    return merged


def summary_point(
    rec: dict[str, Any], lr: float, updates: int, overrides: dict[str, Any], recipe: str, metric: str
) -> dict[str, Any]:
    """One point of a summary from its run record: the score, the health figures and the training cost."""
    from bench.scoring.output_stats import degeneracy

    score = rec["scores"].get(recipe, {}).get("metrics", {}).get(metric)
    stats = rec.get("output_stats") or {}
    curve = rec.get("training_curve") or {}
    return {
        "lr": lr,
        "updates": updates,
        "overrides": dict(overrides),
        "run_id": rec["run_id"],
        "score": score,
        "distinct_ratio": stats.get("distinct_ratio"),
        "most_frequent_share": stats.get("most_frequent_share"),
        "degenerate": bool(degeneracy(stats)),
        "fit_s": (rec.get("timings") or {}).get("fit_s"),
        "final_train_loss": (curve.get("train_loss") or [[None, None]])[-1][1],
        "final_dev_loss": (curve.get("dev_loss") or [[None, None]])[-1][1],
    }


def _merge(path: Path, new: dict[str, Any]) -> dict[str, Any]:
    """Points from earlier sweeps of the same system/task/budget on the same dev items are kept (a grid
    grows; a decoding or sizing sweep joins the sweep it builds on), each with its own ``overrides``."""
    old = read_summary(path)
    if old is None:
        return new
    same = all(old.get(k) == new[k] for k in ("split", "dev_examples", "seed", "recipe", "metric"))
    if not same:
        return new
    # summaries written before points carried their overrides: the sweep's own
    earlier = [{**p, "overrides": p.get("overrides", old.get("overrides") or {})} for p in old.get("points", [])]
    points = {p["run_id"]: p for p in earlier}
    points.update({p["run_id"]: p for p in new["points"]})
    merged = dict(new, points=sorted(points.values(), key=lambda p: (p["lr"], p["updates"])))
    merged["overrides"] = shared_overrides(merged["points"])
    merged["pick"] = _pick(merged["points"])
    return merged


def shared_overrides(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The overrides every point of a summary was run with."""
    sets = [p.get("overrides") or {} for p in points]
    if not sets:
        return {}
    return {k: v for k, v in sets[0].items() if all(k in o and o[k] == v for o in sets[1:])}


def point_settings(point: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """What sets a point apart from the summary's shared overrides, one ``k=v`` per override."""
    shared = summary.get("overrides") or {}
    own = point.get("overrides", shared)
    return [f"{k}={own[k]}" for k in sorted(own) if shared.get(k, object()) != own[k]]


def point_setting(point: dict[str, Any], summary: dict[str, Any]) -> str:
    """:func:`point_settings` as one label ('' when nothing)."""
    return ", ".join(point_settings(point, summary))


def find_summary(
    summaries: Sequence[dict[str, Any]], system: str | None, task: str | None, budget: str
) -> dict[str, Any] | None:
    """The sweep of ``system`` on ``task`` at ``budget`` among loaded summaries (None when there is none)."""
    return next(
        (s for s in summaries if (s.get("system"), s.get("task"), s.get("budget")) == (system, task, budget)), None
    )


def _pick(points: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The best dev score among non-degenerate points (fewer updates on a tie): the store's rule
    (:func:`bench.store.calibration.best_point`), which every reader of a summary checks."""
    return best_point(points)
