"""What a latency measurement produced: per-system results, the verdict, and the signature.

A report is VALID only when nothing listed in ``invalid_reasons`` happened; renderers and run
records must show the reasons rather than silently keep the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.latency.canary import CanaryResult
from bench.latency.outputs import OutputCheck
from bench.latency.stats import LatencyStats, Speedup

LATENCY_VERSION = "0.1"


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


@dataclass
class SystemLatency:
    """One system's timed items and everything derived from them."""

    name: str
    info: dict[str, Any]
    stats: LatencyStats
    latencies_ns: list[int]
    item_indices: list[int]
    outputs: OutputCheck
    warmup_count: int
    warmup_elapsed_s: float
    timed_s: float
    speedup: Speedup | None = None
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

    @property
    def invalid_reasons(self) -> list[str]:
        out = list(self.run_reasons)
        for res in self.systems.values():
            out.extend(f"{res.name}: {r}" for r in res.reasons)
        return out

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def verdict(self) -> str:
        return "VALID" if self.valid else "INVALID"

    def reasons_for(self, name: str) -> list[str]:
        """Reasons that make ``name``'s numbers (incl. its speedup) untrustworthy."""
        reasons = list(self.run_reasons) + list(self.systems[name].reasons)
        if self.baseline and name != self.baseline:
            reasons += [f"baseline {self.baseline}: {r}" for r in self.systems[self.baseline].reasons]
        return reasons

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
        return {
            "latencies_ns": list(res.latencies_ns), "item_indices": list(res.item_indices), "tokens": list(res.tokens),
            "iterations": None if res.iterations is None else list(res.iterations),
            "baseline_latencies_ns": None if base is None else list(base.latencies_ns),
            "n_resamples": None if res.speedup is None else res.speedup.n_resamples, "seed": self.settings.seed,
        }

    def to_json(self) -> dict[str, Any]:
        """The whole measurement, for ``bench latency --out`` and debugging."""
        return {
            "signature": self.signature,
            "device": self.device_label,
            "verdict": self.verdict,
            "valid": self.valid,
            "invalid_reasons": self.invalid_reasons,
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
            "fingerprint_before": self.fingerprint_before,
            "fingerprint_after": self.fingerprint_after,
            "systems": {
                name: {
                    **self.record(name),
                    "info": res.info,
                    "warmup": {"items": res.warmup_count, "seconds": res.warmup_elapsed_s},
                    "timed_s": res.timed_s,
                    "cuda_event_ms_mean": res.cuda_event_ms_mean,
                }
                for name, res in self.systems.items()
            },
        }


def latency_signature(
    settings: Settings, device_label: str, fingerprint: dict[str, Any], n_timed: int | None = None
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
        f"rounds:{settings.rounds}",
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
