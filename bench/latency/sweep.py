"""The batch-size sweep: every system decodes the same seeded batches at each B and thread count, timed by the
meter's one timing path (:mod:`bench.latency.timing`): each batch is a unit, every system (and an A/A arm) times
it back to back in a random order, over several reshuffled rounds; then (optionally) energy.

At B = 1 each item is one ``decode_one`` call, the single-stream path; at B > 1 one ``decode_batch`` call per
batch (length-forced: each item its own forced length). Items are the first ``n_batches × B`` of the seeded
stream, optionally sorted by source length before batching (``bucket="sorted"``, the same for every system,
recorded). Each cell's speed-up is judged like the meter's (VALID / INCONCLUSIVE / UNSTABLE / INVALID, with the
cell's own A/A control); the canaries label its milliseconds.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from functools import partial
from typing import Any

from bench.api.types import Example
from bench.latency.canary import CanarySet, default_canaries
from bench.latency.clock import Synchronizer
from bench.latency.energy import EnergyUnreadable, measure_energy, open_counter
from bench.latency.gate import QuietGate, gate_for
from bench.latency.paired import Thresholds, worst
from bench.latency.schedule import ItemPlan
from bench.latency.throughput import crossover, throughput, track
from bench.latency.timing import AA_AUTO, TimedUnits, TimingPlan, time_units, unit_decoder

BUCKETS = ("none", "sorted")


def batches_for(examples: Sequence[Example], b: int, n_batches: int, seed: int, bucket: str) -> list[list[int]]:
    """The item indices of each batch at size ``b`` (same for every system): the stream's first
    ``n_batches × b`` items, sorted by source length first when ``bucket == "sorted"``."""
    if bucket not in BUCKETS:
        raise ValueError(f"bucket {bucket!r}: choose one of {', '.join(BUCKETS)}.")
    items = ItemPlan(len(examples), seed).take_timed(n_batches * b)
    if bucket == "sorted":
        items.sort(key=lambda i: len(examples[i].source.split()))
    return [items[k : k + b] for k in range(0, len(items), b)]


def sweep(
    systems: Mapping[str, Any], examples: Sequence[Example], baseline: str | None, batch_sizes: Sequence[int],
    threads: Sequence[int], *, min_items: int = 64, min_batches: int = 8, rounds: int = 3, seed: int = 0,
    length_forced: bool = False, bucket: str = "none", device: str = "cpu", energy: bool = False,
    energy_window_s: float = 10.0, canary_tolerance: float = 0.25, bootstrap_resamples: int = 2000,
    canaries: Callable[[str], CanarySet] | None = None, workdirs: Mapping[str, Any] | None = None,
    say: Callable[[str], None] = lambda _m: None, quiet_gate: float | None = None, aa: str | None = AA_AUTO,
    x2: str | None = None,
    max_rounds: int = 12, max_duration_s: float | None = 600.0, thresholds: Thresholds | None = None,
    count_work: bool = True,
) -> dict[str, Any]:
    """Time ``systems`` at every (threads, B); returns the ``sweep`` section of a record (docs/latency.md).

    Each (threads, B) is one paired timing (:func:`bench.latency.timing.time_units`): at least ``rounds`` rounds,
    more (up to ``max_rounds``, within ``max_duration_s`` of timing) while a cell's speed-up is INCONCLUSIVE.
    ``quiet_gate`` (a tolerance) times each batch only in a quiet window (:mod:`bench.latency.gate`); each cell then
    records what the gate did."""
    from bench.api.threads import using_threads
    from bench.latency.memory import model_size

    if baseline is not None and baseline not in systems:
        raise ValueError(f"Baseline '{baseline}' is not among the swept systems ({', '.join(systems)}).")
    if min_batches < 1:
        raise ValueError(f"--min-batches {min_batches}: time at least one batch per B, e.g. --min-batches 3.")
    if not batch_sizes or min(batch_sizes) < 1 or min(threads, default=0) < 1:
        raise ValueError("--batch-sizes and --threads need positive integers, e.g. --batch-sizes 1,8,32 --threads 1,2.")
    names, kind = list(systems), device.split(":")[0]
    forced = [len(ex.target.split()) for ex in examples] if length_forced else None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    sync = Synchronizer(kind)
    th = thresholds or Thresholds()
    cells: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    reasons: list[str] = []
    ms_reasons: list[str] = []
    agree_reasons: list[str] = []
    gates: dict[str, QuietGate] = {}
    agreement: dict[str, dict[str, Any]] = {
        nm: {"compared": 0, "agreed": 0, "first_difference": None} for nm in names}
    for t in threads:
        with using_threads(t):
            canary_set = (canaries or default_canaries)(kind)
            gate = None if quiet_gate is None else gate_for(canary_set, quiet_gate)
            if gate is not None:
                gates[str(t)] = gate
            outputs_b1: dict[str, dict[int, str]] = {}
            for b in sorted(batch_sizes):
                n_batches = max(min_batches, math.ceil(min_items / b))
                plan = batches_for(examples, b, n_batches, seed, bucket)
                say(f"[sweep] threads={t} B={b}: {len(plan)} batches x {len(names)} systems (+ A/A), "
                    f">= {rounds} rounds")
                timing = TimingPlan(plan, batched=b > 1, rounds=rounds, max_rounds=max(rounds, max_rounds),
                                    max_duration_s=max_duration_s, seed=seed, aa=aa, x2=x2, thresholds=th,
                                    resamples=bootstrap_resamples, count_work=count_work)
                timed = time_units(systems, examples, timing, baseline=baseline, forced=forced, sync=sync,
                                   canaries=_reuse(canary_set), warm_up=_warm_one(plan[0], examples, forced, b),
                                   gate_for=None if gate is None else _same(gate), device=kind, say=say)
                where = f"threads={t} B={b}"
                ms_reasons += [f"{where}: {r}" for r in canary_set.reasons(canary_tolerance)]
                gated: dict[str, Any] = {}
                if gate is not None:
                    ms_reasons += [f"{where}: {r}" for r in gate.reasons(
                        exempt=frozenset(nm for nm in names if systems[nm].latency_probe))]
                    gated = {nm: asdict(c) for nm, c in gate.counts.items()}
                    gate.counts.clear()
                reasons += [f"{where}: {r}" for r in timed.design_problems()]
                reasons += [f"{where}: {nm}: {r}" for nm, rs in timed.system_problems().items() for r in rs]
                for nm, sp in timed.speedups.items():
                    if sp.verdict != "VALID":
                        reasons += [f"{where}: {nm} speed-up {sp.verdict}: {r}" for r in sp.reasons]
                for label, control in (("A/A control", timed.aa), ("known-ratio control", timed.x2)):
                    if control is not None and control.verdict != "VALID":
                        reasons += [f"{where}: {label} {control.verdict}: {r}" for r in control.reasons]
                for nm in names:
                    outs = {i: text for items, unit in zip(plan, timed.reference_texts[nm], strict=True)
                            for i, text in zip(items, unit, strict=True)}
                    if b == 1:
                        outputs_b1[nm] = outs
                    else:
                        _agree(agreement[nm], outputs_b1.get(nm), outs, systems[nm], examples, forced, min_items)
                new = _cells(systems, names, timed, plan, b, t, cores, kind, energy, energy_window_s,
                             bootstrap_resamples, seed, examples, forced, sync)
                for cell in new:
                    if gate is not None:
                        cell["quiet_gate"] = gated.get(cell["system"])
                cells += new
                groups.append(_group(t, b, timed, canary_set, gated.get("(round canaries)")))
                canary_set.device.rounds.clear()
                canary_set.host.rounds.clear()
    for nm in names:
        a = agreement[nm]
        a["rate"] = a["agreed"] / a["compared"] if a["compared"] else None
        if a["compared"] and a["agreed"] < a["compared"]:
            differ = a["compared"] - a["agreed"]
            agree_reasons.append(f"{nm}: batched outputs differ from B=1 on {differ}/{a['compared']} "
                                 "items (padding or length-prediction dependence): its throughput is of other outputs")
    verdict = worst(([c["verdict"] for c in cells] + [g[k]["verdict"] for g in groups for k in ("aa", "x2")
                                                       if g.get(k)])
                    + (["INVALID"] if any("design" in g and g["design"]["problems"] for g in groups) else []))
    return {
        "batch_sizes": sorted(batch_sizes), "threads": list(threads), "cores": cores, "device": kind,
        "bucket": bucket, "length_forced": length_forced, "min_items": min_items, "min_batches": min_batches,
        "rounds": rounds, "max_rounds": max(rounds, max_rounds), "seed": seed, "design": "paired",
        "thresholds": th.to_json(), "cells": cells, "groups": groups, "agreement": agreement,
        "crossover": _crossovers(cells, baseline, threads),
        "models": {nm: {**model_size(systems[nm], (workdirs or {}).get(nm)),
                        "batched_decode": bool(systems[nm].batched_decode)} for nm in names},
        **({"quiet_gate": {**next(iter(gates.values())).settings(),
                           "per_threads": {t: {"reference_ms": g.reference_ms, "fastest_ms": g.fastest_ms,
                                               "readings": g.readings,
                                               "slow_readings": g.slow_readings} for t, g in gates.items()}}}
           if gates else {}),
        "verdict": verdict, "valid": verdict == "VALID", "invalid_reasons": reasons,
        "ms_label": "VALID" if not ms_reasons and verdict != "INVALID" else "INDICATIVE", "ms_reasons": ms_reasons,
        "agreement_reasons": agree_reasons,
    }


def _same(gate: QuietGate) -> Callable[[Any], QuietGate]:
    """The thread count's gate (calibrated once per thread count) for every B."""
    return lambda _canaries: gate


