"""The paired, randomized design (RMIT) against the block design it replaced, on a fake clock with a scripted burst
of contention; the speed-up's statistic and verdict rules; the work counts; the checks a paired record must pass.

No real timing here: the figures of the method on this machine come from benchmarks/bench_paired_method.py."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from fake_systems import DecodeOnly
from test_latency import FakeClock, examples, stable_canaries

import bench.latency.meter as meter
import bench.latency.trials as trials
from bench.api.types import Example
from bench.latency import measure
from bench.latency.paired import VERDICTS, PairedSpeedup, Thresholds, judge_all, paired_speedup
from bench.latency.record import LatencySpec, build_record
from bench.latency.rederive import rederive_latency
from bench.latency.trials import TrialLog, schedule
from bench.store import paired as store_paired
from bench.store.latency import LatencyRecordError, validate_latency_record


class Burst:
    """A machine that runs everything ``factor`` times slower during ``windows`` (spans of decode calls, counted over
    every system: a contention spell that lasts as long as that many calls, wherever the schedule puts them)."""

    def __init__(self, clock: FakeClock, windows: list[tuple[int, int]], factor: float) -> None:
        self.clock, self.windows, self.factor, self.calls = clock, windows, factor, 0

    def cost(self, ns: int) -> int:
        on = any(lo <= self.calls < hi for lo, hi in self.windows)
        self.calls += 1
        return int(ns * (self.factor if on else 1.0))


class Costly(DecodeOnly):
    """Costs ``ns`` (times the burst's factor inside its window) per item; its output is the item id."""

    def __init__(self, clock: FakeClock, burst: Burst, ns: int) -> None:
        self.clock, self.burst, self.ns = clock, burst, ns

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.clock.ns += self.burst.cost(self.ns)
        return example.id


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(trials, "perf_counter_ns", fake)
    monkeypatch.setattr(trials, "process_time_ns", fake)
    monkeypatch.setattr(meter, "default_canaries", stable_canaries)
    return fake


FAST = dict(warmup_items=2, warmup_s=0.0, min_items=10, min_duration_s=0.0, progress=False, count_work=False,
            max_rounds=4)


def _run(clock: FakeClock, design: str, windows: list[tuple[int, int]]) -> object:
    """A (4 ms) vs B (1 ms), true speed-up 4.00, 30 units x 4 rounds; a 3x burst over ``windows`` of decode calls."""
    burst = Burst(clock, windows, 3.0)
    systems = {"a": Costly(clock, burst, 4_000_000), "b": Costly(clock, burst, 1_000_000)}
    return measure(systems, examples(60), baseline="a", n=30, rounds=4, design=design, **FAST)


def test_a_burst_on_one_block_biases_the_block_design_and_not_the_paired_one(clock: FakeClock) -> None:
    """Two spells of contention, each as long as one system's block: in the block design (each round: a's 30 units,
    then b's, then the A/A arm's, rotated) they land on a's block in rounds 0 and 1, so a's per-unit medians over
    the 4 rounds are inflated and b reads twice as fast as it is, with a confident CI. Paired, the same two spells
    land on every arm of the units they touch, in one round each: S stays 4.00 and the A/A control 1.00."""
    # calls 0-3 warm up (2 items x 2 systems), 4-63 are the reference pass (30 units x 2 systems); timing starts at
    # call 64: round 0 = a 64-93, b 94-123, aa:b 124-153; round 1 (rotated) = b 154-183, aa:b 184-213, a 214-243
    spells = [(64, 94), (214, 244)]
    block = _run(clock, "block", spells)
    paired = _run(clock, "paired", spells)
    sb, sp = block.systems["b"].speedup, paired.systems["b"].speedup
    assert sb.mean == pytest.approx(8.0) and sb.mean_ci95[0] > 7.5  # "b is 8x faster", confidently wrong
    assert sp.mean == pytest.approx(4.0, rel=0.02) and sp.mean_ci95[0] <= 4.0 <= sp.mean_ci95[1] * 1.0001
    assert paired.aa.mean == pytest.approx(1.0, abs=0.02) and sp.verdict == "VALID"
    # the block design's per-round ratios show the confound (its A/A arm sits in other blocks than its twin)
    assert sb.verdict == "UNSTABLE" and max(sb.per_round) / min(sb.per_round) > 2


def test_the_paired_design_tolerates_spells_that_split_units(clock: FakeClock) -> None:
    """Spells that start and end mid-unit hit only some arms of the unit they split: the per-unit median over
    rounds and the random positions keep S within 3 % of the truth (the A/A tolerance)."""
    rep = _run(clock, "paired", [(70, 101), (170, 203), (290, 331)])
    assert rep.systems["b"].speedup.mean == pytest.approx(4.0, rel=0.03)


def test_schedules_are_seeded_permutations() -> None:
    a = schedule("paired", 3, 0, 5, ["x", "y", "z"])
    assert a == schedule("paired", 3, 0, 5, ["x", "y", "z"]) and a != schedule("paired", 4, 0, 5, ["x", "y", "z"])
    assert sorted((u, arm) for u, arm, _ in a) == [(u, arm) for u in range(5) for arm in ("x", "y", "z")]
    blocks = schedule("block", 3, 1, 2, ["x", "y"])
    assert blocks == [(0, "y", 0), (1, "y", 0), (0, "x", 1), (1, "x", 1)]
    with pytest.raises(ValueError, match="design 'other'"):
        schedule("other", 0, 0, 1, ["x"])


# ---------------------------------------------------------------- the statistic and the rules

def test_the_statistic_is_a_ratio_of_sums_of_per_unit_medians_with_per_round_ratios() -> None:
    base = np.array([[10.0, 20.0, 30.0], [12.0, 20.0, 30.0], [10.0, 40.0, 30.0]])  # rounds x units
    sys_ = np.array([[5.0, 10.0, 10.0], [5.0, 10.0, 10.0], [5.0, 10.0, 30.0]])
    sp = paired_speedup(base, sys_, 500, 0)
    assert sp.mean == pytest.approx((10 + 20 + 30) / (5 + 10 + 10))  # medians over rounds, then Σ ÷ Σ
    assert sp.per_round == pytest.approx([60 / 25, 62 / 25, 80 / 45])
    assert sp.geomean == pytest.approx((2.0 * 2.0 * 3.0) ** (1 / 3))
    assert sp.round_spread == pytest.approx((62 / 25) / (80 / 45)) and sp.units == 3 and sp.rounds == 3


def _sp(mean: float, ci: tuple[float, float], per_round: list[float]) -> PairedSpeedup:
    return PairedSpeedup(mean, mean, ci, ci, 100, mean, per_round, 10, len(per_round))


@pytest.mark.parametrize(("aa", "own", "verdict", "why"), [
    ((1.0, (0.99, 1.01)), (5.0, (4.9, 5.1), [5.0, 5.1, 4.9]), "VALID", None),
    ((1.0, (0.99, 1.01)), (5.0, (4.0, 6.0), [5.0, 5.1, 4.9]), "INCONCLUSIVE", "wider than hi/lo 1.10"),
    ((1.0, (0.99, 1.01)), (5.0, (4.9, 5.1), [4.0, 5.0, 6.0]), "UNSTABLE", "per-round speed-ups ranged"),
    ((1.05, (0.98, 1.12)), (5.0, (4.9, 5.1), [5.0, 5.0, 5.0]), "INCONCLUSIVE", "more than 3% from 1"),
    ((1.05, (1.02, 1.08)), (5.0, (4.9, 5.1), [5.0, 5.0, 5.0]), "UNSTABLE", "which excludes 1"),
])
def test_the_verdict_rules(aa: tuple, own: tuple, verdict: str, why: str | None) -> None:
    judged, control = judge_all({"x": _sp(*own)}, _sp(aa[0], aa[1], [aa[0]] * 3), [], Thresholds())
    assert judged["x"].verdict == verdict
    assert (why is None and judged["x"].reasons == []) or any(why in r for r in judged["x"].reasons)
    broken, _ = judge_all({"x": _sp(*own)}, _sp(1.0, (0.99, 1.01), [1.0] * 3), ["2 timings are missing"],
                          Thresholds())
    assert broken["x"].verdict == "INVALID" and "2 timings are missing" in broken["x"].reasons
    alone, _ = judge_all({"x": _sp(*own)}, None, [], Thresholds())
    assert alone["x"].verdict != "VALID" and any("no A/A control" in r for r in alone["x"].reasons)


def test_a_system_whose_timed_outputs_differ_breaks_only_its_own_speed_up(clock: FakeClock) -> None:
    calls = [0]

    class Flaky(DecodeOnly):
        def decode_one(self, example: Example, forced_length: int | None = None) -> str:
            calls[0] += 1
            clock.ns += 1_000_000
            return f"{example.id} {calls[0] % 2}"

    class Steady(DecodeOnly):
        def decode_one(self, example: Example, forced_length: int | None = None) -> str:
            clock.ns += 2_000_000
            return example.id

    rep = measure({"base": Steady(), "flaky": Flaky(), "steady": Steady()}, examples(30), baseline="base", n=10,
                  rounds=3, aa="steady", **FAST)
    assert rep.systems["flaky"].speedup.verdict == "INVALID"
    assert rep.systems["steady"].speedup.verdict == "VALID" and rep.verdict == "INVALID"


# ---------------------------------------------------------------- work counts

class TinyModel(DecodeOnly):
    """A real torch model: two stacked Linear blocks, a decoder 'pass' per output token."""

    def __init__(self) -> None:
        import torch

        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.ModuleList([torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)]))
        self.last_iterations = 0

    def models(self):  # type: ignore[no-untyped-def]
        return [self.net]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        import torch

        steps = 1 + int(example.id[2:]) % 3
        x = torch.ones(1, 8)
        with torch.no_grad():
            for _ in range(steps):
                for layer in self.net[0]:
                    x = layer(x)
        self.last_iterations = steps
        return " ".join(["w"] * steps)


