"""The cpu floors: a run meets its floor, or its footnote shows the calibration's dev loss (plateau or not)."""

from __future__ import annotations

from typing import Any


def _rec(system: str, task: str, score: float, overrides: dict | None = None) -> dict[str, Any]:
    return {
        "spec": {"system": system, "task": task, "overrides": overrides or {}},
        "scores": {"unilm": {"metrics": {"bleu4": score}}},
        "data": {"n_examples": 2000},
    }


def _summary(task: str, curve: list[list[float]]) -> dict[str, Any]:
    point = {"run_id": "p", "updates": int(curve[-1][0]), "dev_loss_curve": curve}
    return {"system": "unilm", "task": task, "budget": "cpu", "points": [point], "pick": {"run_id": "p"}}


FLAT = [[100, 6.0], [1800, 3.70], [2100, 3.66], [2400, 3.65]]
FALLING = [[100, 6.0], [1800, 4.00], [2100, 3.80], [2400, 3.60]]


def test_a_run_at_or_above_its_floor_is_met_and_one_below_shows_its_plateau() -> None:
    from bench.workflows.floors import floor_line

    assert floor_line("UniLM", _rec("unilm", "squad_qg", 8.5), []).endswith("floor 8.5: met")
    missed = floor_line("UniLM", _rec("unilm", "squad_qg", 8.06), [_summary("squad_qg", FLAT)])
    assert "bleu4 8.06 under `unilm` on 2,000 examples, floor 8.5: MISSED" in missed
    assert "3.700 → 3.650 (-1.35 %) over updates 1,800–2,400: flat (under 2 % over the last quarter), but no " \
        "longer schedule at this rate shows whether that is a plateau or the end of its decay" in missed
    assert "`reports/calibration-unilm--squad_qg--cpu.png`" in missed
    moving = floor_line("UniLM", _rec("unilm", "squad_qg", 8.06), [_summary("squad_qg", FALLING)])
    assert "(-10.00 %)" in moving and "still moving, so the budget, not a plateau, stops it" in moving
    assert "no calibration record" in floor_line("UniLM", _rec("unilm", "squad_qg", 1.0), [])


def test_the_reversed_split_is_judged_by_the_forward_models_curve_and_unfloored_runs_pass() -> None:
    from bench.workflows.floors import floor_line

    reversed_ = floor_line("ERNIE-GEN", _rec("erniegen_base", "squad_qg_reversed", 5.0),
                           [{**_summary("squad_qg", FLAT), "system": "erniegen_base"}])
    assert "flat (under 2 %" in reversed_ and "calibration-erniegen_base--squad_qg--cpu.png" in reversed_
    assert floor_line("Copy", _rec("copy_source", "squad_qg", 7.0), []) is None
    assert floor_line("UniLM", {**_rec("unilm", "squad_qg", 9.0), "scores": {}}, []) is None


def test_the_tables_judge_the_presets_run_not_an_ablation() -> None:
    """A cpu run shown in CopyBERT Table 1 gets its floor line; a run with overrides (an ablation, a
    decoding variant) is not the preset's and is not judged by its floor; a paper-budget run neither; a run
    that only trains longer (a § row past the cap) is the preset's system and is judged."""
    from bench.papers import get_table
    from bench.papers.matching import Match
    from bench.report.views import _floor_notes

    table = get_table("copybert", "1")
    group = table.quality_groups()[0]
    row = next(r for r in table.rows if r.system_for("cpu") == "unilm")

    def notes(rec: dict, budget: str = "cpu") -> list[str]:
        return _floor_notes(table, {group.id: {row.id: Match(rec, budget, 1)}}, [_summary(group.task, FLAT)])

    (line,) = notes(_rec("unilm", group.task, 8.06))
    assert line.startswith(f"cpu floor — {row.label} (`unilm` on `squad_qg`)") and "MISSED" in line
    assert notes(_rec("unilm", group.task, 8.06, {"noise_prob": 0.0})) == []
    assert notes(_rec("unilm", group.task, 8.06, {"noise_prob": 0.0, "steps": 6000})) == []
    (longer,) = notes(_rec("unilm", group.task, 8.6, {"steps": 6000}))  # only trains longer: still judged
    assert longer.endswith("floor 8.5: met"), longer
    assert notes(_rec("unilm", group.task, 8.06), budget="paper") == []


def _point(run_id: str, curve: list[list[float]], score: float, lr: float = 1e-4) -> dict[str, Any]:
    return {"run_id": run_id, "updates": int(curve[-1][0]), "lr": lr, "score": score, "dev_loss_curve": curve}


LONGER = [[100, 6.0], [2700, 3.54], [3300, 3.48], [3600, 3.46]]


def test_a_longer_schedule_that_went_lower_overrules_a_flat_end() -> None:
    """A linear decay to zero flattens every curve at its end: the plateau verdict stands only if the same rate
    trained longer did not go lower (without a longer point a flat end is reported unconfirmed). The run is
    judged by the point that trained its model (its config's updates and rate), not by the sweep's pick."""
    from bench.workflows.floors import floor_line

    summary = {"system": "erniegen_base", "task": "squad_qg", "budget": "cpu", "metric": "bleu4",
               "points": [_point("p", FLAT, 8.53), _point("q", LONGER, 10.0), _point("r", FALLING, 7.0, lr=2e-4)],
               "pick": {"run_id": "q"}}
    run = {**_rec("erniegen_base", "squad_qg", 5.42), "system": {"config": {"steps": 2400, "lr": 1e-4}}}
    line = floor_line("ERNIE-GEN", run, [summary])
    assert "3.700 → 3.650 (-1.35 %) over updates 1,800–2,400, but that is the end of its schedule" in line
    assert "over 3,600 updates reached dev loss 3.460 (-5.21 %) and dev bleu4 10.00 against 8.53" in line
    assert "so the budget stops it" in line and "a plateau (under" not in line

    behind_the_pick = {**run, "system": {"config": {"steps": 3600, "lr": 1e-4}}}
    longer_run = floor_line("E", behind_the_pick, [summary])
    assert "3.540 → 3.460 (-2.26 %) over updates 2,700–3,600: still moving" in longer_run
    nar_shaped = {**run, "system": {"config": {"size": {"steps": 2400, "lr": 1e-4}}}}  # NAR keeps its size apart
    assert floor_line("ERNIE-GEN", nar_shaped, [summary]) == line  # its 2,400-update point, not the pick
    no_lower = {**summary, "points": [_point("p", FLAT, 8.53), _point("q", [[100, 6.0], [3600, 3.64]], 8.6)]}
    confirmed = floor_line("E", run, [no_lower])
    assert "a plateau (under 2 % over the last quarter, and the same rate over 3,600 updates ended at dev loss " \
        "3.640, -0.27 %, with its dev score no more than 10 % higher" in confirmed, confirmed
    # the dev loss barely moved, but the dev score did: the flat end was still the schedule's, not the model's
    better = {**summary, "points": [_point("p", FLAT, 8.53), _point("q", [[100, 6.0], [3600, 3.64]], 12.0)]}
    overruled = floor_line("E", run, [better])
    assert "but that is the end of its schedule, not a plateau: the same rate over 3,600 updates reached dev " \
        "loss 3.640 (-0.27 %) and dev bleu4 12.00 against 8.53" in overruled, overruled
