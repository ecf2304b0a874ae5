"""`bench preflight`: is this machine quiet enough to time on? Two minutes of canary instead of an hour's INVALID run.

A latency run or sweep is judged by its device canary: its per-round reading may not drift by more than
25 % over the run (:mod:`bench.latency.canary`). On a shared VM whose speed moves by a quarter over tens of
seconds, every run longer than a few minutes ends INVALID, and the meter can only say so at the end. The
preflight reads the same canary, sized the same way, as a run would: ``windows`` readings spread over
``seconds``, with the core kept busy between them by the same workload (in a run, decoding keeps it busy;
an idle core can change clock state), and judges the readings with the run's own rule. It also reports the
share of time whose back-to-back readings fall inside the quiet gate's band around their 10th percentile: the
share of moments a gated run (``--quiet-gate``) could time at all, and so what the gate would cost.

A pass is necessary, not sufficient: a run's rounds are minutes apart and the preflight's seconds apart,
so a machine that moves slowly can pass here and still fail a long run. A failure is decisive for the
machine's state at the time: the run's rule, on the run's canary, already fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bench.latency.canary import Canary, CanaryResult, Clock, canary_drift, drift_reasons, median_ms
from bench.latency.gate import QuietGate

#: the exit status of `bench preflight` when the machine is not quiet enough (0: quiet; 2: a usage error)
NOT_QUIET_EXIT = 3


@dataclass(frozen=True)
class PreflightResult:
    """What the preflight saw and its verdict under the run's canary rule."""

    device: str
    workload: str
    seconds: float
    tolerance: float
    gate_tolerance: float
    window_medians_ms: tuple[float, ...]
    readings: int
    reference_ms: float  # the quiet gate's reference over the back-to-back readings (its 10th percentile)
    gate_share: float  # share of the time those readings took that fell inside the gate's band (quiet time)
    reasons: tuple[str, ...]

    @property
    def quiet(self) -> bool:
        return not self.reasons

    @property
    def drift(self) -> float:
        return canary_drift([CanaryResult(i, v) for i, v in enumerate(self.window_medians_ms)])

    def lines(self) -> list[str]:
        """What a person reads: the readings, the verdict, and what it means for a run here."""
        ms = sorted(self.window_medians_ms)
        out = [
            f"preflight on {self.device}: {self.workload}, {len(ms)} readings over {self.seconds:g} s "
            f"(ms: min {ms[0]:.3f}, median {ms[len(ms) // 2]:.3f}, max {ms[-1]:.3f}); drift {self.drift:.0%} "
            f"(a run is INVALID above {self.tolerance:.0%})",
            f"quiet-gate band ±{self.gate_tolerance:.0%} of its reference {self.reference_ms:.3f} ms: "
            f"{self.gate_share:.0%} of the time ({self.readings} back-to-back readings) inside it "
            f"(a gated run waits or retimes for the rest)",
        ]
        if self.quiet:
            out.append("QUIET: the run's canary rule holds here now (necessary, not sufficient: a run's rounds are "
                       "minutes apart).")
        else:
            out += [f"NOT QUIET: {r}" for r in self.reasons]
            out.append("A latency run or sweep started now would very likely be INVALID: time on a dedicated host "
                       "or a GPU, or try again later.")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device, "workload": self.workload, "seconds": self.seconds, "tolerance": self.tolerance,
            "drift": self.drift, "window_medians_ms": list(self.window_medians_ms), "quiet": self.quiet,
            "reasons": list(self.reasons), "gate_tolerance": self.gate_tolerance, "reference_ms": self.reference_ms,
            "readings": self.readings, "gate_share": self.gate_share,
        }


def run_preflight(canary: Canary, device: str, seconds: float = 120.0, windows: int = 24, tolerance: float = 0.25,
                  gate_tolerance: float = 0.15, clock: Clock = time.perf_counter_ns) -> PreflightResult:
    """Read ``canary`` (sized as a run sizes it) ``windows`` times over ``seconds``, the workload running back to
    back in between (each run a single reading), and judge the per-window readings with the run's drift rule."""
    if seconds <= 0 or windows < 2:
        raise ValueError(f"a preflight needs seconds > 0 and at least 2 windows, got {seconds:g} s and {windows}.")
    run = canary.workload.build(canary.sizing.size)
    settle = canary.workload.settle
    run()  # the first call allocates; never counted
    gate = QuietGate(probe=lambda: median_ms(run, settle, 1, clock), tolerance=gate_tolerance)
    singles: list[float] = []
    start = clock()
    for w in range(windows):
        end = start + int((w + 1) * seconds * 1e9 / windows)
        while clock() < end:
            singles.append(gate.read())
        canary.measure(w)
    medians = tuple(c.median_ms for c in canary.rounds)
    reasons = drift_reasons({"device": list(canary.rounds)}, {"device": canary.description}, tolerance,
                            cause={"device": "the machine's speed moved during the preflight"})
    share = sum(r for r in singles if gate.is_quiet(r)) / sum(singles) if singles else 0.0
    return PreflightResult(device, canary.description, seconds, tolerance, gate_tolerance, medians, len(singles),
                           gate.reference_ms if singles else 0.0, share, tuple(reasons))


__all__ = ["NOT_QUIET_EXIT", "PreflightResult", "run_preflight"]
