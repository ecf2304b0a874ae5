"""The cpu budget's quality floors, and whether each recorded run meets its floor or shows a plateau.

A reduced budget is defensible only if its models learn: the project set, per system and task, the
least a ``cpu`` run must score (#18 for Quora, #19 for SQuAD). A floor that a run misses is acceptable
only with the evidence that more of the same training would not reach it: the dev-loss curve of the
calibration point behind the preset. This module turns both into a footnote line, from data only —
the run's own score under the floor's recipe and the calibration record's curve — so nothing in a
table's verdict is typed by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: a dev loss that moved less than this (relative) over the last quarter of the updates is flat
PLATEAU_REL = 0.02

#: a longer schedule whose dev score beats the flat point's by more than this (relative) overrules the flat end
#: too: near the end of a schedule the dev score can move much more than the dev loss (ERNIE-GEN on SQuAD: loss
#: 5.43 -> 5.25, -3.4 %, while nqg BLEU-4 went 10.15 -> 15.58), so the loss alone would call it done too early
SCORE_GAIN_REL = 0.10

#: overrides that only lengthen or shorten training: a run with these alone is still the preset's system
SCHEDULE_SETTINGS = frozenset({"steps", "max_update"})


@dataclass(frozen=True)
class Floor:
    system: str
    task: str
    recipe: str
    value: float
    metric: str = "bleu4"


FLOORS: tuple[Floor, ...] = (
    # Quora (MIST Tables 3 and 6), BLEU-4 under mist-quora
    Floor("fairseq_transformer", "quora", "mist-quora", 15.0),
    Floor("fairseq_cmlm", "quora", "mist-quora", 10.0),
    Floor("fairseq_nat", "quora", "mist-quora", 6.0),
    Floor("encoder_minilm_l6", "quora", "mist-quora", 10.0),
    # SQuAD question generation (CopyBERT Table 1, ERNIE-GEN Table 4, MIST Table 1), BLEU-4 under unilm
    Floor("unilm", "squad_qg", "unilm", 8.5),
    Floor("copybert_selfcopy", "squad_qg", "unilm", 10.0),
    Floor("erniegen_base", "squad_qg", "unilm", 8.5),
    Floor("erniegen_base", "squad_qg_reversed", "unilm", 8.5),
    Floor("encoder_minilm_l6", "squad_qg", "unilm", 3.0),
    Floor("mist_minilm_l6", "squad_qg", "unilm", 3.0),
)


def floor_for(system: str, task: str) -> Floor | None:
    return next((f for f in FLOORS if (f.system, f.task) == (system, task)), None)


def _point_behind(
    points: Sequence[dict[str, Any]], summary: dict[str, Any], rec: dict[str, Any] | None
) -> dict[str, Any]:
    """The sweep point that trained the run's model: the same updates and learning rate as the run's config
    (the pick first, then the best-scoring of them); else the pick; else the longest-trained point."""
    from bench.store.records import config_value

    steps, lr = config_value(rec or {}, "steps", "max_update"), config_value(rec or {}, "lr")
    pick = (summary.get("pick") or {}).get("run_id")
    same = [p for p in points if (p["updates"], p.get("lr")) == (steps, lr)]
    if same:
        return next((p for p in same if p["run_id"] == pick), None) or max(same, key=lambda p: p.get("score") or 0.0)
    return next((p for p in points if p["run_id"] == pick), None) or max(points, key=lambda p: p["updates"])


def _longest_after(points: Sequence[dict[str, Any]], point: dict[str, Any]) -> dict[str, Any] | None:
    """The longest point at ``point``'s learning rate trained past it, or None: a linear decay to zero flattens
    any curve at its end, so only a longer schedule shows whether the flat end was the model's limit or the
    schedule's."""
    longer = [p for p in points if p.get("lr") == point.get("lr") and p["updates"] > point["updates"]]
    return max(longer, key=lambda p: p["updates"]) if longer else None


def _relative_drop(point: dict[str, Any], longer: dict[str, Any]) -> float:
    """How much lower (relative) the longer schedule's final dev loss is than ``point``'s."""
    final, further = point["dev_loss_curve"][-1][1], longer["dev_loss_curve"][-1][1]
    return (final - further) / final


def _score_gain(point: dict[str, Any], longer: dict[str, Any]) -> float:
    """How much higher (relative) the longer schedule's dev score is than ``point``'s (0 when either has none)."""
    a, b = point.get("score"), longer.get("score")
    return (b - a) / a if a and b is not None else 0.0


