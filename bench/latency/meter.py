"""The single-stream latency meter: batch size 1; the meter owns the clock and the schedule.

Adapters never time themselves. Every system, and an A/A arm (a second arm of the fastest system), decodes the
same seeded units (one item each) back to back in a fresh random order per unit, for several rounds, each unit
reshuffled each round (:mod:`bench.latency.timing`, :mod:`bench.latency.trials`): a speed-up is a paired ratio,
judged VALID / INCONCLUSIVE / UNSTABLE / INVALID by its CI, its per-round ratios and the A/A control
(:mod:`bench.latency.paired`). The canaries (device and host, sized for this machine:
:mod:`bench.latency.canary`), timed each round, only label the absolute milliseconds VALID or INDICATIVE.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.api.errors import LengthForcedUnsupported
from bench.api.types import Example
from bench.env.device import resolve_device
from bench.env.fingerprint import device_label, environment_fingerprint, identity_changes
from bench.latency.canary import CanarySet, default_canaries
from bench.latency.clock import Synchronizer
from bench.latency.gate import ROUND_CANARIES, gate_for
from bench.latency.outputs import check_outputs, reference_for
from bench.latency.paired import Thresholds
from bench.latency.progress import MeterProgress
from bench.latency.report import LatencyReport, Settings, SystemLatency, latency_signature
from bench.latency.schedule import ItemPlan
from bench.latency.stats import summarize
from bench.latency.timing import AA_AUTO, TimedUnits, TimingPlan, aa_choice_note, time_units


def measure(
    systems: Mapping[str, Any],
    examples: Sequence[Example],
    baseline: str | None = None,
    n: int = 100,
    rounds: int = 3,
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
    aa: str | None = AA_AUTO,
    x2: str | None = None,
    max_rounds: int = 12,
    thresholds: Thresholds | None = None,
    design: str = "paired",
    count_work: bool = True,
    say: Callable[[str], None] | None = None,
) -> LatencyReport:
    """Time every system on the same ``n`` seeded units (one item each) in paired, randomized rounds.

    At least ``rounds`` rounds run, each timing every (unit, system) once; more run, up to ``max_rounds`` and
    within ``max_duration_s`` seconds of timing, while a speed-up or the A/A control is INCONCLUSIVE or a non-probe
    system was timed for less than ``min_duration_s`` (or until a system has ``max_items`` timings). Per unit, the
    median over rounds is the system's latency; ``stats`` summarize those medians, and the speed-up over
    ``baseline`` is the ratio of their sums with a paired bootstrap CI over units (:mod:`bench.latency.paired`).
    ``aa``: the A/A control's system ("auto": the fastest in the untimed reference pass; None: none, and then no
    speed-up can be VALID); ``x2``: the known-ratio control's system ("auto": the fastest at float32; None: none),
    timed as an arm that decodes every item twice and must read 2.00x. ``reference_outputs[name]`` (the quality run's
    outputs, in ``examples`` order) is compared with what ``name`` produced; every timed output must also equal the
    system's own untimed reference pass. ``length_forced`` gives each system the reference length (whitespace
    tokens of the target) via ``decode_one(example, forced_length=L)``, for speed columns of untrained models. A
    system with ``latency_probe = True`` (the null system) is timed like the others but has no speed-up and no
    duration floor.
    ``precision`` (fp32 | bf16 | auto) is one autocast setting for every system, part of the signature.
    ``canaries`` builds the run's canaries for the device (default: sized on this machine); a judged canary whose
    per-round median drifts by more than ``canary_tolerance`` labels the milliseconds INDICATIVE (speed-ups are
    judged by their pairing, not by the canary). ``quiet_gate`` (a tolerance) times each unit only in a quiet
    window of the canaries (:mod:`bench.latency.gate`); ``design="block"`` is the old confounded design, for
    comparisons only; ``count_work`` counts passes, layer evaluations and FLOPs in the reference pass.
    """
    from bench.api.precision import autocast, resolve_precision

    names = list(systems)
    _validate(systems, examples, baseline, n, rounds, reference_outputs, length_forced)
    import time

    wall0 = time.perf_counter()
    placement = resolve_device(device)  # the concrete device (cpu, cuda:N), as --device resolves it
    device = placement.split(":")[0]  # the kind the clock and the canaries work with
    sync = Synchronizer(device)
    th = thresholds or Thresholds()
    settings = Settings(
        n=n, rounds=rounds, warmup_items=warmup_items, warmup_s=warmup_s, min_items=min_items,
        min_duration_s=min_duration_s, max_duration_s=max_duration_s, max_items=max_items, seed=seed,
        length_forced=length_forced, device=device, sync=sync.name, canary_tolerance=canary_tolerance,
        precision=resolve_precision(precision, device).effective, placement=placement, quiet_gate=quiet_gate,
        design=design, aa=aa, max_rounds=max(rounds, max_rounds), thresholds=th.to_json(), x2=x2,
    )
    fp_before = environment_fingerprint()
    forced = [len(ex.target.split()) for ex in examples] if length_forced else None
    items = ItemPlan(len(examples), seed)
    units = [[i] for i in items.take_timed(n)]
    plan = TimingPlan(units, batched=False, rounds=rounds, max_rounds=max(rounds, max_rounds),
                      max_duration_s=max_duration_s, min_duration_s=min_duration_s, max_timings=max_items, seed=seed,
                      design=design, aa=aa, x2=x2, thresholds=th, resamples=bootstrap_resamples,
                      count_work=count_work)
    infos = {nm: _describe(systems[nm]) for nm in names}
    canary_box: list[CanarySet] = []
    gate_box: list[Any] = []

    def make_canaries() -> CanarySet:
        # sized (and the GPU warmed up) right before timing, so the clocks it saw are the ones timing sees
        canary_box.append((canaries or default_canaries)(device))
        return canary_box[-1]

    def make_gate(canary_set: CanarySet) -> Any:
        assert quiet_gate is not None
        gate_box.append(gate_for(canary_set, quiet_gate))
        return gate_box[-1]

    decode_precision = autocast(resolve_precision(precision, device), device)
    with MeterProgress(enabled=progress, console=console) as bar, decode_precision:
        def warm(name: str, system: Any) -> tuple[int, float]:
            return _warm_up(name, system, examples, forced, items, warmup_items, warmup_s, bar)

        def planned(total: int) -> None:
            if bar.started:
                bar.extend(total)
            else:
                bar.start_timing(total=total)

        timed = time_units(systems, examples, plan, baseline=baseline, forced=forced, sync=sync,
                           canaries=make_canaries, warm_up=warm,
                           gate_for=None if quiet_gate is None else make_gate, cuda_events=cuda_events,
                           device=device, tick=lambda text: bar.tick(text), on_plan=planned,
                           say=say or (lambda _m: None))
    fp_after = environment_fingerprint()
    canary_set, gate = canary_box[-1], (gate_box[-1] if gate_box else None)

    n_timed = len(units)
    notes: list[str] = list(canary_set.notes)
    aa_note = aa_choice_note(timed)
    if aa_note:
        notes.append(aa_note)
    r = timed.log.rounds
    if r > rounds:
        notes.append(f"extended by {r - rounds} round(s) (a speed-up still INCONCLUSIVE, or a system timed < "
                     f"min_duration_s={min_duration_s:g} s), within max_rounds={plan.max_rounds} and the time budget")
    overlap = [nm for nm in names if not systems[nm].latency_probe and timed.warmup[nm][0] + n_timed > len(examples)]
    if overlap:
        notes.append(
            f"warm-up and timed items overlap for {', '.join(overlap)}: the split has {len(examples)} "
            f"examples, fewer than warm-up + {n_timed} timed items"
        )
    if n_timed > len(examples):
        notes.append(f"timed items repeat: {n_timed} timed items from {len(examples)} examples")
    if length_forced and reference_outputs:
        notes.append("length-forced outputs are not compared with the quality run's outputs")

    results = {
        nm: _result(nm, systems[nm], timed, infos[nm], examples, reference_outputs, length_forced,
                    cuda_event_tolerance)
        for nm in names
    }
    run_reasons = []
    if n_timed < min_items:
        run_reasons.append(f"too few items: {n_timed} timed per system < min_items={min_items}")
    run_reasons += misplaced(systems, device)
    run_reasons += [f"environment changed during timing: {c}" for c in identity_changes(fp_before, fp_after)]
    timed.judge(run_reasons, {nm: res.reasons for nm, res in results.items()})
    for nm, problems in timed.system_problems().items():
        results[nm].reasons += problems
    for nm, res in results.items():
        res.speedup = timed.speedups.get(nm) if baseline is not None else None

    ms_reasons = list(canary_set.reasons(canary_tolerance))
    ms_reasons += [f"{nm}: timed for {res.timed_s:.2f} s < min_duration_s={min_duration_s:g}"
                   for nm, res in results.items() if not systems[nm].latency_probe and res.timed_s < min_duration_s]
    if gate is not None:
        exempt = frozenset(nm for nm in names if systems[nm].latency_probe)
        ms_reasons += gate.reasons(exempt=exempt)
        c = {a.name: gate.counts.get(a.name) for a in timed.arms}
        retimed = sum(x.retimed for x in c.values() if x)
        rc = gate.counts.get(ROUND_CANARIES)
        notes.append(f"quiet gate {quiet_gate:g}: {retimed} timing(s) discarded and re-timed, "
                     f"{rc.retimed if rc else 0} round canary reading(s) retaken, "
                     f"{sum(x.ungated for x in c.values() if x)} item(s) ungated, reference probe "
                     f"{gate.reference_ms:.3f} ms (p{gate.reference_quantile * 100:g} of {gate.readings} readings, "
                     f"fastest {gate.fastest_ms:.3f} ms; {gate.slow_readings} slow, {gate.fast_readings} fast)")

    label = device_label(fp_before, device)
    return LatencyReport(
        signature=latency_signature(settings, label, fp_before, n_timed, r, timed.aa_system),
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
        ms_reasons=ms_reasons,
        timed=timed,
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


def _warm_up(name: str, system: Any, examples: Sequence[Example], forced: Sequence[int] | None, items: ItemPlan,
             count_min: int, seconds: float, bar: MeterProgress) -> tuple[int, float]:
    """Untimed items (from the far end of the seeded order) until both the count and the duration minimum are met."""
    import time

    bar.start_warmup(name, count_min)
    count, t0 = 0, time.perf_counter()
    stream = items.warmup()
    while count < count_min or time.perf_counter() - t0 < seconds:
        idx = next(stream)
        ex = examples[idx]
        try:
            out = system.decode_one(ex) if forced is None else system.decode_one(ex, forced_length=forced[idx])
        except Exception as err:  # name system and item: a bare traceback from inside a model is opaque
            raise RuntimeError(
                f"System '{name}' failed in decode_one on example {ex.id!r} (index {idx}): {err}") from err
        if not isinstance(out, str):
            raise TypeError(f"System '{name}'.decode_one returned {type(out).__name__}, expected str.")
        count += 1
        bar.warmup_tick(count)
    return count, time.perf_counter() - t0


def _result(
    name: str, system: Any, timed: TimedUnits, info: dict[str, Any], examples: Sequence[Example],
    reference_outputs: Mapping[str, Sequence[str]] | None, length_forced: bool, cuda_event_tolerance: float,
) -> SystemLatency:
    """One system's latency: the per-unit medians over rounds, their summary, and its output checks."""
    medians = timed.medians(name)
    indices = [u[0] for u in timed.plan.units]
    outputs = [unit[0] for unit in timed.reference_texts[name]]
    passes = timed.passes[name]
    iterations = list(passes) if passes is not None else None
    if iterations is None and isinstance(info.get("iterations"), int | float):
        iterations = [float(info["iterations"])]
    tokens = [len(o.split()) for o in outputs]
    stats = summarize(medians, tokens, iterations)
    reference = None if length_forced else reference_for(name, reference_outputs)
    check = check_outputs(indices, outputs, [ex.id for ex in examples], reference)
    unstable = sorted({u for a in timed.arms if a.system == name for u in timed.mismatched_units(a)})
    if unstable:
        from dataclasses import replace

        ids = [examples[indices[u]].id for u in unstable]
        check = replace(check, nondeterministic=sorted(set(check.nondeterministic) | set(ids)),
                        match=False if check.match is not None else None)
    reasons = []
    if check.match is False and check.n_mismatched:
        mm = check.first_mismatch or {}
        reasons.append(
            f"outputs differ from the quality run on {check.n_mismatched}/{check.n_compared} items "
            f"(first: {mm.get('id')!r}: timed {mm.get('timed')!r} vs quality {mm.get('quality_run')!r})"
        )
    if check.nondeterministic and not unstable:  # timed vs reference differences are the timing's reasons
        reasons.append(
            f"non-deterministic outputs: {len(check.nondeterministic)} item(s) decoded differently when "
            f"repeated (first: {check.nondeterministic[0]!r})"
        )
    events = timed.event_ms.get(name) or []
    event_mean = sum(events) / len(events) if events else None
    if event_mean is not None and event_mean > stats.mean_ms * (1 + cuda_event_tolerance):
        reasons.append(
            f"CUDA events ({event_mean:.3f} ms) exceed the host clock ({stats.mean_ms:.3f} ms): "
            "work escaped the synchronised window"
        )
    warm = timed.warmup[name]
    return SystemLatency(
        name=name, info=info, stats=stats, latencies_ns=medians, item_indices=indices, outputs=check,
        warmup_count=warm[0], warmup_elapsed_s=warm[1], timed_s=timed.timed_s(name), cuda_event_ms_mean=event_mean,
        reasons=reasons, tokens=tokens, iterations=iterations,
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
    if n < 1 or rounds < 1:
        raise ValueError(f"n={n} units and rounds={rounds}: time at least one unit for at least one round.")
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
