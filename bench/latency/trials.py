"""The one timing loop of the meter and the sweep: every arm on the same unit, back to back, in random order.

Why this design (Randomized Multiple Interleaved Trials, Abedi & Brecht, ICPE 2017): a shared machine's speed
moves by tens of percent over seconds to minutes. The meter used to time one system's block of items, then the
next system's block, so "which system" was confounded with "when": a burst that landed on one block moved that
system's speed-up, and no canary rule could tell. Here the unit (one item at batch size 1, one fixed batch at
B > 1) is timed for every arm within a couple of seconds, in a fresh random order per unit, and the whole unit
list is repeated for several rounds, reshuffled each round. Whatever the machine does then lands on every arm
alike, and a speed-up is a paired ratio (:mod:`bench.latency.paired`).

An *arm* is one system as timed; the A/A arm is a second arm of one system (same model), never shown as a
system: its ratio to its twin is the meter's own false difference, measured in the same run.

Every timing is kept (:class:`TrialLog`): round, unit, arm, position in the unit's order, start time, wall and
process-CPU nanoseconds, output tokens and a hash of the outputs, so ``bench table --check --deep`` derives
every statistic and verdict again. The ``block`` design (each round: one arm's whole unit list, then the next's,
rotated) exists only to show, side by side, what it gets wrong (benchmarks/bench_paired_method.py, the tests).
"""

from __future__ import annotations

import gc
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.latency.clock import Synchronizer

#: module-level so tests drive a fake clock (wall) and a fake CPU clock
perf_counter_ns = time.perf_counter_ns
process_time_ns = time.process_time_ns

DESIGNS = ("paired", "block")
#: the columns of a trial log, in the order the record stores them
COLUMNS = ("round", "unit", "arm", "position", "start_ns", "wall_ns", "cpu_ns", "tokens", "out_hash")
AA_PREFIX = "aa:"
X2_PREFIX = "x2:"


def aa_arm(system: str) -> str:
    """The A/A arm's name for ``system`` (no registered system name contains a colon)."""
    return f"{AA_PREFIX}{system}"


def x2_arm(system: str) -> str:
    """The known-ratio arm's name for ``system``: it decodes every unit twice (a true cost of exactly 2x)."""
    return f"{X2_PREFIX}{system}"


def outputs_hash(texts: Sequence[str]) -> str:
    """A short hash of one unit's outputs (16 hex of sha256 over the lines, newline-terminated)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class Arm:
    """One timed arm: ``name`` as the trial log calls it, ``system`` the system it runs (the A/A arm: its twin)."""

    name: str
    system: str

    @property
    def is_aa(self) -> bool:
        return self.name.startswith(AA_PREFIX)

    @property
    def is_control(self) -> bool:
        """An arm of the meter's own controls (A/A, 2x), never shown as a system."""
        return self.name.startswith((AA_PREFIX, X2_PREFIX))

    @property
    def is_x2(self) -> bool:
        return self.name.startswith(X2_PREFIX)


