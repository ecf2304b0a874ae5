"""The canaries' sizing, warm-up and verdict, driven by fake workloads on a fake clock (exact, no real timing).

The cost model of the fake device workload is the one seen on an idle H200: a per-run launch
overhead that wanders between rounds (0.10–0.20 ms for a 4-product chain) plus compute that grows
as size³ (a 2048×2048 chain ≈ 1.4 ms).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fake_systems import DecodeOnly

from bench.api.types import Example
from bench.latency import measure
from bench.latency.canary import (
    PLANS,
    Canary,
    CanaryPlan,
    CanaryResult,
    canary_drift,
    drift_reasons,
    prepare_canaries,
    warm_up,
)
from bench.latency.sizing import Sizing, choose_size

K_MS = 1.4 / 2048**3  # ms per size³: a 2048 chain computes in 1.4 ms


class FakeClock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


class FakeWorkload:
    """Advances the fake clock by ``cost_ms(size)``, times ``factor`` once the clock passes ``slow_from_ns``."""

    def __init__(self, kind: str, clock: FakeClock, cost_ms: Callable[[int], float], granule: int = 32) -> None:
        self.kind, self.clock, self.cost_ms, self.granule = kind, clock, cost_ms, granule
        self.backend = f"fake-{kind}"
        self.slow_from_ns: int | None = None
        self.factor = 1.0
        self.runs = 0
        self.settles = 0

    def build(self, size: int) -> Callable[[], None]:
        def run() -> None:
            self.runs += 1
            slow = self.slow_from_ns is not None and self.clock.ns >= self.slow_from_ns
            self.clock.ns += int(self.cost_ms(size) * (self.factor if slow else 1.0) * 1e6)

        return run

    def settle(self) -> None:
        self.settles += 1

    def describe(self, size: int) -> str:
        return f"fake {self.kind} work of size {size}"


def gpu_cost(launch_ms: float = 0.1) -> Callable[[int], float]:
    return lambda size: launch_ms + K_MS * size**3


def host_cost(size: int) -> float:
    return 7e-5 * size  # ~70 ns per loop iteration


# ---------------------------------------------------------------- sizing


def test_sizing_lands_a_cubic_workload_in_the_window():
    s = choose_size(gpu_cost(), (1.0, 3.0), start=256, granule=32)
    assert s.in_range and 1.0 <= s.ms <= 3.0 and s.size == 2048
    assert [size for size, _ in s.trials] == [256, 512, 1024, 2048]  # doubling while too fast
    assert s.to_json()["trials"][-1] == [2048, pytest.approx(s.ms)]


def test_sizing_bisects_when_doubling_jumps_over_the_window():
    # 0.5 ms at 1024 -> 4 ms at 2048: doubling alone never lands in 1-3 ms
    cost = lambda size: 0.5 * (size / 1024) ** 3  # noqa: E731
    s = choose_size(cost, (1.0, 3.0), start=1024, granule=32)
    assert s.in_range and s.trials[1] == (2048, pytest.approx(4.0))
    assert 1024 < s.size < 2048 and s.size % 32 == 0


def test_sizing_halves_when_the_start_is_too_slow_and_reports_a_miss():
    s = choose_size(lambda size: size / 100, (1.0, 3.0), start=1600, granule=1)
    assert s.in_range and s.size == 200 and [t[0] for t in s.trials] == [1600, 800, 400, 200]
    capped = choose_size(lambda size: 1e-3 * size, (1.0, 3.0), start=64, granule=32, max_size=256)
    assert not capped.in_range and capped.size == 256  # the cap: closest to the window, flagged out of range
    floored = choose_size(lambda size: size / 100, (1.0, 3.0), start=1600, granule=1, min_size=800)
    assert not floored.in_range and [t[0] for t in floored.trials] == [1600, 800]
    with pytest.raises(ValueError, match="target_ms"):
        choose_size(lambda size: 1.0, (3.0, 1.0), start=1)


# ---------------------------------------------------------------- warm-up and setup


def test_warm_up_runs_for_its_fixed_time_on_the_given_clock():
    clock = FakeClock()
    work = FakeWorkload("device", clock, lambda size: 1.5)
    runs, elapsed = warm_up(work.build(2048), 2.0, clock)
    assert runs == 1334 and elapsed == pytest.approx(2.001)  # ceil(2000 / 1.5) runs of 1.5 ms
    assert warm_up(work.build(2048), 0.0, clock) == (0, 0.0)


def test_prepare_warms_up_then_resizes_for_the_boosted_clocks():
    clock = FakeClock()
    # idle clocks compute at a third of the speed; sustained load (the warm-up's ~1000 runs) brings them up
    boosted = lambda: dev.runs > 100  # noqa: E731
    dev = FakeWorkload("device", clock, lambda size: 0.1 + K_MS * size**3 * (1.0 if boosted() else 3.0))
    host = FakeWorkload("host", clock, host_cost, granule=256)
    probes = []

    def probe() -> dict:
        probes.append((clock.ns, boosted()))
        return {"source": "nvml", "sm_mhz": 1980.0}

    cs = prepare_canaries("cuda", dev, host, PLANS["cuda"], clock=clock, probe=probe)
    # idle: 1024 -> 0.6 ms, 2048 -> 4.3 ms, bisected to 1536 (1.9 ms); the warm-up runs at 1536
    assert cs.warmup.size == 1536 and cs.warmup.runs > 100 and cs.warmup.elapsed_s >= 2.0
    assert cs.warmup.gpu_state_after == {"source": "nvml", "sm_mhz": 1980.0} and probes[0][1] is True
    assert len(probes) == 1 and probes[0][0] < clock.ns  # read right after the warm-up, before re-sizing
    # boosted: 1536 -> 0.69 ms is too fast now; re-sized (3072 too slow, bisected) to 2304 at 2.1 ms
    assert cs.device.sizing.in_range and cs.device.sizing.size == 2304
    assert [t[0] for t in cs.device.sizing.trials] == [1536, 3072, 2304]
    assert cs.host.sizing.in_range and cs.host.sizing.size == 16384
    js = cs.to_json()
    assert js["size"] == 2304 and js["judged"] is True and js["host"]["judged"] is True
    assert js["warmup"]["seconds"] == 2.0 and js["sizing"]["target_ms"] == [1.0, 3.0] and not cs.notes


def test_cpu_plan_keeps_the_128_chain_and_does_not_judge_the_host_canary():
    clock = FakeClock()
    dev = FakeWorkload("device", clock, lambda size: 0.2 * (size / 128) ** 3)  # ~0.2 ms, as on the record CPUs
    host = FakeWorkload("host", clock, host_cost, granule=256)
    cs = prepare_canaries("cpu", dev, host, PLANS["cpu"], clock=clock)
    assert cs.device.sizing.size == 128 and len(cs.device.sizing.trials) == 1
    slow = prepare_canaries("cpu", FakeWorkload("device", clock, lambda size: 5.0), host, PLANS["cpu"], clock=clock)
    assert [t[0] for t in slow.device.sizing.trials] == [128]  # a contended start never shrinks below 128
    assert cs.warmup.runs == 0 and cs.warmup.gpu_state_after is None
    assert cs.device.judged and not cs.host.judged
    host.slow_from_ns, host.factor = clock.ns, 2.0  # a doubled host canary is recorded, not judged, on CPU
    cs.measure(0)
    host.slow_from_ns = None
    cs.measure(1)
    assert cs.host.drift() == pytest.approx(0.9) and cs.reasons(0.25) == []


def test_a_window_no_size_reaches_is_a_note():
    clock = FakeClock()
    plan = CanaryPlan(device_target_ms=(1.0, 3.0), device_start=32, device_max=64, warmup_s=0.0, judged=("device",))
    cs = prepare_canaries("cpu", FakeWorkload("device", clock, lambda s: 0.01), FakeWorkload("host", clock, host_cost),
                          plan, clock=clock)
    assert not cs.device.sizing.in_range and "no size of the fake-device workload took 1–3 ms" in cs.notes[0]


# ---------------------------------------------------------------- launch-bound jitter


def test_launch_bound_jitter_fails_the_old_128_chain_but_not_the_sized_one():
    """Idle GPU: only the launch overhead moves (0.10 vs 0.20 ms per round). The 128 chain is all overhead."""
    launch = {"ms": 0.1}
    clock = FakeClock()
    dev = FakeWorkload("device", clock, lambda size: launch["ms"] + K_MS * size**3)
    old = Canary(dev, Sizing(128, 0.1, (1.0, 3.0), ()), clock=clock)
    sized = prepare_canaries("cuda", dev, FakeWorkload("host", clock, host_cost, 256), PLANS["cuda"], clock=clock)
    assert sized.device.sizing.size == 2048
    for r, ms in enumerate([0.10, 0.20, 0.12, 0.18, 0.10, 0.20, 0.15, 0.10, 0.20, 0.11]):
        launch["ms"] = ms
        old.measure(r)
        sized.measure(r)
    assert old.drift() == pytest.approx(1.0, abs=0.01)  # "canary drift 100%" on an idle GPU
    assert sized.device.drift() < 0.08  # the same jitter is ~6 % of a 1.5 ms compute-bound chain
    assert sized.reasons(0.25) == []
    assert drift_reasons({"device": old.rounds}, {"device": old.description}, 0.25)


# ---------------------------------------------------------------- verdict through the meter


class Fixed(DecodeOnly):
    supports_forced_length = False

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def decode_one(self, example, forced_length=None):
        self.clock.ns += 10_000_000
        return example.id


EXAMPLES = [Example(f"ex{i}", f"source {i}", "a b c") for i in range(60)]


def _measure(monkeypatch, clock: FakeClock, spike: str | None):
    """measure() with the GPU plan's canaries as fake workloads on the fake clock (the meter itself runs on
    this CPU); ``spike`` ("device" | "host") names the canary that runs 2x slower from the third round on."""

    holder = {}

    def canaries(resolved: str):
        dev = FakeWorkload("device", clock, gpu_cost())
        host = FakeWorkload("host", clock, host_cost, granule=256)
        cs = prepare_canaries("cuda", dev, host, PLANS["cuda"], clock=clock)
        for w in (dev, host):
            if w.kind == spike:  # a neighbour starts 150 ms into timing: rounds are 100 ms apart
                w.slow_from_ns, w.factor = clock.ns + 150_000_000, 2.0
        holder["set"] = cs
        return cs

    import bench.latency.trials as trials

    monkeypatch.setattr(trials, "perf_counter_ns", clock)  # the systems' clock; the canaries get theirs injected
    monkeypatch.setattr(trials, "process_time_ns", clock)
    rep = measure({"s": Fixed(clock)}, EXAMPLES, n=10, rounds=4, warmup_items=5, warmup_s=0.0, min_items=10,
                  min_duration_s=0.0, progress=False, canaries=canaries, aa=None, count_work=False)
    return rep, holder["set"]


def test_steady_canaries_are_valid_and_recorded(monkeypatch):
    rep, cs = _measure(monkeypatch, FakeClock(), None)
    assert rep.valid, rep.invalid_reasons
    assert len(rep.canary) == 4 and len(cs.host.rounds) == 4
    js = rep.to_json()["canary"]
    assert js["drift"] == 0.0 and js["host"]["drift"] == 0.0 and js["size"] == 2048
    assert js["median_ms_per_round"] == [c.median_ms for c in rep.canary]
    assert js["warmup"]["runs"] > 0 and js["host"]["workload"] == "fake host work of size 16384"
    assert rep.host_canary_drift == 0.0


@pytest.mark.parametrize("kind, other", [("device", "host"), ("host", "device")])
def test_a_doubled_canary_labels_the_milliseconds_indicative_and_names_it(monkeypatch, kind, other):
    rep, _ = _measure(monkeypatch, FakeClock(), kind)
    reasons = [r for r in rep.ms_reasons if "canary" in r]
    assert len(reasons) == 1, rep.ms_reasons
    assert rep.ms_label == "INDICATIVE" and not any("canary" in r for r in rep.invalid_reasons)
    assert reasons[0].startswith(f"{kind} canary drift 100% > 25%: 2 of 4 rounds ran the fixed {kind} workload")
    assert f"fake {kind} work of size" in reasons[0] and other not in reasons[0].split(";")[0]
    cause = "GPU was contended or its clocks moved" if kind == "device" else "host CPU was contended"
    assert cause in reasons[0]


def test_render_names_both_canaries_and_the_warm_up(monkeypatch):
    import io

    from rich.console import Console

    from bench.latency import render_report

    rep, _ = _measure(monkeypatch, FakeClock(), "host")
    buf = io.StringIO()
    render_report(rep, Console(file=buf, width=300))
    text = buf.getvalue()
    assert "device canary: fake device work of size 2048" in text and "target 1–3 ms" in text
    assert "host canary: fake host work of size 16384" in text and "drift across rounds 100.0%" in text
    assert "device warm-up: 2.0 s" in text and "INDICATIVE" in text


def test_drift_of_rounds():
    rounds = [CanaryResult(i, v) for i, v in enumerate([1.0, 1.0, 1.1, 2.0])]
    assert canary_drift(rounds) == pytest.approx(0.73)
    (reason,) = drift_reasons({"host": rounds}, {"host": "loop"}, 0.25, cause={"host": "busy"})
    assert reason == ("host canary drift 73% > 25%: 1 of 4 rounds ran the fixed host workload (loop) >25% slower "
                      "than the fastest (ms: min 1.000, median 1.100, max 2.000); busy")
