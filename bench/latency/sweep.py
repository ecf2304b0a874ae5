"""The batch-size sweep: every system decodes the same seeded items, in the same batches, at each B and
thread count, interleaved in rounds with the canaries, then an untimed memory pass and (optionally) energy.

At B = 1 each item is one ``decode_one`` call, today's single-stream path; at B > 1 one
``decode_batch`` call per batch (length-forced: each item its own forced length). Items are the first
``n_batches × B`` of the seeded stream, optionally sorted by source length before batching
(``bucket="sorted"``, the same for every system, recorded). The canary rules are the meter's, per B.
"""

from __future__ import annotations

import gc
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from functools import partial
from typing import Any

from bench.api.types import Example
from bench.latency.canary import CanarySet, default_canaries
from bench.latency.clock import Synchronizer
from bench.latency.energy import EnergyUnreadable, measure_energy, open_counter
from bench.latency.gate import QuietGate, gate_for
from bench.latency.memory import peak_memory
from bench.latency.schedule import ItemPlan, rotated
from bench.latency.stats import paired_bootstrap_speedup
from bench.latency.throughput import crossover, throughput, track

BUCKETS = ("none", "sorted")
perf_counter_ns = time.perf_counter_ns  # module-level so tests drive a fake clock


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
    threads: Sequence[int], *, min_items: int = 64, min_batches: int = 8, rounds: int = 4, seed: int = 0,
    length_forced: bool = False, bucket: str = "none", device: str = "cpu", energy: bool = False,
    energy_window_s: float = 10.0, canary_tolerance: float = 0.25, bootstrap_resamples: int = 2000,
    canaries: Callable[[str], CanarySet] | None = None, workdirs: Mapping[str, Any] | None = None,
    say: Callable[[str], None] = lambda _m: None, quiet_gate: float | None = None,
) -> dict[str, Any]:
    """Time ``systems`` at every (threads, B); returns the ``sweep`` section of a record (docs/latency.md).

    ``quiet_gate`` (a tolerance) times each batch only in a quiet window (:mod:`bench.latency.gate`); each
    cell then records what the gate did."""
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
    cells: list[dict[str, Any]] = []
    reasons: list[str] = []
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
                say(f"[sweep] threads={t} B={b}: {len(plan)} batches x {len(names)} systems")
                timed = _timed(systems, names, plan, examples, forced, sync, canary_set, rounds, b, gate)
                reasons += [f"threads={t} B={b}: {r}" for r in canary_set.reasons(canary_tolerance)]
                gated: dict[str, Any] = {}
                if gate is not None:
                    reasons += [f"threads={t} B={b}: {r}" for r in gate.reasons(
                        exempt=frozenset(nm for nm in names if systems[nm].latency_probe))]
                    gated = {nm: asdict(c) for nm, c in gate.counts.items()}
                    gate.counts.clear()
                canary_set.device.rounds.clear()
                canary_set.host.rounds.clear()
                for nm in names:
                    outs = timed[nm]["outputs"]
                    if b == 1:
                        outputs_b1[nm] = outs
                    else:
                        _agree(agreement[nm], outputs_b1.get(nm), outs, systems[nm], examples, forced, min_items)
                new = _cells(systems, names, baseline, timed, plan, examples, forced, b, t, cores, kind,
                             energy, energy_window_s, bootstrap_resamples, seed)
                for cell in new:
                    if gate is not None:
                        cell["quiet_gate"] = gated.get(cell["system"])
                cells += new
    for nm in names:
        a = agreement[nm]
        a["rate"] = a["agreed"] / a["compared"] if a["compared"] else None
        if a["compared"] and a["agreed"] < a["compared"]:
            differ = a["compared"] - a["agreed"]
            reasons.append(f"{nm}: batched outputs differ from B=1 on {differ}/{a['compared']} "
                           "items (padding or length-prediction dependence): its throughput is of other outputs")
    return {
        "batch_sizes": sorted(batch_sizes), "threads": list(threads), "cores": cores, "device": kind,
        "bucket": bucket, "length_forced": length_forced, "min_items": min_items, "min_batches": min_batches,
        "rounds": rounds, "seed": seed, "cells": cells, "agreement": agreement,
        "crossover": _crossovers(cells, baseline, threads),
        "models": {nm: {**model_size(systems[nm], (workdirs or {}).get(nm)),
                        "batched_decode": bool(systems[nm].batched_decode)} for nm in names},
        **({"quiet_gate": {**next(iter(gates.values())).settings(),
                           "per_threads": {t: {"reference_ms": g.reference_ms, "fastest_ms": g.fastest_ms,
                                               "readings": g.readings,
                                               "slow_readings": g.slow_readings} for t, g in gates.items()}}}
           if gates else {}),
        "valid": not reasons, "invalid_reasons": reasons,
    }


