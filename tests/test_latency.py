"""The latency meter's bookkeeping, checked against a fake clock so every number is exact."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from fake_systems import DecodeOnly

import bench.latency.meter as meter
import bench.latency.trials as trials
from bench.api.types import Example
from bench.latency import LengthForcedUnsupported, measure, paired_bootstrap_speedup, summarize
from bench.latency.canary import PLANS, prepare_canaries
from bench.latency.schedule import ItemPlan, rotated, round_sizes
from bench.latency.trials import TrialLog
from systems.null import NullSystem

RECORD_KEYS = {
    "signature", "device", "stats", "baseline", "speedup_mean", "speedup_median", "speedup_ci95",
    "length_forced", "valid", "invalid_reasons", "outputs_match_quality_run", "verdict", "ms_label", "ms_reasons",
}
STATS_KEYS = {
    "n", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "min_ms", "std_ms", "tokens_per_s", "mean_iterations",
}


class FakeClock:
    """Stands in for perf_counter_ns (and the process CPU clock): time moves only when a fake system 'works'."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


class FakeSystem(DecodeOnly):
    """Costs ``cost_ns(example)`` on the fake clock and logs every call."""

    supports_forced_length = False

    def __init__(self, name, clock, log, cost_ns=1_000_000, output=None, iterations=None):
        self.name, self.clock, self.log, self.cost_ns = name, clock, log, cost_ns
        self.output = output or (lambda ex: f"{self.name} says {ex.id}")
        self.iterations = iterations

    def decode_one(self, example, forced_length=None):
        self.log.append((self.name, example.id))
        cost = self.cost_ns(example) if callable(self.cost_ns) else self.cost_ns
        self.clock.ns += cost
        if self.iterations is not None:
            self.last_iterations = self.iterations(example)
        return self.output(example)


class ForcedSystem(FakeSystem):
    supports_forced_length = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.forced_seen = {}

    def decode_one(self, example, forced_length=None):
        self.forced_seen[example.id] = forced_length
        return super().decode_one(example)


def examples(k: int = 100) -> list[Example]:
    return [Example(f"ex{i}", f"source {i}", " ".join(["tok"] * (1 + i % 7))) for i in range(k)]


class ConstantWork:
    """A canary workload costing ``ms`` on its own fake clock (times ``factor`` from run ``slow_from_run`` on)."""

    granule = 1

    def __init__(self, kind, clock, ms=1.0):
        self.kind, self.clock, self.ms, self.backend = kind, clock, ms, f"fake-{kind}"
        self.factor, self.slow_from_run, self.runs = 1.0, None, 0

    def build(self, size):
        def run():
            slow = self.slow_from_run is not None and self.runs >= self.slow_from_run
            self.runs += 1
            self.clock.ns += int(self.ms * (self.factor if slow else 1.0) * 1e6)

        return run

    def settle(self):
        pass

    def describe(self, size):
        return f"constant {self.kind} work"


def stable_canaries(device):
    """The real canaries read the real clock; on a shared CI machine they would make verdicts flaky."""
    clock = FakeClock()
    device_ms = 1.5 if device == "cuda" else 0.3  # inside each plan's window: no sizing note
    return prepare_canaries(device, ConstantWork("device", clock, device_ms), ConstantWork("host", clock, 1.5),
                            PLANS[device], clock=clock)


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(trials, "perf_counter_ns", fake)
    monkeypatch.setattr(trials, "process_time_ns", fake)
    monkeypatch.setattr(meter, "default_canaries", stable_canaries)
    return fake


FAST = dict(warmup_items=5, warmup_s=0.0, min_items=10, min_duration_s=0.0, progress=False, count_work=False)


# ---------------------------------------------------------------- stats


def test_summarize_matches_numpy_and_counts_tokens():
    lat = [1_000_000, 2_000_000, 3_000_000, 10_000_000]
    s = summarize(lat, tokens=[4, 4, 4, 4], iterations=[1, 2, 3, 4])
    ms = np.array(lat) / 1e6
    assert s.n == 4 and s.min_ms == 1.0 and s.mean_ms == pytest.approx(4.0)
    assert s.p50_ms == pytest.approx(np.percentile(ms, 50)) == pytest.approx(2.5)
    assert s.p99_ms == pytest.approx(np.percentile(ms, 99))
    assert s.std_ms == pytest.approx(np.std(ms, ddof=1))
    assert s.tokens_per_s == pytest.approx(16 / 0.016)
    assert s.mean_iterations == 2.5
    assert set(s.to_json()) == STATS_KEYS
    with pytest.raises(ValueError, match="zero timed items"):
        summarize([], [])