@dataclass
class TrialLog:
    """Every timing of a run, column by column (exactly what a record stores under ``trials``)."""

    round: list[int] = field(default_factory=list)
    unit: list[int] = field(default_factory=list)
    arm: list[str] = field(default_factory=list)
    position: list[int] = field(default_factory=list)
    start_ns: list[int] = field(default_factory=list)
    wall_ns: list[int] = field(default_factory=list)
    cpu_ns: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    out_hash: list[str] = field(default_factory=list)

    def add(self, round_index: int, unit: int, arm: str, position: int, start_ns: int, wall_ns: int, cpu_ns: int,
            tokens: int, out_hash: str) -> None:
        for column, value in zip(COLUMNS, (round_index, unit, arm, position, start_ns, wall_ns, cpu_ns, tokens,
                                           out_hash), strict=True):
            getattr(self, column).append(value)

    def __len__(self) -> int:
        return len(self.wall_ns)

    @property
    def rounds(self) -> int:
        return max(self.round, default=-1) + 1

    def to_json(self) -> dict[str, list[Any]]:
        return {c: list(getattr(self, c)) for c in COLUMNS}

    @classmethod
    def from_json(cls, data: Any) -> TrialLog:
        """A log read back from a record; raises ValueError (naming the column) when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("'trials' must be an object of columns")
        columns = {}
        for c in COLUMNS:
            values = data.get(c)
            if not isinstance(values, list):
                raise ValueError(f"'trials.{c}' must be a list")
            columns[c] = values
        if len({len(v) for v in columns.values()}) != 1:
            raise ValueError("the columns of 'trials' differ in length")
        for c in COLUMNS:
            want = str if c in ("arm", "out_hash") else int
            if not all(isinstance(v, want) and not isinstance(v, bool) for v in columns[c]):
                raise ValueError(f"'trials.{c}' must hold {want.__name__}s only")
        return cls(**columns)

    def matrix(self, arm: str, n_units: int, column: str = "wall_ns") -> np.ndarray:
        """``column`` of ``arm`` as a rounds × units array (NaN where a timing is missing)."""
        out = np.full((self.rounds, n_units), np.nan)
        values = getattr(self, column)
        for r, u, a, v in zip(self.round, self.unit, self.arm, values, strict=True):
            if a == arm and 0 <= u < n_units:
                out[r, u] = v
        return out

    def completeness(self, arms: Sequence[str], n_units: int) -> list[str]:
        """Why the design is not complete: every (round, unit, arm) timed exactly once, nothing else."""
        seen: dict[tuple[int, int, str], int] = {}
        for key in zip(self.round, self.unit, self.arm, strict=True):
            seen[key] = seen.get(key, 0) + 1
        want = {(r, u, a) for r in range(self.rounds) for u in range(n_units) for a in arms}
        problems = []
        missing = len(want - set(seen))
        extra = [k for k in seen if k not in want]
        twice = [k for k, n in seen.items() if n > 1]
        if missing:
            problems.append(f"{missing} of {len(want)} (round, unit, arm) timings are missing")
        if extra:
            problems.append(f"{len(extra)} timings name a unit or arm outside the design (first: {extra[0]})")
        if twice:
            problems.append(f"{len(twice)} (round, unit, arm) cells were timed more than once (first: {twice[0]})")
        return problems


def unit_order(seed: int, round_index: int, n_units: int) -> list[int]:
    """The order the units are visited in ``round_index`` (a fresh permutation every round)."""
    return [int(u) for u in np.random.default_rng([seed, 7, round_index]).permutation(n_units)]


def arm_order(seed: int, round_index: int, unit: int, n_arms: int) -> list[int]:
    """The order the arms time ``unit`` in ``round_index`` (a fresh permutation for every unit and round)."""
    return [int(a) for a in np.random.default_rng([seed, 11, round_index, unit]).permutation(n_arms)]


def schedule(design: str, seed: int, round_index: int, n_units: int, arms: Sequence[str]) -> list[tuple[int, str, int]]:
    """(unit, arm, position) in timing order for one round.

    ``paired``: units in a random order, every arm on the unit back to back in a random order (position = its
    place in that order). ``block``: the arms in turn, rotated by the round, each timing every unit in order
    (position = the arm's place in the round): the design the meter used to have, kept for comparison only."""
    if design == "paired":
        out = []
        for u in unit_order(seed, round_index, n_units):
            for pos, a in enumerate(arm_order(seed, round_index, u, len(arms))):
                out.append((u, arms[a], pos))
        return out
    if design == "block":
        k = round_index % len(arms) if arms else 0
        rotated = list(arms[k:]) + list(arms[:k])
        return [(u, arm, pos) for pos, arm in enumerate(rotated) for u in range(n_units)]
    raise ValueError(f"design {design!r}: choose one of {', '.join(DESIGNS)}.")


#: decodes one unit for one arm and returns its outputs (one text per item of the unit)
UnitDecode = Callable[[], Sequence[str]]


@dataclass
class TimedUnit:
    """One timing: the outputs, wall and process-CPU nanoseconds, and (CUDA events) device milliseconds."""

    texts: list[str]
    wall_ns: int
    cpu_ns: int
    start_ns: int
    event_ms: float | None = None


def time_once(decode: UnitDecode, sync: Synchronizer, cuda_events: bool = False) -> TimedUnit:
    """Time one call of ``decode`` on the meter's clock: the device queue drained before and after (GPU), CUDA
    events around it when asked (a check that no device work escaped the host clock's window)."""
    events = sync.events() if cuda_events and sync.device == "cuda" else None
    sync.sync()
    c0 = process_time_ns()
    t0 = perf_counter_ns()
    if events is not None:
        events[0].record()
    texts = decode()
    if events is not None:
        events[1].record()
    sync.sync()
    wall = perf_counter_ns() - t0
    cpu = process_time_ns() - c0
    ev = float(events[0].elapsed_time(events[1])) if events is not None else None
    return TimedUnit(list(texts), wall, cpu, t0, ev)


@dataclass
class RoundRunner:
    """Runs the rounds of one design over ``n_units`` units and ``arms``, appending every timing to ``log``.

    ``decode(arm, unit)`` gives the callable that decodes that unit for that arm's system; ``gate`` (optional)
    is the quiet gate, which times a unit again until it ran in a quiet window; ``before_round(r)`` reads the
    round's canaries and machine state; ``tick`` advances a progress display between timings."""

    arms: list[Arm]
    n_units: int
    decode: Callable[[Arm, int], UnitDecode]
    sync: Synchronizer
    seed: int = 0
    design: str = "paired"
    gate: Any = None
    cuda_events: bool = False
    tick: Callable[[str], None] = lambda _text: None
    log: TrialLog = field(default_factory=TrialLog)
    origin_ns: int | None = None
    event_ms: dict[str, list[float]] = field(default_factory=dict)

    def run_round(self, round_index: int) -> None:
        names = [a.name for a in self.arms]
        by_name = {a.name: a for a in self.arms}
        if self.origin_ns is None:
            self.origin_ns = perf_counter_ns()
        for unit, name, position in schedule(self.design, self.seed, round_index, self.n_units, names):
            arm = by_name[name]
            once = self._attempt(arm, unit)
            gc.collect(1)  # the previous arm's young garbage must not be collected on this arm's clock
            timed = once() if self.gate is None else self.gate.time(name, once)
            if timed.event_ms is not None:
                self.event_ms.setdefault(name, []).append(timed.event_ms)
            self.log.add(round_index, unit, name, position, timed.start_ns - self.origin_ns, timed.wall_ns,
                         timed.cpu_ns, sum(len(t.split()) for t in timed.texts), outputs_hash(timed.texts))
            self.tick(f"round {round_index + 1}: unit {unit}, {name}")

    def _attempt(self, arm: Arm, unit: int) -> Callable[[], TimedUnit]:
        decode = self.decode(arm, unit)

        def once() -> TimedUnit:
            try:
                return time_once(decode, self.sync, self.cuda_events)
            except Exception as err:  # name the arm and the unit: a bare traceback from inside a model is opaque
                raise RuntimeError(f"System '{arm.system}' failed decoding unit {unit} ({arm.name}): {err}") from err

        return once


__all__ = ["AA_PREFIX", "COLUMNS", "DESIGNS", "X2_PREFIX", "Arm", "RoundRunner", "TimedUnit", "TrialLog", "aa_arm",
           "arm_order", "outputs_hash", "schedule", "time_once", "unit_order", "x2_arm"]
