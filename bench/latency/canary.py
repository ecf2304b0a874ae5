"""The canaries: fixed workloads timed once per round, whose drift says the machine was disturbed.

A run has two. The *device* canary is a matrix product chain on the timing device, sized at the
start of the run to take 1–3 ms on a GPU (:mod:`bench.latency.sizing`: compute-bound, so it moves
with the device's clocks and load rather than with launch jitter), after a warm-up that brings the
GPU's clocks up. The *host* canary is a pure-Python loop sized to about a millisecond: batch-1
decoding on a GPU is launch-bound, so a contended host CPU slows every item while the device looks
idle. The sizes are fixed for the run and recorded with it, as are the warm-up and which canaries
judge the verdict (:class:`CanaryPlan`, one per device kind).

Clock, workloads and the GPU-state probe are parameters, so tests drive all of this with exact
fake costs instead of the real clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.latency.sizing import Sizing, choose_size
from bench.latency.workloads import MatmulChain, PythonLoop, Workload

Clock = Callable[[], int]  # nanoseconds, like time.perf_counter_ns


@dataclass(frozen=True)
class CanaryResult:
    """Median time of the fixed workload in one round; drift across rounds exposes contention. ``samples_ms``
    are the timed runs the median is of (kept so a record's drift and label can be derived again)."""

    round_index: int
    median_ms: float
    samples_ms: tuple[float, ...] = ()


@dataclass(frozen=True)
class CanaryPlan:
    """How one device kind's canaries are sized, warmed and judged (fixed per kind, recorded per run).

    The CPU plan keeps the canary the meter always had: a 128×128 chain is ~0.2 ms on the CPUs that
    made the committed records, inside the CPU window, so calibration confirms it and stops (and never
    goes below it); only the device canary judges there, since on a CPU it already runs on the host.
    Neither device canary shrinks below its start: smaller chains measure launch overhead.
    """

    device_target_ms: tuple[float, float]
    device_start: int
    device_max: int
    warmup_s: float
    judged: tuple[str, ...]
    host_target_ms: tuple[float, float] = (1.0, 3.0)
    host_start: int = 4096
    host_max: int = 1 << 24
    repeats: int = 5  # timed runs per round (the median is kept)
    calibration_repeats: int = 3  # timed runs per size tried while sizing


PLANS: dict[str, CanaryPlan] = {
    "cuda": CanaryPlan(device_target_ms=(1.0, 3.0), device_start=256, device_max=8192, warmup_s=2.0,
                       judged=("device", "host")),
    "cpu": CanaryPlan(device_target_ms=(0.1, 0.6), device_start=128, device_max=2048, warmup_s=0.0,
                      judged=("device",)),
}


def sample_ms(run: Callable[[], None], settle: Callable[[], None], repeats: int, clock: Clock) -> list[float]:
    """Wall times (ms, in the order taken) of ``repeats`` runs, each started with the device's queue empty."""
    times = []
    for _ in range(repeats):
        settle()
        t0 = clock()
        run()
        times.append((clock() - t0) / 1e6)
    return times


def middle(samples: list[float] | tuple[float, ...]) -> float:
    """The canary's median: the upper middle of the sorted samples (the element, never an average)."""
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


def median_ms(run: Callable[[], None], settle: Callable[[], None], repeats: int, clock: Clock) -> float:
    """Median wall time of ``repeats`` runs, each started with the device's queue empty."""
    return middle(sample_ms(run, settle, repeats, clock))


def calibrate(workload: Workload, target_ms: tuple[float, float], start: int, max_size: int, repeats: int,
              clock: Clock, min_size: int = 1) -> Sizing:
    """:func:`~bench.latency.sizing.choose_size` on the real workload: build, one untimed run, then the median."""

    def time_at(size: int) -> float:
        run = workload.build(size)
        workload.settle()
        run()  # the first call allocates and selects kernels; never counted
        return median_ms(run, workload.settle, repeats, clock)

    return choose_size(time_at, target_ms, start, workload.granule, max_size, min_size=min_size)


@dataclass(frozen=True)
class WarmUp:
    """The untimed device work run before sizing and timing, and the GPU's state right after it."""

    seconds: float  # asked for
    elapsed_s: float
    runs: int
    size: int
    gpu_state_after: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "elapsed_s": self.elapsed_s, "runs": self.runs, "size": self.size,
                "gpu_state_after": self.gpu_state_after}