def test_work_counts_are_deterministic_and_counted_on_the_timed_units(clock: FakeClock) -> None:
    exs = examples(20)
    runs = [measure({"m": TinyModel()}, exs, n=9, rounds=1, aa=None, **{**FAST, "count_work": True})
            for _ in range(2)]
    counts = [r.timed.work["m"].to_json() for r in runs]
    for c in counts:
        c.pop("peak_memory")  # a resident-set reading, not a count
    assert counts[0] == counts[1]
    steps = [1 + i % 3 for i in runs[0].systems["m"].item_indices]
    w = runs[0].timed.work["m"]
    assert w.passes_per_unit == pytest.approx(np.mean(steps)) and w.output_tokens == sum(steps)
    assert w.layer_evals_per_unit == pytest.approx(2 * np.mean(steps))  # two blocks of the ModuleList per pass
    assert w.flops_per_sentence == pytest.approx(2 * 8 * 8 * 2 * np.mean(steps))  # 2·in·out per Linear call
    assert w.parameters == 2 * (8 * 8 + 8) and "instructions" in w.unreadable or w.instructions_per_sentence


# ---------------------------------------------------------------- the record

@pytest.fixture
def record(clock: FakeClock) -> dict:
    burst = Burst(clock, [], 1.0)
    rep = measure({"a": Costly(clock, burst, 4_000_000), "b": Costly(clock, burst, 1_000_000)}, examples(40),
                  baseline="a", n=12, rounds=3, **FAST)
    spec = LatencySpec(task="quora", split="test", budget="smoke", systems=("a", "b"), baseline="a", n=12, rounds=3,
                       length_forced=False, weights="as-configured")
    return json.loads(json.dumps(build_record(spec, rep, {})))