def test_bootstrap_exact_ratio_has_degenerate_ci():
    rng = np.random.default_rng(1)
    sys_ns = rng.integers(1_000_000, 50_000_000, size=300)  # wildly different item difficulty
    sp = paired_bootstrap_speedup(sys_ns * 3, sys_ns, n_resamples=500)
    assert sp.mean == pytest.approx(3.0) and sp.median == pytest.approx(3.0)
    assert sp.mean_ci95 == pytest.approx((3.0, 3.0)) and sp.median_ci95 == pytest.approx((3.0, 3.0))


def test_bootstrap_pairing_cancels_item_difficulty():
    rng = np.random.default_rng(2)
    difficulty = rng.lognormal(mean=14, sigma=1.0, size=400)
    base = difficulty * 2.0 * rng.normal(1, 0.02, size=400)
    fast = difficulty * rng.normal(1, 0.02, size=400)
    sp = paired_bootstrap_speedup(base, fast, n_resamples=1000, seed=3)
    lo, hi = sp.mean_ci95
    assert lo < 2.0 < hi and hi - lo < 0.04  # pairing: tight despite sigma=1 difficulty
    # Unpaired resampling of the same data would be far wider: check our CI is not that.
    idx_a, idx_b = rng.integers(0, 400, (1000, 400)), rng.integers(0, 400, (1000, 400))
    unpaired = base[idx_a].mean(1) / fast[idx_b].mean(1)
    assert np.percentile(unpaired, 97.5) - np.percentile(unpaired, 2.5) > 10 * (hi - lo)


def test_bootstrap_is_seeded_and_checks_alignment():
    a, b = [3, 4, 5, 6, 7], [1, 2, 2, 3, 3]
    assert paired_bootstrap_speedup(a, b, seed=7) == paired_bootstrap_speedup(a, b, seed=7)
    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap_speedup([1, 2], [1])


# ---------------------------------------------------------------- schedule


