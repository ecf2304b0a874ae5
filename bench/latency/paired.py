"""A speed-up from paired trials, its confidence interval, and its verdict (VALID, INCONCLUSIVE, UNSTABLE, INVALID).

The trials (:mod:`bench.latency.trials`) give, for every arm, a rounds × units matrix of nanoseconds. Here:

- per unit and arm, the median over rounds (one slow round of one unit cannot move it);
- the speed-up S = Σ baseline ÷ Σ system over the units' medians (what a user decoding these units would wait,
  in ratio), with a 95 % CI from a paired bootstrap that resamples whole units (all arms and rounds of a unit
  travel together; :func:`bench.latency.stats.paired_bootstrap_speedup` over the per-unit medians is exactly
  that, since a unit's median is a function of its own rounds only);
- beside it, the geometric mean of the per-unit ratios and the per-round S_r (the same ratio of sums within
  one round): their spread says whether conditions moved between rounds in a way pairing did not cancel.
  Stability is never judged by the spread across units: per-unit speed-ups legitimately grow with length.

A speed-up is VALID when the design is complete and the timed outputs equal the untimed reference outputs, the
A/A control (two arms of one system) reads within ``aa_max`` of 1 with a CI that holds 1, its own CI is narrow
(hi/lo ≤ ``ci_ratio``) and its per-round ratios agree (max/min ≤ ``round_spread``). A wide CI is INCONCLUSIVE
(more rounds may narrow it: the meter adds them within its time budget), a failed A/A or per-round spread is
UNSTABLE (the machine moved in a way the pairing did not cancel; the range is reported), a broken design INVALID.
The thresholds were calibrated with A/A runs on the machines this project runs on (docs/latency.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bench.latency.stats import paired_bootstrap_speedup

#: verdicts from best to worst; a speed-up takes the worst that any of its rules gives
VERDICTS = ("VALID", "INCONCLUSIVE", "UNSTABLE", "INVALID")


@dataclass(frozen=True)
class Thresholds:
    """The rules of a VALID speed-up (recorded with every verdict, so a reader sees what was asked)."""

    aa_max: float = 0.03  # |S_AA − 1| at most
    ci_ratio: float = 1.10  # the CI's hi/lo at most (about ±5 %)
    round_spread: float = 1.15  # max S_r / min S_r at most
    #: the known-ratio control's whole CI within 2 × (1 ± x2_band). None: the rule of records written before it,
    #: "a CI that holds 2", which a tight CI breaks whenever the wrapper's true ratio is not exactly 2 (the per-call
    #: work it does once, not twice: 1.978x [1.972, 1.985] on a 28 ms system, MIST Table 3 on 2026-11-29)
    x2_band: float | None = 0.03

    def to_json(self) -> dict[str, float]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Any) -> Thresholds:
        if not isinstance(data, dict):
            return cls()
        kept = {k: float(data[k]) for k in ("aa_max", "ci_ratio", "round_spread") if k in data}
        band = float(data["x2_band"]) if "x2_band" in data else None  # None: judged by the older x2 rule
        return cls(**kept, x2_band=band)


@dataclass(frozen=True)
class PairedSpeedup:
    """Baseline ÷ system over paired trials: S (``mean``, a ratio of sums of per-unit medians) with its CI, the
    ratio of the median units (``median``) with its CI, the geometric mean of per-unit ratios, and per-round S_r."""

    mean: float
    median: float
    mean_ci95: tuple[float, float]
    median_ci95: tuple[float, float]
    n_resamples: int
    geomean: float
    per_round: list[float]
    units: int
    rounds: int
    verdict: str = "VALID"
    reasons: list[str] = field(default_factory=list)

    @property
    def round_spread(self) -> float:
        """max S_r / min S_r (1.0 with one round)."""
        return max(self.per_round) / min(self.per_round) if self.per_round else 1.0

    @property
    def ci_ratio(self) -> float:
        lo, hi = self.mean_ci95
        return hi / lo if lo > 0 else math.inf

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "median": self.median, "mean_ci95": list(self.mean_ci95),
                "median_ci95": list(self.median_ci95), "n_resamples": self.n_resamples, "geomean": self.geomean,
                "per_round": list(self.per_round), "round_spread": self.round_spread, "units": self.units,
                "rounds": self.rounds, "verdict": self.verdict, "reasons": list(self.reasons)}


def unit_medians(matrix: np.ndarray) -> np.ndarray:
    """Per unit (column), the median over rounds (rows) of a rounds × units matrix; NaN cells are ignored."""
    return np.nanmedian(matrix, axis=0)


def per_round_ratios(base: np.ndarray, system: np.ndarray) -> list[float]:
    """S_r: within each round, Σ baseline ÷ Σ system over the units."""
    out = []
    for b, s in zip(base, system, strict=True):
        total = float(np.nansum(s))
        out.append(float(np.nansum(b)) / total if total > 0 else math.inf)
    return out


def paired_speedup(base: np.ndarray, system: np.ndarray, n_resamples: int = 2000, seed: int = 0) -> PairedSpeedup:
    """The statistic (no verdict yet) of ``system`` against ``base``, each a rounds × units matrix of ns."""
    if base.shape != system.shape or base.size == 0:
        raise ValueError(f"paired trials need two equally shaped, non-empty rounds × units matrices; got "
                         f"{base.shape} and {system.shape}")
    bm, sm = unit_medians(base), unit_medians(system)
    sp = paired_bootstrap_speedup(bm.tolist(), sm.tolist(), n_resamples, seed)
    geo = float(np.exp(np.mean(np.log(bm / sm))))
    return PairedSpeedup(sp.mean, sp.median, sp.mean_ci95, sp.median_ci95, sp.n_resamples, geo,
                         per_round_ratios(base, system), int(base.shape[1]), int(base.shape[0]))


def aa_problems(aa: PairedSpeedup | None, th: Thresholds) -> list[tuple[str, str]]:
    """(verdict, reason) for each rule the A/A control breaks; a missing control makes nothing VALID."""
    if aa is None:
        return [("INCONCLUSIVE", "no A/A control was timed, so the meter's own false difference is unknown")]
    out = []
    lo, hi = aa.mean_ci95
    if not lo <= 1.0 <= hi:
        out.append(("UNSTABLE", f"the A/A control (one system timed as two arms) read {aa.mean:.3f}x with CI "
                                f"[{lo:.3f}, {hi:.3f}], which excludes 1: the meter showed a false difference"))
    if abs(aa.mean - 1.0) > th.aa_max:
        out.append(("INCONCLUSIVE", f"the A/A control read {aa.mean:.3f}x, more than {th.aa_max:.0%} from 1"))
    return out


def x2_problems(x2: PairedSpeedup | None, th: Thresholds) -> list[tuple[str, str]]:
    """(verdict, reason) for each rule the known-ratio control breaks: an arm that decodes every unit twice must
    read 2.00x over its system within ``x2_band`` (its whole CI inside 2 × (1 ± x2_band); a point outside is a
    misread, a CI that only reaches outside is too little data), or, by the rule of older records
    (``x2_band`` None), within ``aa_max`` with a CI that holds 2 (None: no such control was timed)."""
    if x2 is None:
        return []
    lo, hi = x2.mean_ci95
    if th.x2_band is not None:
        low, high = 2.0 * (1 - th.x2_band), 2.0 * (1 + th.x2_band)
        if not low <= x2.mean <= high:
            return [("UNSTABLE", f"the known-ratio control (a system decoding every item twice) read {x2.mean:.3f}x, "
                                 f"outside 2 ± {th.x2_band:.0%} [{low:.2f}, {high:.2f}]: the meter misread a known "
                                 "ratio")]
        if not (low <= lo and hi <= high):
            return [("INCONCLUSIVE", f"the known-ratio control read {x2.mean:.3f}x with CI [{lo:.3f}, {hi:.3f}], "
                                     f"which reaches outside 2 ± {th.x2_band:.0%} [{low:.2f}, {high:.2f}]")]
        return []
    out = []
    if not lo <= 2.0 <= hi:
        out.append(("UNSTABLE", f"the known-ratio control (a system decoding every item twice) read {x2.mean:.3f}x "
                                f"with CI [{lo:.3f}, {hi:.3f}], which excludes 2"))
    if abs(x2.mean / 2.0 - 1.0) > th.aa_max:
        out.append(("INCONCLUSIVE", f"the known-ratio control read {x2.mean:.3f}x, more than {th.aa_max:.0%} from 2"))
    return out


def own_problems(sp: PairedSpeedup, th: Thresholds) -> list[tuple[str, str]]:
    """(verdict, reason) for each rule the speed-up itself breaks (its CI width and its per-round spread)."""
    out = []
    lo, hi = sp.mean_ci95
    if sp.ci_ratio > th.ci_ratio:
        out.append(("INCONCLUSIVE", f"CI [{lo:.3f}, {hi:.3f}] is wider than hi/lo {th.ci_ratio:.2f} "
                                    f"({sp.ci_ratio:.3f}){units_needed(sp, th)}"))
    if sp.round_spread > th.round_spread:
        out.append(("UNSTABLE", f"per-round speed-ups ranged {min(sp.per_round):.3f}-{max(sp.per_round):.3f}x "
                                f"(max/min {sp.round_spread:.3f} > {th.round_spread:.2f})"))
    return out


def units_needed(sp: PairedSpeedup, th: Thresholds) -> str:
    """Why a CI is wide, when the rounds agree: the spread between items (per-item speed-ups grow with length), which
    more rounds cannot narrow and more units can (the width shrinks as 1/sqrt(units)); then how many would do."""
    if sp.round_spread > th.round_spread or sp.ci_ratio <= 1.0 or th.ci_ratio <= 1.0:
        return ""
    need = math.ceil(sp.units * (math.log(sp.ci_ratio) / math.log(th.ci_ratio)) ** 2)
    return (f"; the rounds agree (max/min {sp.round_spread:.3f}), so the width is the spread between items, which "
            f"more items narrow: about {need} would do (--n {need})")


def worst(verdicts: Sequence[str]) -> str:
    """The worst of ``verdicts`` (VALID when there are none)."""
    return max(verdicts, key=VERDICTS.index, default="VALID")


def judged(sp: PairedSpeedup, problems: Sequence[tuple[str, str]]) -> PairedSpeedup:
    """``sp`` with the verdict and reasons ``problems`` give."""
    from dataclasses import replace

    return replace(sp, verdict=worst([v for v, _ in problems]), reasons=[r for _, r in problems])


def judge_all(speedups: dict[str, PairedSpeedup], aa: PairedSpeedup | None, design: Sequence[str],
              th: Thresholds, per_system: Mapping[str, Sequence[str]] | None = None,
              baseline: str | None = None, x2: PairedSpeedup | None = None,
              ) -> tuple[dict[str, PairedSpeedup], PairedSpeedup | None]:
    """Every speed-up and the A/A control, judged. ``design`` are the reasons the design itself failed (incomplete,
    outputs that differ from the reference, a system on the wrong device ...): everything is INVALID then;
    ``per_system`` are reasons that break one system's timings (its own speed-up, and every speed-up when it is
    the ``baseline``)."""
    per = per_system or {}
    broken = [("INVALID", r) for r in design]
    base_broken = [("INVALID", f"baseline {baseline}: {r}") for r in per.get(baseline or "", ())]
    control = aa_problems(aa, th) + x2_problems(x2, th)
    out = {}
    for name, sp in speedups.items():
        own = [("INVALID", r) for r in per.get(name, ())] if name != baseline else []
        out[name] = judged(sp, broken + base_broken + own + control + own_problems(sp, th))
    aa_judged = None
    if aa is not None:
        spread = [p for p in own_problems(aa, th) if p[0] == "UNSTABLE"]
        aa_judged = judged(aa, broken + aa_problems(aa, th) + spread)
    return out, aa_judged


def judge_x2(x2: PairedSpeedup, design: Sequence[str], th: Thresholds) -> PairedSpeedup:
    """The known-ratio control judged by its own rules (and the design's)."""
    return judged(x2, [("INVALID", r) for r in design] + x2_problems(x2, th))


__all__ = ["VERDICTS", "PairedSpeedup", "Thresholds", "aa_problems", "judge_all", "judge_x2", "judged", "own_problems",
           "x2_problems",
           "paired_speedup", "per_round_ratios", "unit_medians", "worst"]