def warm_up(run: Callable[[], None], seconds: float, clock: Clock) -> tuple[int, float]:
    """Run the workload back to back for ``seconds`` (GPU boost clocks rise under sustained load)."""
    if seconds <= 0:
        return 0, 0.0
    runs, t0 = 0, clock()
    while True:
        run()
        runs += 1
        elapsed = (clock() - t0) / 1e9
        if elapsed >= seconds:
            return runs, elapsed


class Canary:
    """One workload at one size, timed ``repeats`` times per round; the size never changes in a run."""

    def __init__(self, workload: Workload, sizing: Sizing, repeats: int = 5, clock: Clock = time.perf_counter_ns,
                 judged: bool = True) -> None:
        self.workload, self.sizing, self.repeats, self.clock, self.judged = workload, sizing, repeats, clock, judged
        self._run = workload.build(sizing.size)
        self.rounds: list[CanaryResult] = []

    @property
    def kind(self) -> str:
        return self.workload.kind

    @property
    def description(self) -> str:
        return self.workload.describe(self.sizing.size)

    def measure(self, round_index: int) -> CanaryResult:
        """This round's reading; measuring the same round again (the quiet gate retakes a reading a burst
        disturbed) replaces it: a round has one reading."""
        samples = sample_ms(self._run, self.workload.settle, self.repeats, self.clock)
        result = CanaryResult(round_index, middle(samples), tuple(samples))
        if self.rounds and self.rounds[-1].round_index == round_index:
            self.rounds[-1] = result
        else:
            self.rounds.append(result)
        return result

    def drift(self) -> float:
        return canary_drift(self.rounds)

    def to_json(self) -> dict[str, Any]:
        return {
            "backend": self.workload.backend, "workload": self.description, "size": self.sizing.size,
            "judged": self.judged, "drift": self.drift(), "sizing": self.sizing.to_json(),
            "median_ms_per_round": [c.median_ms for c in self.rounds],
            "samples_ms_per_round": [list(c.samples_ms) for c in self.rounds],
        }


@dataclass
class CanarySet:
    """A run's device and host canaries, sized and warmed, measured together at the start of each round."""

    device_name: str
    device: Canary
    host: Canary
    warmup: WarmUp
    notes: list[str] = field(default_factory=list)

    def measure(self, round_index: int) -> None:
        self.device.measure(round_index)
        self.host.measure(round_index)

    @property
    def canaries(self) -> tuple[Canary, Canary]:
        return self.device, self.host

    def reasons(self, tolerance: float) -> list[str]:
        """Why the run is INVALID because a judged canary drifted (empty when both held)."""
        return drift_reasons(
            {c.kind: c.rounds for c in self.canaries if c.judged},
            {c.kind: c.description for c in self.canaries},
            tolerance,
            cause={"device": _device_cause(self.device_name), "host": HOST_CAUSE},
        )

    def to_json(self) -> dict[str, Any]:
        """The device canary's fields at the top level (where older records keep them), the host's under "host"."""
        return {**self.device.to_json(), "warmup": self.warmup.to_json(), "host": self.host.to_json(),
                "notes": list(self.notes)}


