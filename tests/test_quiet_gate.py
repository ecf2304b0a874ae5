"""The quiet gate (--quiet-gate): timings taken while the canary probe read slow are discarded and taken
again, every discarded timing is counted, and a gated record says so in a way a hand edit cannot undo.
Driven by scripted probe readings and fake clocks: exact, never the real machine's noise."""

from __future__ import annotations

import copy
from functools import partial

import pytest
from test_latency import FAST, ConstantWork, FakeClock, FakeSystem, examples
from test_latency_sweep import Clock, Costed, items

import bench.latency.meter as meter
from bench.latency import memory, sweep, trials
from bench.latency.canary import PLANS, prepare_canaries
from bench.latency.gate import ROUND_CANARIES, QuietGate, gate_for
from bench.store.integrity import latency_record_problems
from bench.store.sweeps import sweep_problems


class Script:
    """Probe readings from a list (the last one repeats); a clock that only sleeping moves."""

    def __init__(self, readings: list[float]) -> None:
        self.readings, self.t = list(readings), 0.0

    def probe(self) -> float:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]

    def sleep(self, s: float) -> None:
        self.t += s

    def gate(self, **kw) -> QuietGate:  # type: ignore[no-untyped-def]
        return QuietGate(self.probe, clock=lambda: self.t, sleep=self.sleep, **kw)


def test_a_timing_with_a_slow_reading_on_either_side_is_discarded_and_taken_again() -> None:
    #             calibrate    | wait: quiet, then after: slow | wait: slow, slow, quiet | after: quiet
    s = Script([1.2, 1.0, 1.1,   1.05, 1.5,                      1.6, 1.4, 1.1,            1.12])
    gate = s.gate(tolerance=0.15)
    gate.calibrate(readings=3, spread_s=1.0)
    assert gate.reference_ms == 1.0
    calls = []
    out = gate.time("ar", lambda: calls.append(len(calls)) or f"try {len(calls)}")
    assert out == "try 2" and len(calls) == 2  # the first timing (after-reading 1.5) was thrown away
    c = gate.counts["ar"]
    assert (c.accepted, c.retimed, c.ungated) == (1, 1, 0) and c.waited_s == pytest.approx(2 * gate.poll_s)
    assert gate.slow_readings == 3 and gate.reasons() == []


def test_the_reference_is_a_low_percentile_so_one_lucky_reading_cannot_make_every_later_one_slow() -> None:
    s = Script([0.5] + [1.0 + 0.01 * (k % 5) for k in range(19)] + [1.1])
    gate = s.gate(tolerance=0.15)
    gate.calibrate(readings=20, spread_s=1.0)
    assert gate.fastest_ms == 0.5 and gate.reference_ms == 1.0  # p10 of 20 readings: the second fastest
    assert gate.time("ar", lambda: "ok") == "ok" and gate.counts["ar"].accepted == 1
    assert gate.slow_readings == 0  # calibration readings gate nothing and are not counted slow; 1.1 is quiet
    out = gate.to_json()
    assert out["fastest_ms"] == 0.5 and out["reference_ms"] == 1.0 and out["reference_quantile"] == 0.1
    assert not QuietGate(lambda: 1.0, reference_quantile=0.0).reference_quantile  # 0: the fastest, as before
    with pytest.raises(ValueError, match="fraction in"):
        QuietGate(lambda: 1.0, reference_quantile=1.0)


def test_a_rare_fast_spell_is_not_quiet_either_and_discarded_timings_count_as_overhead() -> None:
    #            calibrate  | wait: fast, quiet | after: fast -> retime | wait: quiet | after: quiet
    s = Script([1.0] * 20 + [0.5, 1.0,            0.6,                   1.05,         1.0])
    gate = s.gate(tolerance=0.15)
    gate.calibrate(readings=20)

    def attempt() -> str:
        s.t += 2.0  # the timed item takes 2 s of the fake clock
        return "done"

    assert gate.time("nat", attempt) == "done"
    c = gate.counts["nat"]
    assert (c.accepted, c.retimed, c.ungated, gate.fast_readings, gate.slow_readings) == (1, 1, 0, 2, 0)
    assert c.discarded_s == pytest.approx(2.0) and c.waited_s == pytest.approx(gate.poll_s)
    assert gate.overhead_s == pytest.approx(2.0 + gate.poll_s) and gate.to_json()["fast_readings"] == 2