def _timed(systems: Mapping[str, Any], names: list[str], plan: list[list[int]], examples: Sequence[Example],
           forced: list[int] | None, sync: Synchronizer, canary_set: CanarySet, rounds: int, b: int,
           gate: QuietGate | None = None) -> dict[str, Any]:
    """Warm each system on one batch, then time every batch, systems rotated per round of batches."""
    out: dict[str, Any] = {nm: {"ns": [0] * len(plan), "tokens": [0] * len(plan), "outputs": {}} for nm in names}
    for nm in names:
        _decode(systems[nm], plan[0], examples, forced, b, sync)  # warm-up: allocation, kernel choice
    per_round = max(1, math.ceil(len(plan) / rounds))
    gc.collect()
    gc.freeze()
    try:
        for r, start in enumerate(range(0, len(plan), per_round)):
            if gate is None:
                canary_set.measure(r)
            else:  # the round canaries then judge the machine's quiet speed
                gate.read_round(partial(canary_set.measure, r))
            for nm in rotated(names, r):
                gc.collect(1)
                for k in range(start, min(start + per_round, len(plan))):
                    once = partial(_decode, systems[nm], plan[k], examples, forced, b, sync)
                    texts, ns = once() if gate is None else gate.time(nm, once)
                    out[nm]["ns"][k] = ns
                    out[nm]["tokens"][k] = sum(len(x.split()) for x in texts)
                    out[nm]["outputs"].update(zip(plan[k], texts, strict=True))
    finally:
        gc.unfreeze()
    return out


def _decode(system: Any, batch: list[int], examples: Sequence[Example], forced: list[int] | None, b: int,
            sync: Synchronizer) -> tuple[list[str], int]:
    """One batch on the clock: ``decode_one`` at B = 1 (the meter's path), else ``decode_batch``."""
    exs = [examples[i] for i in batch]
    lengths = None if forced is None else [forced[i] for i in batch]
    sync.sync()
    t0 = perf_counter_ns()
    if b == 1:
        one = exs[0]
        texts = [system.decode_one(one) if lengths is None else system.decode_one(one, forced_length=lengths[0])]
    else:
        texts = system.decode_batch(exs, lengths)
    sync.sync()
    return list(texts), perf_counter_ns() - t0


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


def _cells(systems: Mapping[str, Any], names: list[str], baseline: str | None, timed: dict[str, Any],
           plan: list[list[int]], examples: Sequence[Example], forced: list[int] | None, b: int, t: int, cores: int,
           kind: str, energy: bool, window_s: float, resamples: int, seed: int) -> list[dict[str, Any]]:
    sizes = [len(x) for x in plan]
    sync = Synchronizer(kind)
    cells = []
    for nm in names:
        sys_ = systems[nm]
        tp = throughput(timed[nm]["ns"], sizes, timed[nm]["tokens"], b, resamples, seed)
        sp = None
        if baseline is not None and nm != baseline and not sys_.latency_probe:
            s = paired_bootstrap_speedup(timed[baseline]["ns"], timed[nm]["ns"], resamples, seed)
            sp = {"median": s.median, "median_ci95": list(s.median_ci95), "mean": s.mean,
                  "mean_ci95": list(s.mean_ci95), "n_resamples": s.n_resamples,
                  "basis": "paired bootstrap over batches; median = baseline median batch ms / system median batch ms"}
        first: Callable[[], object] = partial(_decode, sys_, plan[0], examples, forced, b, sync)
        mem = peak_memory(first, kind).to_json()
        en: dict[str, Any] = {"status": "not measured (--energy not given)"}
        if energy:
            try:
                counter: Any = open_counter(kind)
            except EnergyUnreadable as err:
                counter = str(err)
            en = measure_energy(partial(_run_all, sys_, plan, examples, forced, b, sync), counter, window_s)
        cells.append({"system": nm, "batch_size": b, "threads": t, "device": kind, "track": track(t, cores, kind),
                      "batched_decode": bool(sys_.batched_decode) or b == 1, **tp.to_json(),
                      "batch_ns": list(timed[nm]["ns"]), "batch_items": sizes,
                      "batch_tokens": list(timed[nm]["tokens"]),
                      "speedup": sp, "peak_memory": mem, "energy": en})
    return cells


def _run_all(system: Any, plan: list[list[int]], examples: Sequence[Example], forced: list[int] | None, b: int,
             sync: Synchronizer) -> int:
    for batch in plan:
        _decode(system, batch, examples, forced, b, sync)
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
