"""The quiet gate (``--quiet-gate TOL``): time an item only while a short probe says the machine is quiet.

Why: on shared machines (cloud VMs with a noisy neighbour on the sibling hyper-thread) contention comes
in bursts of seconds that slow *everything* 1.3–1.8×, and cover a third of the time or more. The
canary rule then finds slow rounds in every run longer than a minute and judges it INVALID, rightly,
and no timing can ever be committed from such a machine. The gate brackets each timed item (or
batch) with one reading of the run's judged canary workloads:

- before: wait, polling, until a reading is within a factor ``(1 + TOL)`` of the reference, either way
  (a rare fast spell is as unlike the other items' conditions as a burst): the 10th percentile
  of every reading so far (calibrated over a couple of seconds before timing). Not the fastest reading:
  one lucky reading made 90% of all later readings "slow" on the machine this was built on, and no item
  could be timed; the fastest is recorded beside the reference so the gap is visible;
- time the item;
- after: one more reading. If either reading was off, the timing is discarded and the item is
  timed again (at most ``max_tries`` times; every discarded timing is counted, never used).

An item that never met a quiet window keeps its last timing and counts as *ungated*; more than
``max_ungated`` of a system's items ungated makes the run INVALID. The round canary readings are
gated like items (:meth:`QuietGate.read_round`), so their drift then says whether the machine's *quiet* speed moved
(frequency, thermal), which the gate cannot see. Everything the gate did is in the record
(settings, per-system counts, reference), and the signature names it: gated and ungated timings
never compare silently.

Clock, sleep and probe are parameters, so tests drive the gate with exact fake readings.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: the gate's counts for the round canaries, beside the systems' (no registered system has this name)
ROUND_CANARIES = "(round canaries)"


@dataclass
class GateCounts:
    """What the gate did for one system: timings kept quiet, timings discarded, items kept unquiet."""

    accepted: int = 0
    retimed: int = 0
    ungated: int = 0
    waited_s: float = 0.0
    discarded_s: float = 0.0


@dataclass
class QuietGate:
    """Gate timings on ``probe`` (one reading, in ms) staying within ``tolerance`` of its fastest reading."""

    probe: Callable[[], float]
    tolerance: float = 0.15
    max_tries: int = 10
    max_wait_s: float = 60.0
    poll_s: float = 0.05
    max_ungated: float = 0.05
    description: str = ""
    reference_quantile: float = 0.1
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    reference_ms: float = float("inf")
    fastest_ms: float = float("inf")
    readings: int = 0
    slow_readings: int = 0
    fast_readings: int = 0
    counts: dict[str, GateCounts] = field(default_factory=dict)
    _sorted: list[float] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if not self.tolerance > 0:
            raise ValueError(f"--quiet-gate {self.tolerance}: give the tolerance as a positive fraction, e.g. 0.15 "
                             "(a reading up to 15% slower than the fastest counts as quiet).")
        if not 0 <= self.reference_quantile < 1:
            raise ValueError(f"reference_quantile {self.reference_quantile}: give a fraction in [0, 1).")
        if self.max_tries < 1:
            raise ValueError("The quiet gate needs at least one try per item.")

    def calibrate(self, readings: int = 20, spread_s: float = 2.0) -> None:
        """Set the reference from ``readings`` spread over ``spread_s``: a burst of contention shorter than
        that cannot hide the machine's quiet speed."""
        for k in range(readings):
            self.read()
            if k < readings - 1:
                self.sleep(spread_s / max(1, readings - 1))
        self.slow_readings = self.fast_readings = 0  # judged against a reference still forming; they gate nothing

    def read(self) -> float:
        """One probe reading (ms); the ``reference_quantile`` of the readings so far becomes the reference."""
        ms = float(self.probe())
        self.readings += 1
        bisect.insort(self._sorted, ms)
        self.reference_ms = self._sorted[int(self.reference_quantile * (len(self._sorted) - 1))]
        self.fastest_ms = self._sorted[0]
        if ms > self.reference_ms * (1.0 + self.tolerance):
            self.slow_readings += 1
        elif not self.is_quiet(ms):
            self.fast_readings += 1
        return ms

    def is_quiet(self, ms: float) -> bool:
        """Within a factor ``1 + tolerance`` of the reference, either way: a burst of contention reads slow,
        and a rare fast spell (seen here: the probe at 0.2 ms where it usually reads 0.4-0.5 ms, the sibling
        hyper-thread idle) would time an item faster than the others were timed."""
        band = 1.0 + self.tolerance
        return self.reference_ms / band <= ms <= self.reference_ms * band

    def wait(self) -> bool:
        """Poll until a reading is quiet (True) or ``max_wait_s`` passed (False)."""
        t0 = self.clock()
        while True:
            if self.is_quiet(self.read()):
                return True
            if self.clock() - t0 >= self.max_wait_s:
                return False
            self.sleep(self.poll_s)

    def time(self, name: str, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` (which times itself) until it ran with quiet readings on both sides, at most
        ``max_tries`` times; the result of the last attempt is returned either way."""
        counts = self.counts.setdefault(name, GateCounts())
        for k in range(self.max_tries):
            t0 = self.clock()
            quiet_before = self.wait()
            counts.waited_s += self.clock() - t0
            t1 = self.clock()
            result = attempt()
            spent = self.clock() - t1
            if quiet_before and self.is_quiet(self.read()):
                counts.accepted += 1
                return result
            if k < self.max_tries - 1:
                counts.retimed += 1
                counts.discarded_s += spent
        counts.ungated += 1
        return result

    def read_round(self, measure: Callable[[], T]) -> T:
        """A round canary reading, gated like an item: taken again when a burst hit it, so the canary rule
        judges the machine's quiet speed across rounds (clock, thermal), not how many rounds a burst hit."""
        return self.time(ROUND_CANARIES, measure)

    @property
    def overhead_s(self) -> float:
        """Seconds the gate cost: waiting for quiet and timings it discarded (all systems and round canaries)."""
        return sum(c.waited_s + c.discarded_s for c in self.counts.values())

    def reasons(self, exempt: frozenset[str] = frozenset()) -> list[str]:
        """Why the run is INVALID because too many of a system's items never met a quiet window."""
        out = []
        for name, c in self.counts.items():
            total = c.accepted + c.ungated
            if name in exempt or not total or c.ungated <= self.max_ungated * total:
                continue
            out.append(f"{name}: {c.ungated} of {total} timings found no quiet window in {self.max_tries} tries "
                       f"(probe not within {1 + self.tolerance:.2f}x of its reference {self.reference_ms:.3f} ms; "
                       f"more than {self.max_ungated:.0%} allowed): the machine was contended for most of the run")
        return out

    def settings(self) -> dict[str, Any]:
        """The gate's knobs (part of a record's settings; the signature names the tolerance)."""
        return {"tolerance": self.tolerance, "max_tries": self.max_tries, "max_wait_s": self.max_wait_s,
                "max_ungated": self.max_ungated, "reference_quantile": self.reference_quantile,
                "probe": self.description}

    def to_json(self) -> dict[str, Any]:
        return {**self.settings(), "reference_ms": self.reference_ms, "fastest_ms": self.fastest_ms,
                "readings": self.readings, "fast_readings": self.fast_readings,
                "slow_readings": self.slow_readings, "systems": {n: asdict(c) for n, c in self.counts.items()}}


def gate_for(canary_set: Any, tolerance: float, repeats: int = 5, *, sleep: Callable[[float], None] = time.sleep,
             monotonic: Callable[[], float] = time.monotonic) -> QuietGate:
    """A calibrated gate whose probe is the run's judged canary workloads (their fixed sizes, on the canaries'
    clock), one untimed run then ``repeats`` timed, median per workload, summed: the verdict's canaries, read per
    item. The untimed run refills the caches the timed item evicted, so a reading right after an item is not
    slow for that reason alone."""
    from bench.latency.canary import median_ms

    judged = [c for c in canary_set.canaries if c.judged] or [canary_set.device]
    runs = [(c.workload.build(c.sizing.size), c.workload.settle, c.clock) for c in judged]

    def probe() -> float:
        total = 0.0
        for run, settle, clock in runs:
            settle()
            run()
            total += median_ms(run, settle, repeats, clock)
        return total

    gate = QuietGate(probe, tolerance, description=" + ".join(f"1 untimed + median of {repeats}: {c.description}"
                                                        for c in judged),
                     clock=monotonic, sleep=sleep)
    gate.calibrate()
    return gate


__all__ = ["ROUND_CANARIES", "GateCounts", "QuietGate", "gate_for"]
