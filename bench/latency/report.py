"""What a latency measurement produced: per-system results, the verdict, and the signature.

Two judgements, kept apart. The *speed-ups* are judged by their pairing (:mod:`bench.latency.paired`): VALID,
INCONCLUSIVE, UNSTABLE or INVALID, each with its reasons; the report's ``verdict`` is the worst of them (and
INVALID when the design broke). The *absolute milliseconds* are labelled VALID or INDICATIVE by the canary rule
and the duration floor (``ms_reasons``): a shared machine moves them, and says so, without touching a paired
ratio. Renderers and records show the reasons rather than silently keep the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.latency.canary import CanaryResult
from bench.latency.outputs import OutputCheck
from bench.latency.paired import PairedSpeedup, worst
from bench.latency.stats import LatencyStats, Speedup

#: 0.2: paired, randomized trials with an A/A control (0.1: rounds of per-system blocks)
LATENCY_VERSION = "0.2"


@dataclass(frozen=True)
class Settings:
    """The knobs a measurement ran under; they are part of its signature."""

    n: int
    rounds: int
    warmup_items: int
    warmup_s: float
    min_items: int
    min_duration_s: float
    max_duration_s: float | None
    max_items: int | None
    seed: int
    length_forced: bool
    device: str
    sync: str
    canary_tolerance: float
    precision: str = "fp32"  # what every system decoded in (autocast), the same for all of them
    placement: str = ""  # the concrete device every system was placed on (cpu, cuda:N); "" in old records
    quiet_gate: float | None = None  # --quiet-gate's tolerance: items timed only in quiet windows (None: off)
    design: str = "paired"  # paired (RMIT) | block (the old design, for comparisons only)
    aa: str | None = "auto"  # the A/A control's system ("auto": the fastest; None: none)
    max_rounds: int = 12  # extra rounds while a speed-up is INCONCLUSIVE, up to this many in all
    thresholds: dict[str, float] | None = None  # the rules of a VALID speed-up (bench.latency.paired.Thresholds)
    x2: str | None = None  # the known-ratio control's system ("auto": the fastest at float32; None: none)


@dataclass
class SystemLatency:
    """One system's timed items and everything derived from them."""

    name: str
    info: dict[str, Any]
    stats: LatencyStats
    latencies_ns: list[float]  # per unit (item), the median over the rounds of its timings
    item_indices: list[int]
    outputs: OutputCheck
    warmup_count: int
    warmup_elapsed_s: float
    timed_s: float
    speedup: Speedup | PairedSpeedup | None = None
    cuda_event_ms_mean: float | None = None
    reasons: list[str] = field(default_factory=list)
    #: the inputs of ``stats`` besides ``latencies_ns`` (whitespace tokens per output, decoder passes per item
    #: or the one declared count), kept so a record's aggregates can be derived again from its items
    tokens: list[int] = field(default_factory=list)
    iterations: list[float] | None = None


