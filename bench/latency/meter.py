"""The single-stream latency meter: batch size 1, the meter owns the clock and the schedule.

Adapters never time themselves. For each item the meter reads ``perf_counter_ns`` around one
``decode_one`` call (with ``torch.cuda.synchronize()`` on both sides on GPU), after a warm-up of
at least ``warmup_items`` items and ``warmup_s`` seconds per system. Systems are interleaved in
rounds over one seeded item list, and two fixed canary workloads (device and host, sized for this
machine at the start of the run: :mod:`bench.latency.canary`) are timed each round.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from bench.api.errors import LengthForcedUnsupported
from bench.api.types import Example
from bench.env.device import resolve_device
from bench.env.fingerprint import device_label, environment_fingerprint, identity_changes
from bench.latency.canary import CanarySet, default_canaries
from bench.latency.clock import Synchronizer
from bench.latency.gate import ROUND_CANARIES, QuietGate, gate_for
from bench.latency.outputs import check_outputs, reference_for
from bench.latency.progress import MeterProgress
from bench.latency.report import LatencyReport, Settings, SystemLatency, latency_signature
from bench.latency.schedule import ItemPlan, rotated, round_sizes
from bench.latency.stats import paired_bootstrap_speedup, summarize

perf_counter_ns = time.perf_counter_ns


class _Runner:
    """Times one system item by item and keeps its raw observations (outside the clock)."""

    def __init__(
        self, name: str, system: Any, examples: Sequence[Example], sync: Synchronizer,
        forced: list[int] | None, cuda_events: bool,
    ) -> None:
        self.name, self.system, self.examples, self.sync = name, system, examples, sync
        self.forced, self.cuda_events = forced, cuda_events and sync.device == "cuda"
        self.fn = system.decode_one
        self.probe = bool(system.latency_probe)
        self.latencies: list[int] = []
        self.indices: list[int] = []
        self.outputs: list[str] = []
        self.iterations: list[float] = []
        self.event_ms: list[float] = []

    @property
    def timed_s(self) -> float:
        return sum(self.latencies) / 1e9

    def run(self, idx: int, keep: bool, gate: QuietGate | None = None) -> int:
        """Time example ``idx``; store the observation when ``keep`` (warm-up passes False). With ``gate``
        the item is timed again until it ran in a quiet window (:mod:`bench.latency.gate`)."""
        ex = self.examples[idx]
        try:
            if gate is None:
                out, ns, ev_ms = self._time_once(ex, idx)
            else:
                out, ns, ev_ms = gate.time(self.name, lambda: self._time_once(ex, idx))
        except Exception as err:  # name system and item: a bare traceback from inside a model is opaque
            raise RuntimeError(
                f"System '{self.name}' failed in decode_one on example {ex.id!r} (index {idx}): {err}"
            ) from err
        if not isinstance(out, str):
            raise TypeError(f"System '{self.name}'.decode_one returned {type(out).__name__}, expected str.")
        if keep:
            self.latencies.append(ns)
            self.indices.append(idx)
            self.outputs.append(out)
            it = self.system.last_iterations
            if isinstance(it, int | float):
                self.iterations.append(float(it))
            if ev_ms is not None:
                self.event_ms.append(ev_ms)
        return ns

    def _time_once(self, ex: Example, idx: int) -> tuple[Any, int, float | None]:
        fn = self.fn
        if self.sync.device == "cuda":
            return self._run_cuda(ex, idx)
        if self.forced is None:
            t0 = perf_counter_ns()
            out = fn(ex)
            return out, perf_counter_ns() - t0, None
        length = self.forced[idx]
        t0 = perf_counter_ns()
        out = fn(ex, forced_length=length)
        return out, perf_counter_ns() - t0, None

    def _run_cuda(self, ex: Example, idx: int) -> tuple[str, int, float | None]:
        sync = self.sync.sync
        events = self.sync.events() if self.cuda_events else None
        length = None if self.forced is None else self.forced[idx]
        sync()
        t0 = perf_counter_ns()
        if events is not None:
            events[0].record()
        out = self.fn(ex) if length is None else self.fn(ex, forced_length=length)
        if events is not None:
            events[1].record()
        sync()
        ns = perf_counter_ns() - t0
        ev_ms = float(events[0].elapsed_time(events[1])) if events is not None else None
        return out, ns, ev_ms


def measure(
    systems: Mapping[str, Any],
    examples: Sequence[Example],
    baseline: str | None = None,
    n: int = 200,
    rounds: int = 10,
    *,
    warmup_items: int = 20,
    warmup_s: float = 5.0,
    min_items: int = 100,
    min_duration_s: float = 10.0,
    max_duration_s: float | None = 600.0,
    max_items: int | None = 10_000,
    seed: int = 0,
    reference_outputs: Mapping[str, Sequence[str]] | None = None,
    length_forced: bool = False,
    device: str | None = None,
    canary_tolerance: float = 0.25,
    precision: str = "fp32",
    cuda_events: bool = True,
    cuda_event_tolerance: float = 0.05,
    bootstrap_resamples: int = 2000,
    progress: bool = True,
    console: Any = None,
    canaries: Callable[[str], CanarySet] | None = None,
    quiet_gate: float | None = None,
) -> LatencyReport:
    """Time every system on the same seeded items, interleaved in rounds, and judge the run.

    ``n`` items are split into ``rounds`` slices; in round ``r`` each system, in an order rotated
    by ``r``, times slice ``r``. If after the planned rounds some system has been timed for less
    than ``min_duration_s``, extra rounds run (for all systems) until it has, until ``max_items``
    items were timed per system (sub-millisecond systems: their statistics are precise long before
    the duration is reached; a note says so), or until ``max_duration_s`` of timing has passed
    (then the run is INVALID). ``reference_outputs[name]`` (the quality run's
    outputs, in ``examples`` order) is compared with what ``name`` produced while being timed.
    ``length_forced`` gives each system the reference length (whitespace tokens of the target)
    via ``decode_one(example, forced_length=L)``, for speed columns of untrained models.
    A system with ``latency_probe = True`` (the null system) is timed like the others but is
    exempt from ``min_duration_s``: its items take microseconds and it exists to show overhead.
    ``precision`` (fp32 | bf16 | auto, resolved on this machine) is one setting for every system
    of the comparison, applied with autocast around every decode, and part of the signature.
    ``canaries`` builds the run's canaries for the resolved device (default
    :func:`~bench.latency.canary.default_canaries`: sized on this machine, GPU warmed up); the run is
    INVALID when a judged canary's per-round median drifts by more than ``canary_tolerance``.
    ``quiet_gate`` (a tolerance, e.g. 0.15) times each item only in a quiet window of the judged canaries
    (:mod:`bench.latency.gate`): for machines whose contention comes in bursts; recorded and signed.
    """
    from bench.api.precision import autocast, resolve_precision

    names = list(systems)
    _validate(systems, examples, baseline, n, rounds, reference_outputs, length_forced)
    wall0 = time.perf_counter()
    placement = resolve_device(device)  # the concrete device (cpu, cuda:N), as --device resolves it
    device = placement.split(":")[0]  # the kind the clock and the canaries work with
    sync = Synchronizer(device)
    settings = Settings(
        n=n, rounds=rounds, warmup_items=warmup_items, warmup_s=warmup_s, min_items=min_items,
        min_duration_s=min_duration_s, max_duration_s=max_duration_s, max_items=max_items, seed=seed,
        length_forced=length_forced, device=device, sync=sync.name, canary_tolerance=canary_tolerance,
        precision=resolve_precision(precision, device).effective, placement=placement, quiet_gate=quiet_gate,
    )
    fp_before = environment_fingerprint()
    forced = [len(ex.target.split()) for ex in examples] if length_forced else None
    runners = {nm: _Runner(nm, systems[nm], examples, sync, forced, cuda_events) for nm in names}
    infos = {nm: _describe(systems[nm]) for nm in names}
    plan = ItemPlan(len(examples), seed)
    notes: list[str] = []
    warm: dict[str, tuple[int, float]] = {}

    decode_precision = autocast(resolve_precision(precision, device), device)
    with MeterProgress(enabled=progress, console=console) as bar, decode_precision:
        for nm in names:
            warm[nm] = _warm_up(runners[nm], plan, warmup_items, warmup_s, bar)
        # sized (and the GPU warmed up) right before timing, so the clocks it saw are the ones timing sees
        canary_set = (canaries or default_canaries)(device)
        gate = None if quiet_gate is None else gate_for(canary_set, quiet_gate)
        sizes = round_sizes(n, rounds)
        stream = plan.timed()
        bar.start_timing(total=n * len(names))
        # A full collection with torch/transformers loaded takes ~0.3 s: do it once here and freeze
        # the survivors, so no timed item pays for scanning the whole heap.
        gc.collect()
        gc.freeze()
        t_start = time.perf_counter()
        try:
            r = _timed_rounds(runners, names, rounds, sizes, stream, canary_set, min_duration_s,
                              max_duration_s, max_items, t_start, bar, gate)
        finally:
            gc.unfreeze()
    fp_after = environment_fingerprint()

    n_timed = len(runners[names[0]].latencies)
    notes += canary_set.notes
    if r > rounds:
        notes.append(f"extended by {r - rounds} round(s) to reach min_duration_s={min_duration_s:g}")
    overlap = [nm for nm in names if not runners[nm].probe and warm[nm][0] + n_timed > len(examples)]
    if overlap:
        notes.append(
            f"warm-up and timed items overlap for {', '.join(overlap)}: the split has {len(examples)} "
            f"examples, fewer than warm-up + {n_timed} timed items"
        )
    if n_timed > len(examples):
        notes.append(f"timed items repeat: {n_timed} timed items from {len(examples)} examples")
    if length_forced and reference_outputs:
        notes.append("length-forced outputs are not compared with the quality run's outputs")

    capped = max_items is not None and n_timed >= max_items
    short = [nm for nm in names if not runners[nm].probe and runners[nm].timed_s < min_duration_s]
    if capped and short:
        notes.append(
            f"{', '.join(short)} reached max_items={max_items} before min_duration_s={min_duration_s:g} "
            "(items this fast give precise statistics sooner); the duration minimum is waived"
        )
    results = {
        nm: _result(nm, runners[nm], infos[nm], warm[nm], examples, reference_outputs, length_forced,
                    0.0 if capped else min_duration_s, cuda_event_tolerance)
        for nm in names
    }
    if baseline is not None:
        base_lat = results[baseline].latencies_ns
        for nm, res in results.items():
            if runners[nm].probe:
                continue  # a speedup of "doing nothing" means nothing
            res.speedup = paired_bootstrap_speedup(base_lat, res.latencies_ns, bootstrap_resamples, seed)

    run_reasons = []
    if n_timed < min_items:
        run_reasons.append(f"too few items: {n_timed} timed per system < min_items={min_items}")
    run_reasons += canary_set.reasons(canary_tolerance)
    if gate is not None:
        run_reasons += gate.reasons(exempt=frozenset(nm for nm in names if runners[nm].probe))
        c = {nm: gate.counts.get(nm) for nm in names}
        retimed = sum(x.retimed for x in c.values() if x)
        rc = gate.counts.get(ROUND_CANARIES)
        notes.append(f"quiet gate {quiet_gate:g}: {retimed} timing(s) discarded and re-timed, "
                     f"{rc.retimed if rc else 0} round canary reading(s) retaken, "
                     f"{sum(x.ungated for x in c.values() if x)} item(s) ungated, reference probe "
                     f"{gate.reference_ms:.3f} ms (p{gate.reference_quantile * 100:g} of {gate.readings} readings, "
                     f"fastest {gate.fastest_ms:.3f} ms; {gate.slow_readings} slow, {gate.fast_readings} fast)")
    run_reasons += misplaced(systems, device)
    run_reasons += [f"environment changed during timing: {c}" for c in identity_changes(fp_before, fp_after)]

    label = device_label(fp_before, device)
    return LatencyReport(
        signature=latency_signature(settings, label, fp_before, n_timed),
        device_label=label,
        settings=settings,
        baseline=baseline,
        systems=results,
        canary=list(canary_set.device.rounds),
        canary_drift=canary_set.device.drift(),
        canary_backend=canary_set.device.workload.backend,
        host_canary_drift=canary_set.host.drift(),
        canary_info=canary_set.to_json(),
        quiet_gate=None if gate is None else gate.to_json(),
        fingerprint_before=fp_before,
        fingerprint_after=fp_after,
        run_reasons=run_reasons,
        notes=notes,
        wall_s=time.perf_counter() - wall0,
    )


def misplaced(systems: Mapping[str, Any], device: str) -> list[str]:
    """Reasons for every model-holding system that is not on the meter's kind of device: a speed-up
    between a GPU model and a CPU one is a placement, not a method (one GPU run once printed 1.27x
    for a real 8.8x because NAR models stayed on the CPU). Systems without a model are exempt."""
    kind = device.split(":")[0]
    return [
        f"{name} is placed on {system.device}, but the meter times {device}: its speed-up compares devices, "
        f"not systems (the harness places every system with --device)"
        for name, system in systems.items()
        if system.models() and str(system.device).split(":")[0] != kind
    ]


def _timed_rounds(
    runners: dict[str, _Runner], names: list[str], rounds: int, sizes: list[int], stream: Any,
    canary_set: CanarySet, min_duration_s: float, max_duration_s: float | None,
    max_items: int | None, t_start: float, bar: MeterProgress, gate: QuietGate | None = None,
) -> int:
    """The planned rounds, then extra rounds until every non-probe system met ``min_duration_s``.

    Returns the number of rounds run."""
    r = 0
    while True:
        if r < rounds:
            size = sizes[r]
        else:
            shortest = min((rn.timed_s for rn in runners.values() if not rn.probe), default=math.inf)
            if shortest >= min_duration_s:
                return r
            overhead = 0.0 if gate is None else gate.overhead_s  # waiting for quiet, discarded timings
            if max_duration_s is not None and time.perf_counter() - t_start - overhead >= max_duration_s:
                return r
            done = len(runners[names[0]].latencies)
            if max_items is not None and done >= max_items:
                return r
            size = max(sizes) if max_items is None else max(1, min(max(sizes), max_items - done))
            bar.extend(size * len(names))
        items = [next(stream) for _ in range(size)]
        if gate is None:
            canary_set.measure(r)
        else:  # the round canaries then judge the machine's quiet speed, which the gate cannot see
            gate.read_round(partial(canary_set.measure, r))
        for nm in rotated(names, r):
            gc.collect(1)  # the previous system's young garbage must not be collected on this one's clock
            bar.describe(f"round {r + 1}: {nm}")
            runner = runners[nm]
            for idx in items:
                runner.run(idx, keep=True, gate=gate)
                bar.advance()
        r += 1


def _warm_up(
    runner: _Runner, plan: ItemPlan, items: int, seconds: float, bar: MeterProgress
) -> tuple[int, float]:
    """Run untimed items until both the count and the duration minimum are met."""
    bar.start_warmup(runner.name, items)
    count, t0 = 0, time.perf_counter()
    stream = plan.warmup()
    while count < items or time.perf_counter() - t0 < seconds:
        runner.run(next(stream), keep=False)
        count += 1
        bar.warmup_tick(count)
    return count, time.perf_counter() - t0


def _result(
    name: str, runner: _Runner, info: dict[str, Any], warm: tuple[int, float],
    examples: Sequence[Example], reference_outputs: Mapping[str, Sequence[str]] | None,
    length_forced: bool, min_duration_s: float, cuda_event_tolerance: float,
) -> SystemLatency:
    iterations = runner.iterations if len(runner.iterations) == len(runner.latencies) else None
    if iterations is None and isinstance(info.get("iterations"), int | float):
        iterations = [float(info["iterations"])]
    tokens = [len(o.split()) for o in runner.outputs]
    stats = summarize(runner.latencies, tokens, iterations)
    reference = None if length_forced else reference_for(name, reference_outputs)
    check = check_outputs(runner.indices, runner.outputs, [ex.id for ex in examples], reference)
    reasons = []
    if runner.timed_s < min_duration_s and not runner.probe:
        reasons.append(f"timed for {runner.timed_s:.2f} s < min_duration_s={min_duration_s:g}")
    if check.match is False and check.n_mismatched:
        mm = check.first_mismatch or {}
        reasons.append(
            f"outputs differ from the quality run on {check.n_mismatched}/{check.n_compared} items "
            f"(first: {mm.get('id')!r}: timed {mm.get('timed')!r} vs quality {mm.get('quality_run')!r})"
        )
    if check.nondeterministic:
        reasons.append(
            f"non-deterministic outputs: {len(check.nondeterministic)} item(s) decoded differently when "
            f"repeated (first: {check.nondeterministic[0]!r})"
        )
    event_mean = sum(runner.event_ms) / len(runner.event_ms) if runner.event_ms else None
    if event_mean is not None and event_mean > stats.mean_ms * (1 + cuda_event_tolerance):
        reasons.append(
            f"CUDA events ({event_mean:.3f} ms) exceed the host clock ({stats.mean_ms:.3f} ms): "
            "work escaped the synchronised window"
        )
    return SystemLatency(
        name=name, info=info, stats=stats, latencies_ns=list(runner.latencies),
        item_indices=list(runner.indices), outputs=check, warmup_count=warm[0],
        warmup_elapsed_s=warm[1], timed_s=runner.timed_s, cuda_event_ms_mean=event_mean, reasons=reasons,
        tokens=tokens, iterations=iterations,
    )


def _describe(system: Any) -> dict[str, Any]:
    """Family, iterations, dtype and compile settings from ``describe()`` (recorded per system)."""
    info = system.describe()
    config = dict(info.config or {})
    return {
        "family": info.family,
        "iterations": info.iterations,
        "backbone": info.backbone,
        "dtype": config.get("dtype", "float32"),
        # a config's "compile" is the training policy (bench.api.precision); decoding is eager
        "compile": bool(config.get("decode_compile", False)),
    }


def _validate(
    systems: Mapping[str, Any], examples: Sequence[Example], baseline: str | None, n: int, rounds: int,
    reference_outputs: Mapping[str, Sequence[str]] | None, length_forced: bool,
) -> None:
    if not systems:
        raise ValueError("measure() needs at least one system.")
    if not examples:
        raise ValueError("measure() needs at least one example to time.")
    if baseline is not None and baseline not in systems:
        raise ValueError(f"Baseline '{baseline}' is not among the timed systems ({', '.join(systems)}).")
    round_sizes(n, rounds)  # raises a clear error for impossible n/rounds
    from bench.api.system import check_system

    for nm, sys_ in systems.items():
        check_system(nm, sys_)  # the declared contract: decode_one, supports_forced_length, last_iterations
    if length_forced:
        unsupported = [nm for nm, s in systems.items() if not s.supports_forced_length]
        if unsupported:
            raise LengthForcedUnsupported(
                f"Length-forced timing needs decode_one(example, forced_length=L), but "
                f"{', '.join(unsupported)} do(es) not set supports_forced_length = True. Implement it in "
                "the adapter or time these systems without length forcing."
            )
    for nm, outs in (reference_outputs or {}).items():
        if nm not in systems:
            raise ValueError(f"reference_outputs has outputs for '{nm}', which is not being timed.")
        if len(outs) != len(examples):
            raise ValueError(
                f"reference_outputs['{nm}'] has {len(outs)} lines for {len(examples)} examples; "
                "pass the quality run's outputs for the same split in split order."
            )


__all__ = ["LengthForcedUnsupported", "measure"]
