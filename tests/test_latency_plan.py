"""bench.latency.plan.plan_latency: what `bench latency` decides before it builds anything (the baseline timed
first, random weights forcing lengths, per-system overrides, stand-ins, counts in the one wording)."""

from __future__ import annotations

import pytest

from bench.api.errors import UserError
from bench.env.counts import CountError
from bench.latency.plan import LatencyPlanError, plan_latency


def test_the_baseline_is_timed_first_when_not_named() -> None:
    plan = plan_latency("quora", " fairseq_nat, fairseq_cmlm ,", baseline="fairseq_transformer")
    assert plan.systems == ("fairseq_transformer", "fairseq_nat", "fairseq_cmlm")
    assert plan_latency("quora", ["a", "b"], baseline="b").systems == ("a", "b")
    assert not plan.length_forced and plan.notes == () and plan.overrides == {n: {} for n in plan.systems}


def test_random_weights_imply_length_forced_timing_and_say_so() -> None:
    plan = plan_latency("squad_qg", "a,b", weights="random", sets=["b.iterations=4"])
    assert plan.length_forced and plan.weights == "random"
    assert plan.notes == ("--weights random implies --length-forced (untrained lengths are arbitrary)",)
    assert plan.overrides == {"a": {"weights": "random"}, "b": {"weights": "random", "iterations": 4}}
    already = plan_latency("squad_qg", "a", weights="random", length_forced=True)
    assert already.length_forced and already.notes == ()


@pytest.mark.parametrize("kw", [{"weights": "random"}, {"length_forced": True}])
def test_a_reference_baseline_under_forced_timing_is_one_line_naming_it(kw: dict) -> None:
    """#58: `--weights random` with copy_source said "Unknown override(s) ['weights']"."""
    with pytest.raises(LatencyPlanError) as err:
        plan_latency("quora", "fairseq_nat,copy_source", baseline="fairseq_transformer", **kw)
    assert str(err.value).startswith("copy_source is a reference baseline (no model")
    assert "leave it out of --systems" in str(err.value)
    assert plan_latency("quora", "copy_source,lead1").systems == ("copy_source", "lead1")  # free timing: allowed


def test_stand_ins_are_parsed_against_the_timed_systems() -> None:
    assert plan_latency("squad_qg", "encoder_bert", stand_ins=["mist_bert=encoder_bert"]).stand_ins == {
        "mist_bert": "encoder_bert"}
    with pytest.raises(ValueError):
        plan_latency("squad_qg", "a", stand_ins=["mist_bert=encoder_bert"])


@pytest.mark.parametrize(("kw", "line"), [
    ({"n": 0}, "--n 0: n must be ≥ 1 (got 0)"),
    ({"rounds": 0}, "--rounds 0: rounds must be ≥ 1 (got 0)"),
    ({"min_items": -3}, "--min-items -3: min-items must be ≥ 1 (got -3)"),
    ({"seed": -1}, "--seed -1: seed must be ≥ 0 (got -1)"),
    ({"warmup_items": -1}, "--warmup-items -1: warmup-items must be ≥ 0 (got -1)"),
])
def test_counts_are_refused_in_the_one_wording(kw: dict[str, int], line: str) -> None:
    with pytest.raises(CountError) as err:
        plan_latency("quora", "copy_source", **kw)
    assert str(err.value) == line and isinstance(err.value, UserError)


def test_an_unknown_weights_choice_is_a_user_error() -> None:
    with pytest.raises(LatencyPlanError, match="--weights 'fake': the only choice is 'random'"):
        plan_latency("quora", "copy_source", weights="fake")


def test_a_bounded_run_carries_its_warm_up_and_duration_floor() -> None:
    """gpu_check's latency step times exactly --n items per system: no duration floor, a short warm-up."""
    plan = plan_latency("squad_qg", "a", warmup_items=5, warmup_s=1.0, min_duration_s=0.0)
    assert (plan.warmup_items, plan.warmup_s, plan.min_duration_s) == (5, 1.0, 0.0)
    assert (plan_latency("squad_qg", "a").warmup_items, plan_latency("squad_qg", "a").min_duration_s) == (20, 10.0)
    with pytest.raises(LatencyPlanError, match="--min-duration-s -1: min-duration-s must be ≥ 0"):
        plan_latency("squad_qg", "a", min_duration_s=-1.0)