def test_a_paired_record_is_checked_at_load_and_re_derived_by_deep(record: dict) -> None:
    assert record["schema"] == 2 and record["verdict"] == "VALID" and record["aa"]["system"] == "b"
    validate_latency_record(record)
    assert rederive_latency(record).differences == []
    missing = copy.deepcopy(record)  # a timing dropped: the design is no longer complete
    for column in missing["trials"].values():
        column.pop()
    with pytest.raises(LatencyRecordError, match="exactly once"):
        validate_latency_record(missing)
    flipped = copy.deepcopy(record)
    flipped["systems"]["b"]["speedup"]["verdict"] = "UNSTABLE"
    with pytest.raises(LatencyRecordError, match="reason"):  # a verdict other than VALID names its reasons
        validate_latency_record(flipped)
    flipped["systems"]["b"]["speedup"]["reasons"] = ["made up"]
    with pytest.raises(LatencyRecordError, match="give 'VALID'"):  # its own numbers say VALID (#57 fourth pass)
        validate_latency_record(flipped)
    assert {d.field for d in rederive_latency(flipped).differences} >= {"speedup.verdict", "speedup.reasons"}
    slow = copy.deepcopy(record)  # one timing edited: the per-round ratio it sits in moves
    k = slow["trials"]["arm"].index("b")
    slow["trials"]["wall_ns"][k] *= 5
    assert "speedup.per_round" in {d.field for d in rederive_latency(slow).differences}
    label = copy.deepcopy(record)
    label["ms_label"] = "INDICATIVE"
    assert any(d.field == "ms_label" for d in rederive_latency(label).differences)
    drift = copy.deepcopy(record)
    drift["canary"]["samples_ms_per_round"][1] = [9.0] * 5
    assert any(d.field == "median_ms_per_round" for d in rederive_latency(drift).differences)
    bad_aa = copy.deepcopy(record)
    bad_aa["aa"]["mean"] = 1.2
    with pytest.raises(LatencyRecordError, match="outside its CI"):
        validate_latency_record(bad_aa)