def _reuse(canary_set: CanarySet) -> Callable[[], CanarySet]:
    """The thread count's canaries (sized once per thread count), their rounds cleared for the next B."""
    return lambda: canary_set


def _warm_one(batch: list[int], examples: Sequence[Example], forced: list[int] | None,
              b: int) -> Callable[[str, Any], tuple[int, float]]:
    """Warm each system on the first batch: allocation, kernel choice."""
    def warm(_name: str, system: Any) -> tuple[int, float]:
        import time

        t0 = time.perf_counter()
        unit_decoder(system, examples, batch, forced, b > 1)()
        return 1, time.perf_counter() - t0

    return warm


def _group(t: int, b: int, timed: TimedUnits, canary_set: CanarySet, round_gate: Any) -> dict[str, Any]:
    """One (threads, B)'s evidence: design, every timing, each round's readings, the A/A control, the reference
    hashes, the work counts and the canary readings (what ``--deep`` derives the cells' verdicts from)."""
    aa = timed.aa
    return {
        "threads": t, "batch_size": b,
        "design": {"kind": timed.plan.design, "seed": timed.plan.seed, "units": timed.n_units, "rounds":
                   timed.log.rounds, "min_rounds": timed.plan.rounds, "max_rounds": timed.plan.max_rounds,
                   "arms": [a.name for a in timed.arms], "probes": sorted(timed.probes),
                   "thresholds": timed.plan.thresholds.to_json(), "unit_items": [list(u) for u in timed.plan.units],
                   "problems": timed.design_problems(),
                   "timing_s": timed.timing_s},
        "trials": timed.log.to_json(), "rounds": list(timed.rounds),
        "aa": None if aa is None else {"system": timed.aa_system, **aa.to_json()},
        "x2": None if timed.x2 is None else {"system": timed.x2_system, **timed.x2.to_json()},
        "reference_hashes": {n: list(h) for n, h in timed.reference.items()},
        "work": {n: w.to_json() for n, w in timed.work.items()},
        "canary": {"device": canary_set.device.to_json(), "host": canary_set.host.to_json()},
        **({"round_canary_gate": round_gate} if round_gate is not None else {}),
    }