@dataclass
class LatencyReport:
    """Everything one call of :func:`bench.latency.measure` found, ready for a run record."""

    signature: str
    device_label: str
    settings: Settings
    baseline: str | None
    systems: dict[str, SystemLatency]
    canary: list[CanaryResult]  # the device canary's rounds
    canary_drift: float
    canary_backend: str
    fingerprint_before: dict[str, Any]
    fingerprint_after: dict[str, Any]
    run_reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    host_canary_drift: float | None = None
    canary_info: dict[str, Any] = field(default_factory=dict)  # both canaries: sizes, sizing, warm-up, judged
    quiet_gate: dict[str, Any] | None = None  # what the quiet gate did (bench.latency.gate), None when off
    ms_reasons: list[str] = field(default_factory=list)  # why the absolute milliseconds are only INDICATIVE
    timed: Any = None  # the bench.latency.timing.TimedUnits behind it all (trials, rounds, A/A, work counts)

    def _speed(self, name: str) -> PairedSpeedup | None:
        sp = self.systems[name].speedup
        return sp if isinstance(sp, PairedSpeedup) else None

    @property
    def aa(self) -> PairedSpeedup | None:
        return None if self.timed is None else self.timed.aa

    @property
    def x2(self) -> PairedSpeedup | None:
        """The known-ratio control (an arm decoding every item twice over its system: truly 2.00x)."""
        return None if self.timed is None else self.timed.x2

    @property
    def invalid_reasons(self) -> list[str]:
        """Everything that keeps the verdict from VALID: the design, each system, each speed-up, the A/A control."""
        out = list(self.run_reasons)
        for res in self.systems.values():
            out.extend(f"{res.name}: {r}" for r in res.reasons)
            sp = self._speed(res.name)
            if sp is not None:
                out.extend(f"{res.name} speed-up {sp.verdict}: {r}" for r in sp.reasons if r not in out)
        for label, control in (("A/A control", self.aa), ("known-ratio control", self.x2)):
            if control is not None and control.verdict != "VALID":
                out.extend(f"{label} {control.verdict}: {r}" for r in control.reasons)
        return list(dict.fromkeys(out))

    @property
    def verdict(self) -> str:
        """The worst of the speed-ups' verdicts and the A/A control's; INVALID when the design or a system broke."""
        verdicts = ["INVALID"] if self.run_reasons or any(r.reasons for r in self.systems.values()) else []
        verdicts += [sp.verdict for sp in (self._speed(n) for n in self.systems) if sp is not None]
        verdicts += [c.verdict for c in (self.aa, self.x2) if c is not None]
        return worst(verdicts)

    @property
    def valid(self) -> bool:
        return self.verdict == "VALID"

    @property
    def ms_label(self) -> str:
        """VALID when the canaries held and every system met the duration floor, else INDICATIVE."""
        return "VALID" if not self.ms_reasons and self.verdict != "INVALID" else "INDICATIVE"

    def reasons_for(self, name: str) -> list[str]:
        """Reasons that make ``name``'s numbers (incl. its speedup) untrustworthy."""
        reasons = list(self.run_reasons) + list(self.systems[name].reasons)
        if self.baseline and name != self.baseline:
            reasons += [f"baseline {self.baseline}: {r}" for r in self.systems[self.baseline].reasons]
        sp = self._speed(name)
        if sp is not None and sp.verdict != "VALID":
            reasons += [f"speed-up {sp.verdict}: {r}" for r in sp.reasons]
        return list(dict.fromkeys(reasons))

    def record(self, name: str) -> dict[str, Any]:
        """The ``latency`` dict of a run record for system ``name`` (schema in docs/run-record.md)."""
        res = self.systems[name]
        sp = res.speedup
        reasons = self.reasons_for(name)
        return {
            "signature": self.signature,
            "device": self.device_label,
            "stats": res.stats.to_json(),
            "baseline": self.baseline,
            "speedup_mean": sp.mean if sp else None,
            "speedup_median": sp.median if sp else None,
            "speedup_ci95": list(sp.mean_ci95) if sp else None,
            "speedup_median_ci95": list(sp.median_ci95) if sp else None,
            "length_forced": self.settings.length_forced,
            "valid": not reasons,
            "invalid_reasons": reasons,
            "verdict": sp.verdict if isinstance(sp, PairedSpeedup) else ("VALID" if not reasons else "INVALID"),
            "ms_label": self.ms_label,
            "ms_reasons": list(self.ms_reasons),
            "outputs_match_quality_run": res.outputs.match,
            "outputs": res.outputs.to_json(),
            "canary_drift": self.canary_drift,
            "host_canary_drift": self.host_canary_drift,
            "fingerprint_after": self.fingerprint_after,
            "notes": list(self.notes),
            "timings": self.item_timings(name),
        }

    def item_timings(self, name: str) -> dict[str, Any]:
        """What ``stats`` and the speed-up of ``name`` are computed from, item by item (the baseline's items too,
        and the bootstrap's resamples and seed), so ``bench table --check --deep`` can derive them again."""
        res = self.systems[name]
        base = self.systems[self.baseline] if self.baseline and res.speedup is not None else None
        out: dict[str, Any] = {
            "latencies_ns": list(res.latencies_ns), "item_indices": list(res.item_indices), "tokens": list(res.tokens),
            "iterations": None if res.iterations is None else list(res.iterations),
            "baseline_latencies_ns": None if base is None else list(base.latencies_ns),
            "n_resamples": None if res.speedup is None else res.speedup.n_resamples, "seed": self.settings.seed,
        }
        if self.timed is not None:  # the raw timings the medians come from: this system's arm (and its baseline's)
            keep = {name, self.baseline} if base is not None else {name}
            log = self.timed.log.to_json()
            rows = [i for i, a in enumerate(log["arm"]) if a in keep]
            out["trials"] = {c: [v[i] for i in rows] for c, v in log.items()}
        return out

    def to_json(self) -> dict[str, Any]:
        """The whole measurement, for ``bench latency --out`` and debugging."""
        return {
            "signature": self.signature,
            "device": self.device_label,
            "verdict": self.verdict,
            "valid": self.valid,
            "invalid_reasons": self.invalid_reasons,
            "ms_label": self.ms_label,
            "ms_reasons": list(self.ms_reasons),
            "design_reasons": list(self.run_reasons),
            "notes": list(self.notes),
            "settings": self.settings.__dict__.copy(),
            "baseline": self.baseline,
            "wall_s": self.wall_s,
            "canary": {
                **self.canary_info,
                "backend": self.canary_backend,
                "drift": self.canary_drift,
                "median_ms_per_round": [c.median_ms for c in self.canary],
            },
            **({"quiet_gate": self.quiet_gate} if self.quiet_gate is not None else {}),
            **(self.paired_json() if self.timed is not None else {}),
            "fingerprint_before": self.fingerprint_before,
            "fingerprint_after": self.fingerprint_after,
            "systems": {
                name: {
                    **self.record(name),
                    "info": res.info,
                    "warmup": {"items": res.warmup_count, "seconds": res.warmup_elapsed_s},
                    "timed_s": res.timed_s,
                    "cuda_event_ms_mean": res.cuda_event_ms_mean,
                    "design_reasons": list(res.reasons),
                }
                for name, res in self.systems.items()
            },
        }


    def paired_json(self) -> dict[str, Any]:
        """The paired design's evidence: the design, every timing, each round's machine readings, the A/A control,
        the untimed reference hashes and the work counts (what ``--deep`` derives the verdicts from)."""
        t = self.timed
        aa = t.aa
        return {
            "design": {"kind": self.settings.design, "seed": self.settings.seed, "units": t.n_units,
                       "batch_size": 1, "rounds": t.log.rounds, "min_rounds": t.plan.rounds,
                       "max_rounds": t.plan.max_rounds, "arms": [a.name for a in t.arms],
                       "probes": sorted(t.probes),
                       "thresholds": t.plan.thresholds.to_json(), "unit_items": [list(u) for u in t.plan.units],
                       "timing_s": t.timing_s},
            "trials": t.log.to_json(),
            "rounds": list(t.rounds),
            "aa": None if aa is None else {"system": t.aa_system, "arm": f"aa:{t.aa_system}", **aa.to_json()},
            "x2": None if t.x2 is None else {"system": t.x2_system, "arm": f"x2:{t.x2_system}", **t.x2.to_json()},
            "reference_hashes": {n: list(h) for n, h in t.reference.items()},
            "work": {n: w.to_json() for n, w in t.work.items()},
        }