def prepare_canaries(
    device_name: str,
    device_workload: Workload,
    host_workload: Workload,
    plan: CanaryPlan,
    clock: Clock = time.perf_counter_ns,
    probe: Callable[[], dict[str, Any]] | None = None,
) -> CanarySet:
    """Size the device canary, warm the device up at that size, size it again (clocks are up now), size the host's.

    ``probe`` reads the GPU's state (clocks, temperature) right after the warm-up, for the record.
    """
    first = calibrate(device_workload, plan.device_target_ms, plan.device_start, plan.device_max,
                      plan.calibration_repeats, clock, min_size=plan.device_start)
    runs, elapsed = warm_up(device_workload.build(first.size), plan.warmup_s, clock)
    warm = WarmUp(plan.warmup_s, elapsed, runs, first.size, probe() if probe is not None and runs else None)
    sizing = first
    if runs:
        device_workload.settle()
        sizing = calibrate(device_workload, plan.device_target_ms, first.size, plan.device_max,
                           plan.calibration_repeats, clock, min_size=plan.device_start)
    host_sizing = calibrate(host_workload, plan.host_target_ms, plan.host_start, plan.host_max,
                            plan.calibration_repeats, clock)
    device = Canary(device_workload, sizing, plan.repeats, clock, judged="device" in plan.judged)
    host = Canary(host_workload, host_sizing, plan.repeats, clock, judged="host" in plan.judged)
    notes = [
        f"{c.kind} canary: no size of the {c.workload.backend} workload took "
        f"{c.sizing.target_ms[0]:g}–{c.sizing.target_ms[1]:g} ms; kept {c.description} at {c.sizing.ms:.3f} ms"
        for c in (device, host) if not c.sizing.in_range
    ]
    return CanarySet(device_name, device, host, warm, notes)


def default_canaries(device: str) -> CanarySet:
    """The meter's canaries for ``device`` ("cpu" | "cuda"), with this machine's clock and GPU probe."""
    probe = None
    if device == "cuda":
        from bench.env.fingerprint import gpu_state

        probe = gpu_state
    return prepare_canaries(device, MatmulChain(device), PythonLoop(), PLANS[device], probe=probe)


def canary_drift(results: list[CanaryResult]) -> float:
    """How much slower than its fastest round the canary ran in its slow rounds.

    ``(q90 - min) / min`` over the per-round medians: with few rounds q90 is close to the max, so
    any disturbed round counts; in a long run one stray blip among many rounds does not condemn
    the whole measurement, but contention lasting over a tenth of the rounds does. 0 for < 2 rounds.
    """
    if len(results) < 2:
        return 0.0
    import numpy as np

    values = np.array([r.median_ms for r in results])
    low = float(values.min())
    if low <= 0:  # only a broken clock reads 0 ms for real work
        return 0.0 if float(values.max()) <= 0 else math.inf
    return (float(np.percentile(values, 90)) - low) / low


HOST_CAUSE = "the host CPU was contended (batch-1 decoding is launch-bound, so every item pays for it)"


def _device_cause(device: str) -> str:
    return "the GPU was contended or its clocks moved" if device == "cuda" else "the machine was contended"


def drift_reasons(
    rounds: Mapping[str, list[CanaryResult]], workloads: Mapping[str, str], tolerance: float,
    cause: Mapping[str, str] | None = None,
) -> list[str]:
    """One reason per canary (``rounds``: kind -> its per-round results) that drifted past ``tolerance``."""
    out = []
    for kind, results in rounds.items():
        drift = canary_drift(results)
        if drift <= tolerance:
            continue
        ms = sorted(c.median_ms for c in results)
        slow = sum(v > ms[0] * (1 + tolerance) for v in ms)
        why = (cause or {}).get(kind, "the machine was contended")
        out.append(
            f"{kind} canary drift {drift:.0%} > {tolerance:.0%}: {slow} of {len(ms)} rounds ran the fixed {kind} "
            f"workload ({workloads.get(kind, kind)}) >{tolerance:.0%} slower than the fastest (ms: min {ms[0]:.3f}, "
            f"median {ms[len(ms) // 2]:.3f}, max {ms[-1]:.3f}); {why}"
        )
    return out


__all__ = [
    "PLANS", "CanaryPlan", "CanaryResult", "CanarySet", "Canary", "Clock", "WarmUp", "calibrate", "canary_drift",
    "default_canaries", "drift_reasons", "median_ms", "middle", "prepare_canaries", "sample_ms", "warm_up",
]