def test_the_store_and_the_meter_name_the_same_verdicts_and_columns() -> None:
    assert store_paired.VERDICTS == VERDICTS
    assert tuple(store_paired.COLUMNS) == trials.COLUMNS
    log = TrialLog()
    log.add(0, 0, "a", 0, 0, 5, 5, 1, "h")
    assert TrialLog.from_json(log.to_json()) == log
    with pytest.raises(ValueError, match="trials.wall_ns"):
        TrialLog.from_json({**log.to_json(), "wall_ns": ["5"]})


def test_the_known_ratio_control_reads_two_and_is_re_derived(clock: FakeClock) -> None:
    burst = Burst(clock, [], 1.0)
    rep = measure({"a": Costly(clock, burst, 4_000_000), "b": Costly(clock, burst, 1_000_000)}, examples(40),
                  baseline="a", n=12, rounds=3, x2="auto", **FAST)
    assert rep.timed.x2_system == "b" and rep.x2.mean == pytest.approx(2.0) and rep.x2.verdict == "VALID"
    assert "x2:b" in rep.timed.log.arm and "x2:b" not in rep.systems and "|x2:on|" in rep.signature
    spec = LatencySpec(task="quora", split="test", budget="smoke", systems=("a", "b"), baseline="a", n=12, rounds=3,
                       length_forced=False, weights="as-configured")
    rec = json.loads(json.dumps(build_record(spec, rep, {})))
    assert rec["x2"]["system"] == "b" and rec["verdict"] == "VALID"
    validate_latency_record(rec)
    assert rederive_latency(rec).differences == []
    edited = copy.deepcopy(rec)
    edited["x2"]["per_round"] = [2.5, 2.5, 2.5]
    assert any("known-ratio control" in d.where for d in rederive_latency(edited).differences)


def test_a_meter_that_misreads_the_known_ratio_judges_nothing_valid() -> None:
    ok = _sp(5.0, (4.9, 5.1), [5.0, 5.0, 5.0])
    aa = _sp(1.0, (0.99, 1.01), [1.0] * 3)
    judged, _ = judge_all({"x": ok}, aa, [], Thresholds(), x2=_sp(2.2, (2.15, 2.25), [2.2] * 3))
    assert judged["x"].verdict == "UNSTABLE" and any("misread a known ratio" in r for r in judged["x"].reasons)
    judged, _ = judge_all({"x": ok}, aa, [], Thresholds(), x2=_sp(1.99, (1.97, 2.01), [1.99] * 3))
    assert judged["x"].verdict == "VALID"
    judged, _ = judge_all({"x": ok}, aa, [], Thresholds(), x2=_sp(2.0, (1.90, 2.10), [2.0] * 3))
    assert judged["x"].verdict == "INCONCLUSIVE" and any("reaches outside" in r for r in judged["x"].reasons)