def _agree(acc: dict[str, Any], single: dict[int, str] | None, batched: dict[int, str], system: Any,
           examples: Sequence[Example], forced: list[int] | None, limit: int) -> None:
    """Count items whose batched output equals B = 1's. The items B = 1 timed are a prefix of every B's
    stream, so those are compared; when B = 1 was not swept, the first ``limit`` items are decoded one by
    one, untimed. (Decoding all of B = 128's items singly would cost more than timing them.)"""
    if single is not None:
        pairs = [(i, text) for i, text in sorted(batched.items()) if i in single]
    else:
        pairs = sorted(batched.items())[:limit]
    for i, text in pairs:
        if single is not None:
            ref = single[i]
        else:
            ex = examples[i]
            ref = system.decode_one(ex) if forced is None else system.decode_one(ex, forced_length=forced[i])
        acc["compared"] += 1
        if ref == text:
            acc["agreed"] += 1
        elif acc["first_difference"] is None:
            acc["first_difference"] = {"id": examples[i].id, "single": ref, "batched": text}


def _cells(systems: Mapping[str, Any], names: list[str], timed: TimedUnits, plan: list[list[int]], b: int, t: int,
           cores: int, kind: str, energy: bool, window_s: float, resamples: int, seed: int,
           examples: Sequence[Example], forced: list[int] | None, sync: Synchronizer) -> list[dict[str, Any]]:
    sizes = [len(x) for x in plan]
    cells = []
    for nm in names:
        sys_ = systems[nm]
        batch_ns = timed.medians(nm)
        tokens = [sum(len(x.split()) for x in unit) for unit in timed.reference_texts[nm]]
        tp = throughput(batch_ns, sizes, tokens, b, resamples, seed)
        s = timed.speedups.get(nm) if timed.baseline is not None and nm != timed.baseline else None
        sp = None if s is None else {
            **s.to_json(), "basis": "paired trials: per batch the median over rounds; mean = S = sum of the baseline's "
                                    "batch medians / the system's, CI by a paired bootstrap over batches"}
        problems = timed.system_problems().get(nm, [])
        verdict = s.verdict if s is not None else ("INVALID" if problems or timed.design_problems() else "VALID")
        work = timed.work.get(nm)
        mem = work.peak_memory if work is not None else {"method": "not measured (work counts off)"}
        en: dict[str, Any] = {"status": "not measured (--energy not given)"}
        if energy:
            try:
                counter: Any = open_counter(kind)
            except EnergyUnreadable as err:
                counter = str(err)
            en = measure_energy(partial(_run_all, sys_, plan, examples, forced, b, sync), counter, window_s)
        cells.append({"system": nm, "batch_size": b, "threads": t, "device": kind, "track": track(t, cores, kind),
                      "batched_decode": bool(sys_.batched_decode) or b == 1, **tp.to_json(),
                      "batch_ns": batch_ns, "batch_items": sizes, "batch_tokens": tokens,
                      "speedup": sp, "verdict": verdict, "peak_memory": mem, "energy": en})
    return cells


def _run_all(system: Any, plan: list[list[int]], examples: Sequence[Example], forced: list[int] | None, b: int,
             sync: Synchronizer) -> int:
    for batch in plan:
        unit_decoder(system, examples, batch, forced, b > 1)()
        sync.sync()
    return sum(len(x) for x in plan)


def _crossovers(cells: list[dict[str, Any]], baseline: str | None, threads: Sequence[int]) -> dict[str, Any]:
    """Per thread count and system: the smallest B where the baseline's sentences/s reaches the system's."""
    if baseline is None:
        return {}
    out: dict[str, Any] = {}
    for t in threads:
        rate: dict[str, dict[int, float]] = {}
        for c in cells:
            if c["threads"] == t:
                rate.setdefault(c["system"], {})[c["batch_size"]] = c["sentences_per_s"]
        out[str(t)] = {nm: crossover(rate[baseline], r) for nm, r in rate.items() if nm != baseline}
    return out


__all__ = ["BUCKETS", "batches_for", "sweep"]