def latency_signature(
    settings: Settings, device_label: str, fingerprint: dict[str, Any], n_timed: int | None = None,
    rounds_run: int | None = None, aa_system: str | None = None,
) -> str:
    """``lat:single-stream|bs:1|...`` — everything needed to know if two latencies are comparable.

    ``n_timed`` is the item count actually timed per system (the meter may extend a run to reach
    its minimum duration); it defaults to the requested ``settings.n``.
    """
    torch_v = fingerprint.get("torch")
    torch_short = ".".join(str(torch_v).split("+")[0].split(".")[:2]) if torch_v else "none"
    threads = fingerprint.get("torch_threads") or fingerprint.get("cpu_affinity") or "?"
    parts = [
        "lat:single-stream",
        "bs:1",
        f"warmup:{settings.warmup_items},{settings.warmup_s:g}s",
        f"design:{'rmit' if settings.design == 'paired' else settings.design}",
        f"rounds:{settings.rounds if rounds_run is None else rounds_run}",
        f"aa:{'on' if aa_system else 'off'}",
        *(["x2:on"] if settings.x2 else []),
        f"n:{settings.n if n_timed is None else n_timed}",
        "clock:perf_counter_ns",
        f"sync:{settings.sync}",
        f"device:{_clean(device_label)}",
        f"torch:{torch_short}",
        f"threads:{threads}",
        f"mode:{'length-forced' if settings.length_forced else 'free'}",
        *([f"prec:{settings.precision}"] if settings.precision != "fp32" else []),
        *([f"gate:{settings.quiet_gate:g}"] if settings.quiet_gate is not None else []),
        f"v:{LATENCY_VERSION}",
    ]
    return "|".join(parts)


def _clean(text: str) -> str:
    return " ".join(text.replace("|", "/").split())