def test_a_machine_that_never_goes_quiet_leaves_items_ungated_and_the_run_invalid() -> None:
    s = Script([1.0] * 20 + [2.0])  # quiet while calibrating, then slow for good (p10 stays a quiet reading)
    gate = s.gate(tolerance=0.15, max_tries=3, max_wait_s=0.2)
    gate.calibrate(readings=20)
    calls = []
    for _ in range(4):
        gate.time("nar", lambda: calls.append(1))
    c = gate.counts["nar"]
    assert (c.accepted, c.retimed, c.ungated) == (0, 8, 4) and len(calls) == 12
    assert "nar: 4 of 4 timings found no quiet window in 3 tries" in gate.reasons()[0]
    assert gate.reasons(exempt=frozenset({"nar"})) == []
    with pytest.raises(ValueError, match="positive fraction"):
        QuietGate(lambda: 1.0, tolerance=0.0)


class Bursty(ConstantWork):
    """A canary workload 1.6x slower for ``burst_ns`` of the fake clock once :meth:`start` is called: a burst of
    contention that a system's decode starts (so it hits timed items) and that passes while the gate waits."""

    def __init__(self, kind, clock, ms, burst_ns):  # type: ignore[no-untyped-def]
        super().__init__(kind, clock, ms)
        self.burst_ns, self.started = burst_ns, None

    def start(self) -> None:
        if self.started is None:
            self.started = self.clock.ns

    def build(self, size):  # type: ignore[no-untyped-def]
        def run() -> None:
            slow = self.started is not None and self.clock.ns < self.started + self.burst_ns
            self.runs += 1
            self.clock.ns += int(self.ms * (1.6 if slow else 1.0) * 1e6)

        return run


def bursty(clock, burst_ns: int = 8_000_000):  # type: ignore[no-untyped-def]
    """Canaries on ``clock`` (the systems' clock too, so a burst spans items) whose device workload bursts when
    the returned workload's ``start`` is called."""
    work = Bursty("device", clock, 0.3, burst_ns)
    return (lambda device: prepare_canaries(device, work, ConstantWork("host", clock, 1.5), PLANS[device],
                                            clock=clock)), work


def on_call(k: int, action, cost):  # type: ignore[no-untyped-def]
    """A cost function that runs ``action`` at its ``k``-th call (0-based), then costs what ``cost`` says."""
    calls = [0]

    def cost_of(*args):  # type: ignore[no-untyped-def]
        if calls[0] == k:
            action()
        calls[0] += 1
        return cost(*args) if callable(cost) else cost

    return cost_of


class Starts(Costed):
    """A :class:`Costed` system that starts a burst at its ``k``-th batch."""

    def __init__(self, clock, per_batch, per_item, k, start):  # type: ignore[no-untyped-def]
        super().__init__(clock, per_batch, per_item)
        self._hook = on_call(k, start, 0)

    def _cost(self, b: int) -> None:
        self._hook()
        super()._cost(b)


def fast_gate(monkeypatch: pytest.MonkeyPatch, module, clock) -> None:  # type: ignore[no-untyped-def]
    """The gate's sleeps and waits run on the systems' fake clock."""
    def sleep(s: float) -> None:
        clock.ns += int(s * 1e9)

    monkeypatch.setattr(module, "gate_for", partial(gate_for, sleep=sleep, monotonic=lambda: clock.ns / 1e9))