def test_schedule_helpers():
    assert round_sizes(10, 3) == [4, 3, 3] and sum(round_sizes(997, 10)) == 997
    with pytest.raises(ValueError, match="rounds"):
        round_sizes(2, 3)
    assert [rotated(["a", "b", "c"], r) for r in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    plan = ItemPlan(50, seed=4)
    assert plan.take_timed(30) == ItemPlan(50, seed=4).take_timed(30)
    assert plan.take_timed(30) != ItemPlan(50, seed=5).take_timed(30)
    warm = [i for _, i in zip(range(20), plan.warmup(), strict=False)]
    assert not set(warm) & set(plan.take_timed(30))  # disjoint when 30 + 20 <= 50
    assert sorted(plan.take_timed(50)) == list(range(50))


# ---------------------------------------------------------------- meter bookkeeping


def test_warmup_reference_pass_and_every_round_time_the_same_units(clock):
    log = []
    exs = examples(100)
    a = FakeSystem("a", clock, log, cost_ns=3_000_000)
    b = FakeSystem("b", clock, log, cost_ns=1_000_000)
    rep = measure({"a": a, "b": b}, exs, baseline="a", n=40, rounds=4, aa=None, **FAST)
    for name in ("a", "b"):
        res = rep.systems[name]
        assert res.stats.n == 40 and len(res.latencies_ns) == 40
        assert res.warmup_count == 5
        assert sum(1 for nm, _ in log if nm == name) == 5 + 40 + rep.timed.log.rounds * 40  # warm-up, ref pass, rounds
    assert rep.systems["a"].item_indices == rep.systems["b"].item_indices
    assert rep.systems["a"].item_indices == ItemPlan(100, 0).take_timed(40)
    warm_ids = {ex_id for nm, ex_id in log[:5]}
    timed_ids = {exs[i].id for i in rep.systems["a"].item_indices}
    assert not warm_ids & timed_ids
    assert rep.systems["a"].stats.mean_ms == pytest.approx(3.0)
    assert rep.systems["b"].speedup.mean == pytest.approx(3.0)
    assert rep.systems["b"].speedup.mean_ci95 == pytest.approx((3.0, 3.0))
    assert rep.systems["b"].speedup.per_round == pytest.approx([3.0] * rep.timed.log.rounds)
    assert rep.systems["a"].speedup is None  # the baseline has none (its ratio to itself is no measurement)
    # without an A/A control no speed-up can be VALID: the meter's own false difference is unknown
    assert rep.systems["b"].speedup.verdict == "INCONCLUSIVE"
    assert any("no A/A control" in r for r in rep.invalid_reasons)
    assert rep.timed.log.rounds == 4  # ... and no extra round can supply the missing control


def test_every_unit_is_timed_by_every_arm_back_to_back_in_a_random_order(clock):
    log = []
    systems = {nm: FakeSystem(nm, clock, log) for nm in ("x", "y", "z")}
    rep = measure(systems, examples(60), baseline="x", n=12, rounds=3, **FAST)
    t = rep.timed.log
    arms = {"x", "y", "z", "aa:x"}  # the A/A arm: the fastest (all cost the same: the first named)
    assert set(t.arm) == arms and len(t) == 3 * 12 * 4 and rep.timed.aa_system == "x"
    orders = set()
    for k in range(0, len(t), 4):  # each unit's four timings are consecutive, one per arm, positions 0..3
        assert set(t.arm[k:k + 4]) == arms and len(set(t.unit[k:k + 4])) == 1 and len(set(t.round[k:k + 4])) == 1
        assert t.position[k:k + 4] == [0, 1, 2, 3]
        orders.add(tuple(t.arm[k:k + 4]))
    assert len(orders) > 6  # a fresh random order per unit, not a rotation
    for r in range(3):  # every round visits every unit once, in its own order
        units = [u for rr, u, p in zip(t.round, t.unit, t.position, strict=True) if rr == r and p == 0]
        assert sorted(units) == list(range(12))
    assert [u for rr, u, p in zip(t.round, t.unit, t.position, strict=True) if rr == 0 and p == 0] != \
        [u for rr, u, p in zip(t.round, t.unit, t.position, strict=True) if rr == 1 and p == 0]
    assert t.completeness(sorted(arms), 12) == [] and len(rep.canary) == 3
    assert "aa:x" not in rep.systems and rep.aa.mean == pytest.approx(1.0) and rep.aa.verdict == "VALID"
    again = measure({nm: FakeSystem(nm, clock, []) for nm in ("x", "y", "z")}, examples(60), baseline="x", n=12,
                    rounds=3, **FAST)
    assert again.timed.log.arm == t.arm and again.timed.log.unit == t.unit  # the seed fixes the schedule


def test_tokens_per_s_and_iterations(clock):
    log = []
    s = FakeSystem("s", clock, log, cost_ns=2_000_000, output=lambda ex: "one two three four",
                   iterations=lambda ex: int(ex.id[2:]) % 3 + 1)
    rep = measure({"s": s}, examples(30), n=12, rounds=3, **FAST)
    st = rep.systems["s"].stats
    assert st.tokens_per_s == pytest.approx(4 / 0.002)
    idx = rep.systems["s"].item_indices
    assert st.mean_iterations == pytest.approx(np.mean([i % 3 + 1 for i in idx]))


def test_minimum_duration_adds_rounds_and_too_few_items_is_invalid(clock):
    log = []
    s = FakeSystem("s", clock, log, cost_ns=100_000_000)  # 0.1 s per item on the fake clock
    rep = measure({"s": s}, examples(50), n=10, rounds=1, warmup_items=2, warmup_s=0.0, aa=None,
                  min_items=20, min_duration_s=1.5, progress=False, count_work=False)
    assert rep.timed.log.rounds == 2 and rep.systems["s"].timed_s == pytest.approx(2.0)  # 1.0 s a round
    assert any("extended by 1 round" in n for n in rep.notes)
    assert rep.verdict == "INVALID"
    assert any("too few items: 10" in r for r in rep.invalid_reasons)
    assert "n:10" in rep.signature and "|rounds:2|" in rep.signature


def test_milliseconds_are_indicative_when_the_time_budget_stops_the_extension(clock):
    s = FakeSystem("s", clock, [], cost_ns=1_000)
    rep = measure({"s": s}, examples(20), n=10, rounds=2, warmup_items=1, warmup_s=0.0, aa=None,
                  min_items=1, min_duration_s=100.0, max_duration_s=0.0, progress=False, count_work=False)
    assert rep.systems["s"].stats.n == 10 and rep.timed.log.rounds == 2
    assert any("timed for" in r and "min_duration_s=100" in r for r in rep.ms_reasons)
    assert rep.ms_label == "INDICATIVE" and rep.verdict == "VALID"


def test_max_items_bounds_the_extension_of_very_fast_systems(clock):
    s = FakeSystem("s", clock, [], cost_ns=1_000)  # 1 us items would need 10 M items for 10 s
    rep = measure({"s": s}, examples(100), n=20, rounds=1, warmup_items=1, warmup_s=0.0, aa=None,
                  min_items=10, min_duration_s=10.0, max_items=53, progress=False, count_work=False)
    assert rep.timed.log.rounds == 2  # a third round would time 60 > 53 items
    assert rep.ms_label == "INDICATIVE"


def test_output_hash_mismatch_is_detected_and_stated(clock):
    exs = examples(40)
    s = FakeSystem("s", clock, [])
    good = [f"s says {ex.id}" for ex in exs]
    rep = measure({"s": s}, exs, n=20, rounds=2, reference_outputs={"s": good}, **FAST)
    res = rep.systems["s"]
    assert res.outputs.match is True and res.outputs.n_compared == 20
    assert res.outputs.timed_sha256 == res.outputs.reference_sha256
    assert rep.record("s")["outputs_match_quality_run"] is True and rep.valid

    timed_idx = res.item_indices
    bad = list(good)
    bad[timed_idx[3]] = "a different question ?"
    rep2 = measure({"s": FakeSystem("s", clock, [])}, exs, n=20, rounds=2,
                   reference_outputs={"s": bad}, **FAST)
    res2 = rep2.systems["s"]
    assert res2.outputs.match is False and res2.outputs.n_mismatched == 1
    assert res2.outputs.timed_sha256 != res2.outputs.reference_sha256
    assert res2.outputs.first_mismatch["id"] == exs[timed_idx[3]].id
    rec = rep2.record("s")
    assert rec["outputs_match_quality_run"] is False and rec["valid"] is False
    assert any("outputs differ from the quality run on 1/20" in r for r in rec["invalid_reasons"])

    # An untimed item differing does not matter.
    other = list(good)
    other[next(i for i in range(40) if i not in timed_idx)] = "whatever"
    rep3 = measure({"s": FakeSystem("s", clock, [])}, exs, n=20, rounds=2,
                   reference_outputs={"s": other}, **FAST)
    assert rep3.systems["s"].outputs.match is True


def test_timed_outputs_unlike_the_untimed_reference_make_the_speed_up_invalid(clock):
    calls = {"k": 0}

    def flaky(ex):
        calls["k"] += 1
        return f"{ex.id} {calls['k']}"

    rep = measure({"a": FakeSystem("a", clock, [], cost_ns=2_000_000), "s": FakeSystem("s", clock, [], output=flaky)},
                  examples(5), baseline="a", n=10, rounds=2, **FAST)
    assert any("non-deterministic" in r and r.startswith("s:") for r in rep.invalid_reasons)
    assert rep.systems["s"].speedup.verdict == "INVALID" and rep.verdict == "INVALID"
    assert any("timed items repeat" in n for n in rep.notes)


def test_length_forced_mode(clock):
    exs = examples(30)
    with pytest.raises(LengthForcedUnsupported, match="supports_forced_length"):
        measure({"s": FakeSystem("s", clock, [])}, exs, n=10, rounds=2, length_forced=True, **FAST)
    f = ForcedSystem("f", clock, [])
    rep = measure({"f": f}, exs, n=10, rounds=2, length_forced=True,
                  reference_outputs={"f": ["x"] * 30}, **FAST)
    assert all(f.forced_seen[ex.id] == len(ex.target.split()) for ex in exs if ex.id in f.forced_seen)
    assert rep.record("f")["length_forced"] is True and "mode:length-forced" in rep.signature
    assert rep.systems["f"].outputs.match is None  # forced outputs are not comparable to quality outputs


def test_canary_drift_labels_the_milliseconds_and_an_environment_change_invalidates(clock, monkeypatch):
    def drifting(device):
        cs = stable_canaries(device)
        work = cs.device.workload
        # from the third round on the fixed workload runs twice as slowly (each round times `repeats` runs)
        work.slow_from_run, work.factor = work.runs + 2 * PLANS[device].repeats, 2.0
        return cs

    rep = measure({"s": FakeSystem("s", clock, [])}, examples(30), n=12, rounds=4, canaries=drifting, **FAST)
    assert rep.canary_drift == pytest.approx(1.0) and rep.host_canary_drift == 0.0
    assert any(r.startswith("device canary drift 100% > 25%: 2 of 4 rounds") for r in rep.ms_reasons)
    assert not any(r.startswith("host canary") for r in rep.ms_reasons)
    assert rep.ms_label == "INDICATIVE" and rep.verdict == "VALID"  # the drift moves ms, not a paired ratio
    assert rep.record("s")["ms_label"] == "INDICATIVE"

    fps = iter([{"cpu": "A", "torch_threads": 2, "loadavg": [0.1]},
                {"cpu": "A", "torch_threads": 1, "loadavg": [3.0]}])
    monkeypatch.setattr(meter, "environment_fingerprint", lambda: next(fps))
    rep = measure({"s": FakeSystem("s", clock, [])}, examples(30), n=12, rounds=2, **FAST)
    assert any("torch_threads: 2 -> 1" in r for r in rep.invalid_reasons) and rep.verdict == "INVALID"
    assert not any("loadavg" in r for r in rep.invalid_reasons)  # volatile keys may move


def test_record_schema_and_signature(clock):
    c = clock
    rep = measure({"ar": FakeSystem("ar", c, [], 4_000_000), "nar": FakeSystem("nar", c, [], 1_000_000)},
                  examples(40), baseline="ar", n=20, rounds=2, **FAST)
    rec = rep.record("nar")
    assert RECORD_KEYS <= set(rec) and set(rec["stats"]) == STATS_KEYS
    assert rec["baseline"] == "ar" and rec["speedup_mean"] == pytest.approx(4.0)
    assert len(rec["speedup_ci95"]) == 2 and rec["verdict"] == "VALID"
    trials_of = TrialLog.from_json(rec["timings"]["trials"])
    assert set(trials_of.arm) == {"ar", "nar"} and len(trials_of) == 2 * 20 * 2
    sig = rec["signature"]
    assert sig.startswith("lat:single-stream|bs:1|warmup:5,0s|design:rmit|rounds:2|aa:on|n:20|"
                          "clock:perf_counter_ns|sync:none|")
    assert sig.endswith("|mode:free|v:0.2") and "|torch:" in sig and "|threads:" in sig
    js = rep.to_json()
    assert js["verdict"] == "VALID" and set(js["systems"]) == {"ar", "nar"}
    assert js["aa"]["system"] == "nar" and js["design"]["arms"] == ["ar", "nar", "aa:nar"]
    assert len(js["rounds"]) == 2 and js["rounds"][0]["machine"]["source"] in ("/proc/stat", "unreadable")


def test_errors_name_the_system_and_item(clock):
    class Broken(DecodeOnly):
        def decode_one(self, ex, forced_length=None):
            raise IndexError("position 513 out of range")

    with pytest.raises(RuntimeError, match=r"System 'bad' failed in decode_one on example 'ex\d+'"):
        measure({"bad": Broken()}, examples(10), n=4, rounds=1, **FAST)

    class NotText(DecodeOnly):
        def decode_one(self, ex, forced_length=None):
            return ["tok"]

    with pytest.raises(TypeError, match="returned list, expected str"):
        measure({"x": NotText()}, examples(10), n=4, rounds=1, **FAST)
    with pytest.raises(ValueError, match="Baseline 'nope'"):
        measure({"x": NotText()}, examples(10), baseline="nope", n=4, rounds=1, **FAST)
    with pytest.raises(ValueError, match="reference_outputs"):
        measure({"x": NotText()}, examples(10), n=4, rounds=1, reference_outputs={"x": ["a"]}, **FAST)


# ---------------------------------------------------------------- real clock


def _busy(ns: int) -> None:
    import time

    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


class BusySystem(DecodeOnly):
    """Spins for a fixed time: a real-clock workload with a known cost."""

    def __init__(self, ns: int) -> None:
        self.ns = ns

    def decode_one(self, ex, forced_length=None):
        _busy(self.ns)
        return ex.id


def test_null_system_shows_meter_overhead_is_tiny():
    rep = measure({"null": NullSystem(), "busy": BusySystem(2_000_000)}, examples(200), baseline="busy",
                  n=40, rounds=2, warmup_items=20, warmup_s=0.2, min_items=30, min_duration_s=0.5,
                  progress=False, count_work=False)
    null, busy = rep.systems["null"].stats, rep.systems["busy"].stats
    assert busy.min_ms >= 2.0  # the meter never under-reports a known cost
    assert null.p50_ms < 0.05  # clock pair + call: microseconds at most
    assert null.p50_ms / busy.p50_ms < 0.01
    assert rep.systems["null"].warmup_count >= 20
    # rounds are added until the busy system was timed for 0.5 s (how many depends on the machine's load: the
    # fake-clock test of the duration floor pins that); the null probe is exempt and has no speed-up
    assert busy.n == null.n == 40 and rep.systems["busy"].timed_s >= 0.5
    assert rep.timed.aa_system == "busy"  # the null probe is never the A/A control
    assert not any(r.startswith("null:") for r in rep.invalid_reasons + rep.ms_reasons)
    assert rep.systems["null"].speedup is None and rep.record("null")["speedup_mean"] is None


def test_probe_only_run_does_not_extend(clock):
    rep = measure({"null": NullSystem()}, examples(20), n=10, rounds=2, warmup_items=2, warmup_s=0.0,
                  min_items=5, min_duration_s=5.0, progress=False, count_work=False)
    assert rep.timed.log.rounds == 2 and rep.timed.aa_system is None and rep.valid, rep.invalid_reasons


def test_render_shows_verdict_mode_and_reasons(clock):
    import io

    from rich.console import Console

    from bench.latency import render_report

    f = ForcedSystem("f", clock, [])
    rep = measure({"f": f}, examples(20), n=6, rounds=2, length_forced=True, warmup_items=1, warmup_s=0.0,
                  min_items=50, min_duration_s=0.0, progress=False, count_work=False)
    buf = io.StringIO()
    render_report(rep, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "LENGTH-FORCED" in text and "INVALID" in text and "too few items: 6" in text
    assert rep.signature in text.replace("\n", "")


def test_importing_the_meter_does_not_import_torch():
    code = "import sys, bench.latency, bench.env.fingerprint, systems.null; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_canary_drift_is_robust_to_one_blip_but_not_to_sustained_contention():
    from bench.latency.canary import Canary, CanaryResult, canary_drift
    from bench.latency.sizing import Sizing
    from bench.latency.workloads import MatmulChain, PythonLoop

    rounds = lambda vals: [CanaryResult(i, v) for i, v in enumerate(vals)]  # noqa: E731
    assert canary_drift(rounds([1.0])) == 0.0
    assert canary_drift(rounds([1.0, 1.5])) == pytest.approx(0.45)
    assert canary_drift(rounds([1.0] * 19 + [5.0])) == pytest.approx(0.0)
    assert canary_drift(rounds([1.0] * 15 + [2.0] * 5)) == pytest.approx(1.0)
    for work, size in ((MatmulChain("cpu", chain=2), 32), (PythonLoop(), 1000)):  # the real workloads run
        real = Canary(work, Sizing(size, 0.0, (0.1, 1.0), ()), repeats=3).measure(0)
        assert real.median_ms > 0


class FakeEvent:
    def __init__(self, clock, lag_ns):
        self.clock, self.lag_ns, self.t = clock, lag_ns, None

    def record(self):
        self.t = self.clock.ns + self.lag_ns

    def elapsed_time(self, end):
        return (end.t - self.t) / 1e6


class FakeCudaSync:
    """Stands in for torch.cuda on a CPU-only machine: counts syncs, events read the fake clock."""

    device, name = "cuda", "cuda"

    def __init__(self, clock, end_lag_ns=0):
        self.clock, self.end_lag_ns, self.syncs = clock, end_lag_ns, 0

    def sync(self):
        self.syncs += 1

    def events(self):
        return FakeEvent(self.clock, 0), FakeEvent(self.clock, self.end_lag_ns)


@pytest.mark.parametrize("end_lag_ns, flagged", [(0, False), (500_000, True)])
def test_cuda_path_syncs_around_each_item_and_cross_checks_events(clock, monkeypatch, end_lag_ns, flagged):
    sync = FakeCudaSync(clock, end_lag_ns)
    monkeypatch.setattr(meter, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(meter, "Synchronizer", lambda device: sync)
    monkeypatch.setattr(trials, "perf_counter_ns", clock)
    monkeypatch.setattr(meter, "device_label", lambda fp, device: "Fake GPU")
    rep = measure({"s": FakeSystem("s", clock, [], cost_ns=1_000_000)}, examples(30), n=10, rounds=2, **FAST)
    assert sync.syncs == 2 * (2 * 10 * 2)  # before and after every timed item: 2 rounds x 10 units x 2 arms (A/A)
    res = rep.systems["s"]
    assert "|sync:cuda|device:Fake GPU|" in rep.signature
    # end event lags by 0.5 ms: the device saw work after the host clock stopped -> invalid
    assert res.cuda_event_ms_mean == pytest.approx(1.0 + end_lag_ns / 1e6)
    assert any("CUDA events" in r for r in rep.invalid_reasons) is flagged
