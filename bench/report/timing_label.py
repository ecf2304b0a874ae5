"""What a speed-up was timed under, in words a board shows beside it: device, threads, weights, batch size.

Why one function: a speed-up means little without its setting (a random-weight, paper-size timing on one CPU
thread is not a trained model's speed on a GPU), and a leaderboard once showed it only in a hover title. Every
board reads the setting from the record fields that exist today through :func:`timing_setting`, so a new field
(a verdict per speed-up, a work-count ratio) is added here once and shows on every board.

Sources: a latency record (``bench latency --record``: ``device`` and ``settings.device``, the fingerprint's
``torch_threads``, ``spec.weights`` and ``spec.budget`` sizes, batch 1 by construction) or a run record's own
``latency`` block (its ``device``, the signature's ``threads:``/``bs:`` fields and the run's
``environment.device``, on the run's trained weights).
"""

from __future__ import annotations

from dataclasses import dataclass

#: what a latency measurement's batch size is when nothing says otherwise (the meter times single requests)
BATCH_ONE = 1


@dataclass(frozen=True)
class TimingSetting:
    """The conditions of one timing, each ``None`` where the record does not say."""

    device: str | None  # "cpu" / "cuda" (the kind)
    device_name: str | None  # "AMD EPYC", "NVIDIA H200"
    threads: int | None  # torch intra-op threads
    weights: str | None  # "random", "trained"
    sizes: str | None  # the budget whose model sizes were timed ("paper"), for a random-weight timing
    batch: int | None

    def short(self) -> str:
        """A label that fits under a number: ``CPU · 1 thread · random weights · batch 1``."""
        kind = {"cpu": "CPU", "cuda": "GPU"}.get(self.device or "", self.device or "device ?")
        parts = [kind]
        if self.threads:
            parts.append(f"{self.threads} thread{'' if self.threads == 1 else 's'}")
        parts.append(f"{self.weights} weights" if self.weights else "weights ?")
        parts.append(f"batch {self.batch}" if self.batch else "batch ?")
        return " · ".join(parts)

    def long(self) -> str:
        """The label in a sentence, with the device's name and the sizes timed."""
        kind = {"cpu": "CPU", "cuda": "GPU"}.get(self.device or "", self.device or "an unrecorded device")
        where = f"{kind} {self.device_name}" if self.device_name and self.device_name != kind else kind
        threads = f", {self.threads} torch thread{'' if self.threads == 1 else 's'}" if self.threads else ""
        if self.weights == "random":
            weights = "random weights" + (f" at `{self.sizes}` sizes (the architecture, not a trained model)"
                                          if self.sizes else "")
        elif self.weights:
            weights = f"{self.weights} weights"
        else:
            weights = "weights not recorded"
        batch = f"batch {self.batch}" if self.batch else "batch size not recorded"
        return f"{where}{threads}; {weights}; {batch}"


def _signature_field(signature: str, key: str) -> str | None:
    for part in signature.split("|"):
        if part.startswith(key + ":"):
            return part[len(key) + 1:]
    return None


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def timing_setting(rec: dict) -> TimingSetting:
    """The setting a speed-up was timed under: ``rec`` is a latency record (``kind`` "latency") or a run record
    (its own ``latency`` block and ``environment.device``: timed on the run's trained model)."""
    if rec.get("kind") == "latency":
        spec, settings = rec.get("spec") or {}, rec.get("settings") or {}
        fp = rec.get("fingerprint_before") or {}
        signature = str(rec.get("signature") or "")
        batch = _int(_signature_field(signature, "bs")) or BATCH_ONE
        weights = spec.get("weights")
        return TimingSetting(settings.get("device"), rec.get("device"), _int(fp.get("torch_threads")),
                             str(weights) if weights else None, spec.get("budget"), batch)
    lat = rec.get("latency") or {}
    if not lat:
        return TimingSetting(None, None, None, None, None, None)
    signature, env, name = str(lat.get("signature") or ""), rec.get("environment") or {}, lat.get("device")
    device = env.get("device")  # older records: the device whose name the timing bears
    if not device and name:
        device = "cuda" if name == env.get("gpu") else "cpu" if name == env.get("cpu") else None
    threads = _int(_signature_field(signature, "threads")) or _int(env.get("torch_threads"))
    return TimingSetting(str(device) if device else None, str(name) if name else None, threads, "trained", None,
                         _int(_signature_field(signature, "bs")))