def test_the_meter_retimes_items_of_a_burst_and_records_what_the_gate_did(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(trials, "perf_counter_ns", clock)
    monkeypatch.setattr(trials, "process_time_ns", clock)
    canaries, work = bursty(clock)
    monkeypatch.setattr(meter, "default_canaries", canaries)
    fast_gate(monkeypatch, meter, clock)
    log: list = []
    a = FakeSystem("a", clock, log, cost_ns=3_000_000)
    # a burst mid-run: b's 65th call is its 20th timing (after 5 warm-up items and the 40-item reference pass)
    b = FakeSystem("b", clock, log, cost_ns=on_call(65, work.start, 1_000_000))
    rep = meter.measure({"a": a, "b": b}, examples(100), baseline="a", n=40, rounds=4, quiet_gate=0.15, **FAST)
    assert rep.valid, rep.invalid_reasons
    gate = rep.quiet_gate
    assert gate is not None and gate["tolerance"] == 0.15 and gate["slow_readings"] > 0
    counts = gate["systems"]
    assert all(counts[n]["accepted"] == 40 * 4 and counts[n]["ungated"] == 0 for n in ("a", "b", "aa:b"))
    assert sum(counts[n]["retimed"] for n in ("a", "b", "aa:b")) > 0  # the burst hit timings, which were taken again
    assert len(rep.systems["a"].latencies_ns) == 40  # discarded timings are counted, never kept
    assert "gate:0.15" in rep.signature.split("|")
    assert any(note.startswith("quiet gate 0.15:") for note in rep.notes)
    whole = rep.to_json()
    assert latency_record_problems(whole) == []
    dropped = copy.deepcopy(whole)
    del dropped["quiet_gate"]
    assert "must come together" in str(latency_record_problems(dropped)[0])
    padded = copy.deepcopy(whole)
    padded["quiet_gate"]["systems"]["a"]["accepted"] = 159
    assert "kept 160 timed items" in str(latency_record_problems(padded)[0])
    unsigned = copy.deepcopy(whole)
    unsigned["signature"] = unsigned["signature"].replace("|gate:0.15", "")
    assert "does not name the quiet gate" in str(latency_record_problems(unsigned)[0])


def test_an_ungated_run_has_no_gate_in_its_record(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(trials, "perf_counter_ns", clock)
    monkeypatch.setattr(meter, "default_canaries", bursty(clock)[0])
    rep = meter.measure({"a": FakeSystem("a", clock, [])}, examples(50), n=10, rounds=2, **FAST)
    assert rep.quiet_gate is None and "quiet_gate" not in rep.to_json() and "gate:" not in rep.signature
    assert latency_record_problems(rep.to_json()) == []


def test_the_sweep_gates_every_batch_and_each_cell_counts_its_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(trials, "perf_counter_ns", clock)
    monkeypatch.setattr(trials, "process_time_ns", clock)
    monkeypatch.setattr(memory, "peak_memory", lambda run, kind: memory.cpu_peak(run, read=lambda: 1 << 20))
    fast_gate(monkeypatch, sweep, clock)
    canaries, work = bursty(clock)
    # the burst at nar's 22nd call: its 5th timing at B=1 (after 1 warm-up batch and the 16-batch reference pass)
    systems = {"ar": Costed(clock, 1.0, 4.0), "nar": Starts(clock, 6.0, 0.5, 22, work.start)}
    sw = sweep.sweep(systems, items(), "ar", [1, 4], [1], min_items=16, min_batches=4, rounds=2,
                     canaries=canaries, bootstrap_resamples=200, quiet_gate=0.2)
    assert sw["valid"], sw["invalid_reasons"]
    assert sw["quiet_gate"]["tolerance"] == 0.2 and set(sw["quiet_gate"]["per_threads"]) == {"1"}
    for cell in sw["cells"]:
        g = cell["quiet_gate"]
        assert g["accepted"] + g["ungated"] == len(cell["batch_ns"]) * 2 and g["ungated"] == 0  # every round
    assert sum(c["quiet_gate"]["retimed"] for c in sw["cells"]) > 0
    assert list(sweep_problems(sw, list(systems))) == []
    forged = copy.deepcopy(sw)
    del forged["quiet_gate"]
    assert "is present, but 'sweep.quiet_gate'" in str(next(iter(sweep_problems(forged, list(systems)))))


def test_a_round_canary_reading_a_burst_hit_is_retaken_and_replaces_the_round_s_reading() -> None:
    clock = FakeClock()
    canaries, _ = bursty(clock)
    cs = canaries("cpu")
    #            calibrate | wait: quiet, after: slow (retake) | wait: quiet, after: quiet
    s = Script([1.0] * 3 + [1.0, 2.0, 1.0, 1.0])
    gate = s.gate(tolerance=0.15)
    gate.calibrate(readings=3)
    gate.read_round(partial(cs.measure, 0))
    assert [c.round_index for c in cs.device.rounds] == [0]  # one reading per round, the last one taken
    c = gate.counts[ROUND_CANARIES]
    assert (c.accepted, c.retimed, c.ungated) == (1, 1, 0)
    cs.measure(1)
    assert [c.round_index for c in cs.device.rounds] == [0, 1]
    assert gate.overhead_s == pytest.approx(sum(x.waited_s + x.discarded_s for x in gate.counts.values()))