def plateau_text(summary: dict[str, Any] | None, rec: dict[str, Any] | None = None) -> str:
    """How the dev loss of the model behind ``rec`` moved over the last quarter of its updates (its sweep
    point's ``dev_loss_curve``, as attached by ``bench.store.calibration.load_summaries``), and what a longer schedule
    at the same rate says about a flat end: a dev loss lower by more than the margin (or a dev score higher by
    more than its margin) overrules it, neither confirms it as a plateau, and without one the flat end is
    reported unconfirmed."""
    if not summary:
        return "no calibration record, so no plateau evidence"
    points = [p for p in summary.get("points", []) if p.get("dev_loss_curve")]
    if not points:
        return "its calibration records no dev-loss curve, so no plateau evidence"
    point = _point_behind(points, summary, rec)
    curve = point["dev_loss_curve"]
    last = curve[-1][0]
    start = next(p for p in curve if p[0] >= last * 0.75)
    change = (curve[-1][1] - start[1]) / start[1]
    where = f"`reports/calibration-{summary['system']}--{summary['task']}--{summary['budget']}.png`"
    moved = (
        f"the calibration's dev loss moved {start[1]:.3f} → {curve[-1][1]:.3f} ({100 * change:+.2f} %) over "
        f"updates {start[0]:,}–{last:,}"
    )
    longer = _longest_after(points, point)
    drop = _relative_drop(point, longer) if longer is not None else 0.0
    gain = _score_gain(point, longer) if longer is not None else 0.0
    if longer is not None and (drop > PLATEAU_REL or gain > SCORE_GAIN_REL):
        scores = (
            f" and dev {summary.get('metric', 'score')} {longer['score']:.2f} against {point['score']:.2f}"
            if longer.get("score") is not None and point.get("score") is not None
            else ""
        )
        return (
            f"{moved}, but that is the end of its schedule, not a plateau: the same rate over "
            f"{longer['updates']:,} updates reached dev loss {longer['dev_loss_curve'][-1][1]:.3f} "
            f"({-100 * drop:+.2f} %){scores}, so the budget stops it ({where})"
        )
    if abs(change) < PLATEAU_REL and longer is not None:
        return (
            f"{moved}: a plateau (under {100 * PLATEAU_REL:g} % over the last quarter, and the same rate over "
            f"{longer['updates']:,} updates ended at dev loss {longer['dev_loss_curve'][-1][1]:.3f}, "
            f"{-100 * drop:+.2f} %, with its dev score no more than {100 * SCORE_GAIN_REL:g} % higher; {where})"
        )
    if abs(change) < PLATEAU_REL:
        return (
            f"{moved}: flat (under {100 * PLATEAU_REL:g} % over the last quarter), but no longer schedule at this "
            f"rate shows whether that is a plateau or the end of its decay ({where})"
        )
    return f"{moved}: still moving, so the budget, not a plateau, stops it ({where})"


def floor_line(label: str, rec: dict[str, Any], summaries: Sequence[dict[str, Any]]) -> str | None:
    """``label``'s run against its floor: the score under the floor's recipe, met or MISSED (with the plateau
    evidence when missed); None when the run has no floor or no score under that recipe."""
    system = (rec.get("spec") or {}).get("system", "")
    task = (rec.get("spec") or {}).get("task", "")
    floor = floor_for(system, task)
    if floor is None:
        return None
    score = (rec.get("scores") or {}).get(floor.recipe, {}).get("metrics", {}).get(floor.metric)
    if score is None:
        return None
    n = (rec.get("data") or {}).get("n_examples")
    head = (
        f"{label} (`{system}` on `{task}`): {floor.metric} {score:.2f} under `{floor.recipe}`"
        + (f" on {n:,} examples" if n else "")
        + f", floor {floor.value:g}"
    )
    if score >= floor.value:
        return f"{head}: met"
    from bench.data import TASKS
    from bench.workflows.calibrate import find_summary

    summary = find_summary(summaries, system, task, "cpu")
    base = TASKS.get(task).train_from if task in TASKS else None
    if summary is None and base:  # a task trained on another's split (squad_qg_reversed): that task's sweep
        summary = find_summary(summaries, system, base, "cpu")
    return f"{head}: MISSED — {plateau_text(summary, rec)}"
