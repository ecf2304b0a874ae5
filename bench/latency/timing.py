"""The one timing path of the meter (batch size 1) and the sweep (every B): paired trials with an A/A control.

:func:`time_units` takes built systems and a fixed list of units (item indices: one item at B = 1, one batch at
B > 1) and does, in this order:

1. a warm-up per system (the caller says how: items and seconds for the meter, one batch for the sweep);
2. the untimed reference pass: every system decodes every unit once under the work counters
   (:mod:`bench.latency.work`); its outputs are the reference each timed output must equal, and its pace picks
   the A/A system (the fastest is cheapest to time twice);
3. rounds of the paired, randomized schedule (:mod:`bench.latency.trials`), each opened by the canaries and a
   ``/proc/stat`` reading and closed by another;
4. after the minimum rounds, the speed-ups and the A/A control are judged (:mod:`bench.latency.paired`); while one
   is INCONCLUSIVE (or a system has not yet been timed for ``min_duration_s``), another round runs, within
   ``max_rounds`` and the ``max_duration_s`` time budget.

The result keeps every timing, the rounds' machine readings, the reference hashes and the work counts; the
caller (the meter's report, a sweep cell) stores them so ``bench table --check --deep`` derives everything again.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from bench.api.types import Example
from bench.latency import trials
from bench.latency.clock import Synchronizer
from bench.latency.paired import PairedSpeedup, Thresholds, judge_all, judge_x2, paired_speedup, unit_medians
from bench.latency.procstat import procstat_delta, read_procstat
from bench.latency.trials import Arm, RoundRunner, TrialLog, UnitDecode, aa_arm, outputs_hash, x2_arm
from bench.latency.work import WorkCounts, count_work, instructions_unreadable

#: ``aa`` choices besides a system's name
AA_AUTO = "auto"


def unit_decoder(system: Any, examples: Sequence[Example], items: Sequence[int], forced: Sequence[int] | None,
                 batched: bool) -> UnitDecode:
    """The call that decodes one unit: ``decode_one`` for a single item (batch size 1, the meter's path),
    ``decode_batch`` for a batch; length-forced, each item gets its own forced length."""
    exs = [examples[i] for i in items]
    lengths = None if forced is None else [forced[i] for i in items]
    if not batched:
        one = exs[0]
        if lengths is None:
            return lambda: [system.decode_one(one)]
        n = lengths[0]
        return lambda: [system.decode_one(one, forced_length=n)]
    return lambda: system.decode_batch(exs, lengths)


@dataclass(frozen=True)
class TimingPlan:
    """How the units are timed: the design's rounds, the extension rules and the A/A arm."""

    units: list[list[int]]
    batched: bool = False
    rounds: int = 3
    max_rounds: int = 12
    max_duration_s: float | None = 600.0  # the time budget for extra rounds (the minimum rounds always run)
    min_duration_s: float = 0.0  # extra rounds until every non-probe system was timed this long
    max_timings: int | None = None  # ... or until a system has this many timings
    seed: int = 0
    design: str = "paired"
    aa: str | None = AA_AUTO  # "auto": the fastest system; a name; None: no A/A arm
    x2: str | None = None  # the known-ratio control (an arm decoding every unit twice): "auto", a name
    thresholds: Thresholds = field(default_factory=Thresholds)
    resamples: int = 2000
    count_work: bool = True
    work_units: int = 16  # the first units the FLOP and layer counters see (passes and tokens: every unit)

    def __post_init__(self) -> None:
        if self.rounds < 1 or self.max_rounds < self.rounds:
            raise ValueError(f"rounds {self.rounds}, max_rounds {self.max_rounds}: time at least one round, and "
                             "allow at least as many rounds as the minimum.")
        if not self.units or any(not u for u in self.units):
            raise ValueError("time at least one unit, each of at least one item.")


@dataclass
class TimedUnits:
    """Everything one timing produced: the arms, every timing, the rounds' readings, the reference, the counts,
    and the judged speed-ups (over ``baseline``) and A/A control."""

    plan: TimingPlan
    arms: list[Arm]
    log: TrialLog
    rounds: list[dict[str, Any]]
    reference: dict[str, list[str]]  # system -> each unit's outputs hash (the untimed reference pass)
    reference_texts: dict[str, list[list[str]]]
    passes: dict[str, list[float] | None]  # system -> each unit's decoder passes (None: not counted)
    work: dict[str, WorkCounts]
    warmup: dict[str, tuple[int, float]]
    aa_system: str | None
    baseline: str | None
    probes: frozenset[str]
    event_ms: dict[str, list[float]]
    gate_overhead_s: float = 0.0
    timing_s: float = 0.0
    speedups: dict[str, PairedSpeedup] = field(default_factory=dict)
    aa: PairedSpeedup | None = None
    x2_system: str | None = None
    x2: PairedSpeedup | None = None  # the known-ratio control: its arm over its system, should read 2.00

    @property
    def n_units(self) -> int:
        return len(self.plan.units)

    def matrix(self, arm: str) -> np.ndarray:
        return self.log.matrix(arm, self.n_units)

    def medians(self, arm: str) -> list[float]:
        """Per unit, the median over rounds of ``arm``'s nanoseconds."""
        return [float(v) for v in unit_medians(self.matrix(arm))]

    def timed_s(self, arm: str) -> float:
        return float(sum(w for a, w in zip(self.log.arm, self.log.wall_ns, strict=True) if a == arm)) / 1e9

    def mismatched_units(self, arm: Arm) -> list[int]:
        """Units whose outputs, timed in any round, differ from the system's untimed reference outputs."""
        ref = self.reference.get(arm.system)
        if ref is None:
            return []
        return sorted({u for a, u, h in zip(self.log.arm, self.log.unit, self.log.out_hash, strict=True)
                       if a == arm.name and 0 <= u < len(ref) and h != ref[u]})

    def design_problems(self) -> list[str]:
        """Why the design is broken: a (round, unit, arm) timing missing, repeated or outside the design."""
        return self.log.completeness([a.name for a in self.arms], self.n_units)

    def system_problems(self) -> dict[str, list[str]]:
        """Per system, why its timings are of other work: timed outputs (its arm's or its A/A arm's) that differ
        from its untimed reference outputs (non-deterministic decoding)."""
        out: dict[str, list[str]] = {}
        for arm in self.arms:
            bad = self.mismatched_units(arm)
            if bad:
                out.setdefault(arm.system, []).append(
                    f"{arm.name}: timed outputs differ from its untimed reference outputs on {len(bad)} of "
                    f"{self.n_units} units (first: unit {bad[0]}): non-deterministic decoding, so its timings are "
                    "of different work")
        return out

    def raw_speedups(self) -> tuple[dict[str, PairedSpeedup], PairedSpeedup | None]:
        """Every non-probe system over the baseline, and the A/A control, before any verdict."""
        sp: dict[str, PairedSpeedup] = {}
        p = self.plan
        if self.baseline is not None:
            base = self.matrix(self.baseline)
            for arm in self.arms:
                if arm.is_control or arm.system in self.probes or arm.name == self.baseline:
                    continue
                sp[arm.name] = paired_speedup(base, self.matrix(arm.name), p.resamples, p.seed)
        aa = None
        if self.aa_system is not None:
            aa = paired_speedup(self.matrix(self.aa_system), self.matrix(aa_arm(self.aa_system)), p.resamples, p.seed)
        return sp, aa

    def raw_x2(self) -> PairedSpeedup | None:
        """The known-ratio control before its verdict: the twice-decoding arm over its system (truly 2.00)."""
        if self.x2_system is None:
            return None
        p = self.plan
        return paired_speedup(self.matrix(x2_arm(self.x2_system)), self.matrix(self.x2_system), p.resamples, p.seed)

    def judge(self, design: Sequence[str] = (), per_system: Mapping[str, Sequence[str]] | None = None) -> None:
        """Set :attr:`speedups` and :attr:`aa`, judged; ``design`` and ``per_system`` add reasons the caller knows
        (a system on the wrong device, outputs unlike the quality run's) to the design's and systems' own."""
        raw, aa = self.raw_speedups()
        per = {k: list(v) for k, v in self.system_problems().items()}
        for name, reasons in (per_system or {}).items():
            per.setdefault(name, []).extend(r for r in reasons if r not in per[name])
        for control, owner in (("A/A control", self.aa_system), ("known-ratio control", self.x2_system)):
            if owner is not None and per.get(owner):
                design = [*design, *(f"{control} {r}" for r in per[owner] if f"{control} {r}" not in design)]
        x2 = self.raw_x2()
        broken = [*self.design_problems(), *design]
        self.x2 = None if x2 is None else judge_x2(x2, broken, self.plan.thresholds)
        self.speedups, self.aa = judge_all(raw, aa, broken, self.plan.thresholds, per_system=per,
                                           baseline=self.baseline, x2=x2)

    def undecided(self) -> bool:
        """Whether another round could still change a verdict: a control (A/A, known ratio: the same system on both
        sides, so only timing noise widens it) or a speed-up whose rounds disagree is INCONCLUSIVE. A speed-up
        whose CI is wide while its rounds agree is wide from the spread between items: only more units narrow it
        (its reason says how many), so no round is added for it."""
        from bench.latency.paired import units_needed

        th = self.plan.thresholds
        if any(c is not None and c.verdict == "INCONCLUSIVE" for c in (self.aa, self.x2)):
            return True
        return any(s.verdict == "INCONCLUSIVE" and not units_needed(s, th) and s.ci_ratio > th.ci_ratio
                   for s in self.speedups.values())


def _pick_aa(plan: TimingPlan, names: Sequence[str], probes: frozenset[str], pace: Mapping[str, float]) -> str | None:
    if plan.aa is None:
        return None
    if plan.aa != AA_AUTO:
        if plan.aa not in names:
            raise ValueError(f"--aa {plan.aa!r}: the A/A control must be one of the timed systems "
                             f"({', '.join(names)}).")
        return plan.aa
    candidates = [n for n in names if n not in probes]
    return min(candidates, key=lambda n: (pace[n], names.index(n))) if candidates else None


@dataclass
class ReferencePass:
    """The untimed pass over every unit: each system's outputs (and their hashes), decoder passes, work counts, and
    its pace (meter-clock ns for the pass, which picks the A/A system)."""

    hashes: dict[str, list[str]] = field(default_factory=dict)
    texts: dict[str, list[list[str]]] = field(default_factory=dict)
    passes: dict[str, list[float] | None] = field(default_factory=dict)
    work: dict[str, WorkCounts] = field(default_factory=dict)
    pace: dict[str, float] = field(default_factory=dict)


def reference_pass(systems: Mapping[str, Any], examples: Sequence[Example], plan: TimingPlan,
                   forced: Sequence[int] | None, device: str, say: Callable[[str], None]) -> ReferencePass:
    """Every system decodes every unit once, untimed: the outputs every timed output must equal, the decoder passes
    per unit, and (``plan.count_work``) the work counts (:func:`bench.latency.work.count_work`)."""
    out = ReferencePass()
    sentences = sum(len(u) for u in plan.units)
    instructions = instructions_unreadable() if plan.count_work else None
    for n, system in systems.items():
        seen: list[float] = []

        def decode_all(limit: int | None = None, system: Any = system, seen: list[float] = seen) -> list[list[str]]:
            units = []
            for items in plan.units[:limit]:
                result = list(unit_decoder(system, examples, items, forced, plan.batched)())
                it = system.last_iterations
                if limit is None and isinstance(it, int | float) and not isinstance(it, bool):
                    seen.append(float(it))
                units.append(result)
            return units

        t0 = trials.perf_counter_ns()  # the meter's clock (tests drive it)
        if plan.count_work:
            k = min(plan.work_units, len(plan.units))
            say(f"[work] {n}: reference pass over {len(plan.units)} units, counters over the first {k}")
            counts, outs = count_work(system, decode_all, sentences, (k, sum(len(u) for u in plan.units[:k])),
                                      device, instructions)
        else:
            outs = decode_all()
        per_unit = seen if len(seen) == len(plan.units) else None
        if plan.count_work:
            out.work[n] = _with_passes(counts, per_unit, system.describe().iterations)
        out.pace[n] = float(trials.perf_counter_ns() - t0)
        for k, unit_out in enumerate(outs):
            if len(unit_out) != len(plan.units[k]) or not all(isinstance(x, str) for x in unit_out):
                raise TypeError(f"System '{n}' returned {len(unit_out)} outputs for a unit of {len(plan.units[k])} "
                                "item(s), or a non-string: decode_one returns one str, decode_batch one str per item.")
        out.texts[n] = outs
        out.hashes[n] = [outputs_hash(u) for u in outs]
        out.passes[n] = per_unit
    return out


def time_units(
    systems: Mapping[str, Any], examples: Sequence[Example], plan: TimingPlan, *, baseline: str | None,
    forced: Sequence[int] | None, sync: Synchronizer, canaries: Callable[[], Any],
    warm_up: Callable[[str, Any], tuple[int, float]], gate_for: Callable[[Any], Any] | None = None,
    cuda_events: bool = False, device: str = "cpu", tick: Callable[[str], None] = lambda _t: None,
    on_plan: Callable[[int], None] = lambda _total: None, say: Callable[[str], None] = lambda _m: None,
) -> TimedUnits:
    """Warm up, count, then time ``plan.units`` for every system (and the A/A arm) in paired rounds; see the module
    docstring. ``canaries()`` builds the run's canaries right before timing; ``gate_for(canary_set)`` (optional)
    the quiet gate; ``on_plan(n)`` is told how many timings are planned (again on each extra round)."""
    names = list(systems)
    probes = frozenset(n for n in names if systems[n].latency_probe)
    warm = {n: warm_up(n, systems[n]) for n in names}

    ref = reference_pass(systems, examples, plan, forced, device, say)
    reference, texts, passes, work, pace = ref.hashes, ref.texts, ref.passes, ref.work, ref.pace

    aa_system = _pick_aa(plan, names, probes, pace)
    x2_system = _pick_x2(plan, names, aa_system, probes, pace, {n: compute_type(systems[n]) for n in names})
    arms = [Arm(n, n) for n in names] + ([Arm(aa_arm(aa_system), aa_system)] if aa_system else []) \
        + ([Arm(x2_arm(x2_system), x2_system)] if x2_system else [])
    canary_set = canaries()
    gate = gate_for(canary_set) if gate_for is not None else None

    decoders = {(a.name, u): (twice if a.is_x2 else _same)(unit_decoder(systems[a.system], examples, items, forced,
                                                                        plan.batched))
                for a in arms for u, items in enumerate(plan.units)}
    runner = RoundRunner(arms, len(plan.units), lambda arm, unit: decoders[(arm.name, unit)], sync, plan.seed,
                         plan.design, gate, cuda_events, tick)
    result = TimedUnits(plan, arms, runner.log, [], reference, texts, passes, work, warm, aa_system, baseline, probes,
                        runner.event_ms, x2_system=x2_system)
    per_round = len(arms) * len(plan.units)
    say(f"[time] {len(plan.units)} units x {len(arms)} arms ({', '.join(a.name for a in arms)}), >= {plan.rounds} "
        f"paired rounds ({plan.design})")
    on_plan(plan.rounds * per_round)
    gc.collect()
    gc.freeze()  # survivors of a full collection (models, torch) are never scanned on a timed item's clock
    t_start = time.perf_counter()
    try:
        r = 0
        while True:
            if r >= plan.rounds:
                result.judge()
                short = [a.name for a in arms
                         if a.system not in probes and result.timed_s(a.name) < plan.min_duration_s]
                if not (result.undecided() or short):
                    break
                spent = time.perf_counter() - t_start - (gate.overhead_s if gate is not None else 0.0)
                round_s = spent / r
                if r >= plan.max_rounds:
                    break
                if plan.max_duration_s is not None and spent + round_s > plan.max_duration_s:
                    break
                if plan.max_timings is not None and (r + 1) * len(plan.units) > plan.max_timings:
                    break
                on_plan(per_round)
            result.rounds.append(_round(r, runner, canary_set, gate))
            say(f"[time] round {r + 1} done in {result.rounds[-1]['wall_s']:.0f} s")
            r += 1
    finally:
        gc.unfreeze()
    result.timing_s = time.perf_counter() - t_start
    result.gate_overhead_s = gate.overhead_s if gate is not None else 0.0
    result.judge()
    return result


def _same(decode: UnitDecode) -> UnitDecode:
    return decode


def twice(decode: UnitDecode) -> UnitDecode:
    """The known-ratio control's decode: the unit decoded twice back to back (its outputs must agree)."""
    def run() -> Sequence[str]:
        first = list(decode())
        second = list(decode())
        return second if first == second else [*second, "<decoded differently the second time>"]

    return run


def compute_type(system: Any) -> str:
    """The compute type a system decodes at, as its description states it ("float32" when it does not say)."""
    try:
        config = system.describe().config
    except Exception:  # a fake or plugin system without a full description: decodes as trained
        return "float32"
    if not isinstance(config, Mapping):
        return "float32"
    engine = config.get("ctranslate2")  # a model decoded by another engine states that engine's compute type
    where = engine if isinstance(engine, Mapping) else config
    return str(where.get("compute_type_used", where.get("compute_type", "float32")))


def _pick_x2(plan: TimingPlan, names: Sequence[str], aa_system: str | None, probes: frozenset[str],
             pace: Mapping[str, float], compute: Mapping[str, str] | None = None) -> str | None:
    """The known-ratio control's system. ``auto``: the fastest system decoding at float32 (the A/A system when it
    is one). Why not simply the fastest: its "decode twice" arm must truly cost 2.00x one decode, and an int8
    model's second back-to-back decode runs 5-9 % faster than its first (benchmarks/bench_x2_warm.py: 8-9 % for
    encoder_minilm_int8, 5.5 % for fairseq_nat_int8, 0.8 % for float32 encoder_minilm), so on the fastest int8 twin
    the arm is truly 1.91x and fails the 2 ± 3 % rule however well the meter reads."""
    if plan.x2 is None:
        return None
    if plan.x2 == AA_AUTO:
        candidates = [n for n in names if n not in probes]
        fp32 = [n for n in candidates if (compute or {}).get(n, "float32") == "float32"]
        pool = fp32 or candidates
        if aa_system is not None and aa_system in pool:
            return aa_system
        return min(pool, key=lambda n: (pace[n], names.index(n))) if pool else None
    if plan.x2 not in names:
        raise ValueError(f"--x2-control {plan.x2!r}: the known-ratio control must be one of the timed systems "
                         f"({', '.join(names)}).")
    return plan.x2


def _with_passes(counts: WorkCounts, per_unit: list[float] | None, declared: Any) -> WorkCounts:
    from dataclasses import replace

    unreadable = {k: v for k, v in counts.unreadable.items() if k != "passes"}
    if per_unit:
        return replace(counts, passes_per_unit=sum(per_unit) / len(per_unit), unreadable=unreadable)
    if isinstance(declared, int | float) and not isinstance(declared, bool):
        return replace(counts, passes_per_unit=float(declared), unreadable=unreadable)
    return replace(counts, passes_per_unit=None, unreadable={
        **unreadable, "passes": "the system neither counts its decoder passes nor declares them"})


def _round(r: int, runner: RoundRunner, canary_set: Any, gate: Any) -> dict[str, Any]:
    """One round: canaries and machine state read first, the paired schedule, the machine state again."""
    if gate is None:
        canary_set.measure(r)
    else:  # the round canaries then judge the machine's quiet speed, which the gate cannot see
        gate.read_round(partial(canary_set.measure, r))
    before, t0 = read_procstat(), time.perf_counter()
    runner.run_round(r)
    wall = time.perf_counter() - t0
    return {"round": r, "wall_s": wall, "machine": procstat_delta(before, read_procstat())}


def aa_choice_note(result: TimedUnits) -> str | None:
    """One line naming the A/A arm (and the known-ratio arm) and why it is that system."""
    if result.aa_system is None and result.x2_system is None:
        return None
    parts = []
    if result.aa_system is not None:
        how = "the fastest in the reference pass" if result.plan.aa == AA_AUTO else "chosen with --aa"
        parts.append(f"A/A control: {result.aa_system} timed as a second arm ({aa_arm(result.aa_system)}, {how})")
    if result.x2_system is not None:
        how = "the fastest at float32" if result.plan.x2 == AA_AUTO else "chosen with --x2-control"
        parts.append(f"known-ratio control: {result.x2_system} decoding every item twice "
                     f"({x2_arm(result.x2_system)}, truly 2.00x, {how})")
    return "; ".join(parts) + "; never shown as systems"


__all__ = ["AA_AUTO", "TimedUnits", "TimingPlan", "aa_choice_note", "time_units", "unit_decoder"]