def test_a_known_ratio_a_little_under_two_with_a_tight_ci_is_within_the_band() -> None:
    """MIST Table 3 (2026-11-29): the 2x arm of a 28 ms system read 1.978x [1.972, 1.985], 1.1 % under 2 (the
    per-call work the wrapper does once). The band rule keeps that VALID; the rule of older records (a CI that
    holds 2, ``x2_band`` absent from their thresholds) judged it UNSTABLE, and re-deriving such a record still does."""
    ok = _sp(5.0, (4.9, 5.1), [5.0, 5.0, 5.0])
    aa = _sp(1.003, (0.999, 1.007), [1.0] * 3)
    x2 = _sp(1.978, (1.972, 1.985), [1.971, 1.986, 1.978])
    judged, _ = judge_all({"x": ok}, aa, [], Thresholds(), x2=x2)
    assert judged["x"].verdict == "VALID"
    legacy = Thresholds.from_json({"aa_max": 0.03, "ci_ratio": 1.1, "round_spread": 1.15})
    assert legacy.x2_band is None and "x2_band" not in legacy.to_json()
    judged, _ = judge_all({"x": ok}, aa, [], legacy, x2=x2)
    assert judged["x"].verdict == "UNSTABLE" and any("excludes 2" in r for r in judged["x"].reasons)
    assert Thresholds.from_json(Thresholds().to_json()) == Thresholds()


def test_an_int8_linear_counts_its_integer_flops() -> None:
    """FlopCounterMode cannot see torch._int_mm: the per-token int8 Linear's 2·in·out per row is added by a hook."""
    import torch

    from bench.latency.work import counting
    from systems.compute import Int8Linear

    lin = torch.nn.Linear(16, 32)
    model = torch.nn.Sequential(torch.nn.ModuleList([Int8Linear.from_float(lin)]))
    with counting([model]) as tally:
        model[0][0](torch.randn(3, 16))
    assert tally["flops"] == 2 * 3 * 16 * 32 and tally["layers"] == 1


def test_the_auto_known_ratio_control_is_the_fastest_float32_system() -> None:
    """An int8 twin's second back-to-back decode runs 5-9 % warm (benchmarks/bench_x2_warm.py), so its twice arm is
    truly about 1.91x: ``auto`` skips int8 systems when a float32 one is timed, and says so; a named one is kept."""
    from types import SimpleNamespace

    from bench.latency.timing import TimingPlan, _pick_x2, compute_type

    def described(**config: object) -> SimpleNamespace:
        return SimpleNamespace(describe=lambda: SimpleNamespace(config=config))

    assert compute_type(described(compute_type="int8")) == "int8"
    assert compute_type(described(compute_type="int8", compute_type_used="int8_float32")) == "int8_float32"
    assert compute_type(described(ctranslate2={"compute_type": "int8", "compute_type_used": "int8"})) == "int8"
    assert compute_type(described()) == "float32" and compute_type(object()) == "float32"
    names = ["ar", "nat_int8", "nat", "mini_int8"]
    pace = {"ar": 100.0, "nat_int8": 3.0, "nat": 7.0, "mini_int8": 2.0}
    compute = {"ar": "float32", "nat_int8": "int8", "nat": "float32", "mini_int8": "int8"}
    plan = TimingPlan(units=[[0]], x2="auto")
    assert _pick_x2(plan, names, "mini_int8", frozenset(), pace, compute) == "nat"
    assert _pick_x2(plan, names, "nat", frozenset(), pace, compute) == "nat"
    every_int8 = dict.fromkeys(names, "int8")
    assert _pick_x2(plan, names, "mini_int8", frozenset(), pace, every_int8) == "mini_int8"
    assert _pick_x2(TimingPlan(units=[[0]], x2="nat_int8"), names, "mini_int8", frozenset(), pace, compute) \
        == "nat_int8"
