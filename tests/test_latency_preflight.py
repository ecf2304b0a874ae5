"""`bench preflight`: the run's canary rule applied to a couple of minutes of readings, on a fake clock (exact)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from bench.latency.canary import Canary
from bench.latency.preflight import NOT_QUIET_EXIT, PreflightResult, run_preflight
from bench.latency.sizing import Sizing


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


class Workload:
    """Each run advances the clock by ``cost(now_s)`` ms: the machine's speed as a function of time."""

    kind, backend, granule = "device", "fake", 1

    def __init__(self, clock: Clock, cost: Callable[[float], float]) -> None:
        self.clock, self.cost = clock, cost

    def build(self, size: int) -> Callable[[], None]:
        def run() -> None:
            self.clock.ns += int(self.cost(self.clock.ns / 1e9) * 1e6)

        return run

    def settle(self) -> None:
        pass

    def describe(self, size: int) -> str:
        return f"fake chain {size}"


def preflight(cost: Callable[[float], float], **kw: float) -> PreflightResult:
    clock = Clock()
    canary = Canary(Workload(clock, cost), Sizing(128, 0.2, (0.1, 0.6), ()), repeats=5, clock=clock)
    return run_preflight(canary, "cpu", clock=clock, **kw)  # type: ignore[arg-type]


def test_a_steady_machine_is_quiet():
    r = preflight(lambda t: 20.0, seconds=10, windows=10)
    assert r.quiet and r.reasons == () and r.drift == 0.0
    assert len(r.window_medians_ms) == 10 and r.gate_share == 1.0 and r.reference_ms == pytest.approx(20.0)
    assert r.readings > 400  # back-to-back between the readings: the core stays busy as in a run
    assert any(line.startswith("QUIET") for line in r.lines())


def test_a_machine_whose_speed_moves_by_a_third_fails_with_the_runs_reason():
    """Slow for 4 s in every 10 (the pattern seen on the shared VMs): 40 % of the readings are 1.4x slower, past
    q90, so the run's rule (drift > 25 %) fails, and the gate could time in only 60 % of moments."""
    r = preflight(lambda t: 28.0 if t % 10 >= 6 else 20.0, seconds=60, windows=30)
    assert not r.quiet and r.drift == pytest.approx(0.4, abs=0.01)
    assert r.reasons[0].startswith("device canary drift 40% > 25%")
    assert "the machine's speed moved during the preflight" in r.reasons[0]
    assert r.gate_share == pytest.approx(0.6, abs=0.03)
    text = "\n".join(r.lines())
    assert "NOT QUIET" in text and "very likely be INVALID" in text


def test_one_disturbed_reading_among_many_does_not_condemn_the_machine():
    """The rule's q90: one slow window in 24 stays below the 90th percentile."""
    r = preflight(lambda t: 50.0 if 50 <= t < 55 else 20.0, seconds=120, windows=24)
    assert r.quiet and r.drift == 0.0


def test_the_json_carries_the_verdict_and_what_it_was_judged_on():
    j = preflight(lambda t: 20.0, seconds=4, windows=4).to_json()
    assert j["quiet"] is True and j["tolerance"] == 0.25 and j["gate_tolerance"] == 0.15
    assert len(j["window_medians_ms"]) == 4 and j["reasons"] == [] and j["device"] == "cpu"


@pytest.mark.parametrize(("seconds", "windows"), [(0, 10), (10, 1)])
def test_a_preflight_needs_time_and_two_windows(seconds: float, windows: int):
    with pytest.raises(ValueError, match="at least 2 windows"):
        preflight(lambda t: 20.0, seconds=seconds, windows=windows)


def test_the_command_exits_3_when_not_quiet(monkeypatch: pytest.MonkeyPatch):
    """The exit status scripts chain on (`bench preflight && bench latency ...`); the canary is the meter's,
    swapped here for the fake one."""
    import bench.latency.preflight as mod
    from bench.cli import app

    def fake_run(canary: Canary, device: str, seconds: float, windows: int, tolerance: float, gate: float
                 ) -> PreflightResult:
        return preflight(lambda t: 30.0 if t % 2 >= 1 else 20.0, seconds=seconds, windows=windows)

    monkeypatch.setattr(mod, "run_preflight", fake_run)
    result = CliRunner().invoke(app, ["preflight", "--device", "cpu", "--seconds", "8", "--windows", "8"])
    assert result.exit_code == NOT_QUIET_EXIT, result.output
    assert "NOT QUIET" in result.output
    monkeypatch.setattr(mod, "run_preflight", lambda c, d, s, w, t, g: preflight(lambda x: 20.0, seconds=s, windows=w))
    ok = CliRunner().invoke(app, ["preflight", "--device", "cpu", "--seconds", "8", "--windows", "8", "--json"])
    assert ok.exit_code == 0 and '"quiet": true' in ok.output
