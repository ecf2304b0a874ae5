"""The training speed policy, measured: which of eager/compiled x fp32/bf16 trains fastest on this machine.

Why measured and not read from CPU flags: the flags say what a CPU can do, not what is faster at a family's
shapes. On a 2-core Intel Xeon VM with avx512_bf16 and no AMX, the old flag rule (bf16 + torch.compile) trained
UniLM, CopyBERT and ERNIE-GEN at 0.56-0.73x the speed of eager fp32 (issue #59), while a Zen 4 box gained
1.23-1.69x: autocast adds casts, a dynamic-shape compile adds guards, and which wins depends on the CPU, the
kernel library and the shapes.

So ``precision=auto`` is resolved by a probe (:mod:`systems.training.speed_probe` runs the steps): a few training
steps of every candidate on the same seeded batches, timed *paired and interleaved* (each round runs every
candidate once, in an order shuffled per round, so a noisy neighbour slows all of them alike), with compilation
and the first steps timed apart as warm-up. A candidate other than eager fp32 is chosen only when it wins clearly:
at least :data:`MIN_GAIN` faster, with the 95 % bootstrap CI of its paired speed-up above 1; bf16 only where the
hardware does it natively. This module is that rule and its timing loop, with no torch: tests drive it with a
fake clock.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: what the probe can choose: precision, then "+compile" when the model's blocks are compiled
CANDIDATES = ("fp32", "fp32+compile", "bf16", "bf16+compile")
#: the safe default: chosen unless another candidate wins clearly
DEFAULT = "fp32"
#: "wins clearly": at least this speed-up over eager fp32 (and its 95 % CI above 1)
MIN_GAIN = 1.10
N_RESAMPLES = 2000


def candidate(precision: str, compile: bool) -> str:
    """The candidate name of a (precision, compile) setting: ``fp32``, ``bf16+compile``, ..."""
    return precision + ("+compile" if compile else "")


def setting(name: str) -> tuple[str, bool]:
    """(precision, compile) of a candidate name; ValueError naming the candidates for anything else."""
    if name not in CANDIDATES:
        raise ValueError(f"unknown training candidate {name!r}; choose one of {', '.join(CANDIDATES)}")
    precision, _, comp = name.partition("+")
    return precision, bool(comp)


def allowed(compile: bool, native_bf16: bool) -> tuple[str, ...]:
    """The candidates a run may train with: compiled ones only when its ``compile`` allows it, bf16 ones only
    where bf16 is native (emulated bf16 is many times slower: a MiniLM step 13x on an AVX2 EPYC)."""
    return tuple(c for c in CANDIDATES
                 if (compile or not setting(c)[1]) and (native_bf16 or setting(c)[0] != "bf16"))


@dataclass
class Figures:
    """What one probe measured: per candidate the seconds of each timed round (round i of every candidate ran the
    same batch, in an order shuffled per round), the warm-up seconds (compilation, first steps) timed apart, and
    the candidates not probed with why."""

    rounds: dict[str, list[float]]
    warmup_s: dict[str, float]
    skipped: dict[str, str] = field(default_factory=dict)
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"rounds": {k: [round(t, 6) for t in v] for k, v in self.rounds.items()},
                "warmup_s": {k: round(v, 3) for k, v in self.warmup_s.items()},
                "skipped": dict(self.skipped), "seed": self.seed}

    @classmethod
    def from_json(cls, obj: Any) -> Figures:
        """Figures as :meth:`to_json` wrote them; ValueError naming the first field that is not."""
        if not isinstance(obj, dict):
            raise ValueError("figures is not an object")
        rounds, warm, skipped = obj.get("rounds"), obj.get("warmup_s"), obj.get("skipped", {})
        if not isinstance(rounds, dict) or DEFAULT not in rounds:
            raise ValueError(f"figures.rounds must time at least {DEFAULT!r}")
        lengths = set()
        for name, times in rounds.items():
            setting(name)
            if not isinstance(times, list) or len(times) < 2 or not all(_positive(t) for t in times):
                raise ValueError(f"figures.rounds.{name} must be two or more positive seconds")
            lengths.add(len(times))
        if len(lengths) != 1:
            raise ValueError("figures.rounds: every candidate must have the same number of rounds (paired)")
        if not isinstance(warm, dict) or set(warm) != set(rounds) or not all(
                _positive(t) or t == 0 for t in warm.values()):
            raise ValueError("figures.warmup_s must give seconds for every timed candidate")
        if not isinstance(skipped, dict) or not all(isinstance(v, str) for v in skipped.values()):
            raise ValueError("figures.skipped must map candidates to reasons")
        for name in skipped:
            setting(name)
        seed = obj.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ValueError("figures.seed must be an integer")
        return cls({k: [float(t) for t in v] for k, v in rounds.items()},
                   {k: float(v) for k, v in warm.items()}, dict(skipped), seed)

    @property
    def n_rounds(self) -> int:
        return len(self.rounds[DEFAULT])

    def timed_s(self) -> float:
        return sum(sum(v) for v in self.rounds.values())


def _positive(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def measure(candidates: Sequence[str], step: Callable[[str, int], None], *, warm_steps: Mapping[str, int],
            min_rounds: int = 3, max_rounds: int = 8, budget_s: float = 6.0, seed: int = 0,
            clock: Callable[[], float] = time.perf_counter, skipped: Mapping[str, str] | None = None) -> Figures:
    """Time ``step(candidate, i)`` (one training step of ``candidate`` on probe batch ``i``) paired and interleaved.

    Warm-up first: ``warm_steps[c]`` steps of each candidate, timed as one figure (compilation lands there).
    Then rounds: each runs every candidate once on the same batch index, in an order shuffled per round
    (seeded), until ``min_rounds`` are done and ``budget_s`` of timed steps spent, or ``max_rounds``.
    """
    if DEFAULT not in candidates:
        raise ValueError(f"the probe must time {DEFAULT!r}, the default it compares against")
    warm: dict[str, float] = {}
    for c in candidates:
        t0 = clock()
        for i in range(warm_steps.get(c, 1)):
            step(c, i)
        warm[c] = clock() - t0
    rounds: dict[str, list[float]] = {c: [] for c in candidates}
    rng = random.Random(seed)
    spent, r = 0.0, 0
    while r < max_rounds and (r < min_rounds or spent < budget_s):
        order = list(candidates)
        rng.shuffle(order)
        for c in order:
            t0 = clock()
            step(c, r)
            dt = clock() - t0
            rounds[c].append(dt)
            spent += dt
        r += 1
    return Figures(rounds, warm, dict(skipped or {}), seed)


@dataclass(frozen=True)
class Speedup:
    """One candidate against eager fp32 over the same rounds: ratio of mean step times, paired bootstrap CI."""

    point: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.point:.2f}x [{self.low:.2f}, {self.high:.2f}]"


def speedup(base: Sequence[float], other: Sequence[float], seed: int = 0, n: int = N_RESAMPLES) -> Speedup:
    """mean(base) / mean(other), with a 95 % percentile CI from resampling rounds (the same rounds for both:
    paired, so a slow round that slowed every candidate cancels)."""
    k = len(base)
    point = sum(base) / sum(other)
    rng = random.Random(seed)
    ratios = []
    for _ in range(n):
        idx = [rng.randrange(k) for _ in range(k)]
        ratios.append(sum(base[i] for i in idx) / sum(other[i] for i in idx))
    ratios.sort()
    return Speedup(point, ratios[int(0.025 * (n - 1))], ratios[int(math.ceil(0.975 * (n - 1)))])


def speedups(figures: Figures) -> dict[str, Speedup]:
    """Every timed candidate's :func:`speedup` over eager fp32 (fp32 itself: 1.0)."""
    base = figures.rounds[DEFAULT]
    return {c: speedup(base, t, figures.seed) for c, t in figures.rounds.items()}


def wins_clearly(s: Speedup, min_gain: float = MIN_GAIN) -> bool:
    """The rule for leaving the default: at least ``min_gain`` faster, and the CI's low end above 1."""
    return s.point >= min_gain and s.low > 1.0


@dataclass(frozen=True)
class Choice:
    """What the policy trains with, and why, from one probe's figures."""

    name: str
    why: str
    speedups: dict[str, Speedup]


def decide(figures: Figures, allowed_names: Sequence[str], min_gain: float = MIN_GAIN) -> Choice:
    """The fastest allowed candidate that wins clearly (:func:`wins_clearly`) over eager fp32, else eager fp32."""
    ups = speedups(figures)
    contenders = {c: s for c, s in ups.items() if c != DEFAULT and c in allowed_names}
    clear = {c: s for c, s in contenders.items() if wins_clearly(s, min_gain)}
    gain = f"{min_gain - 1:.0%}"
    if clear:
        best = max(clear, key=lambda c: clear[c].point)
        return Choice(best, f"{best} trained {clear[best]} as fast as eager fp32, the fastest that won "
                            f"clearly (>= {gain} with the CI above 1)", ups)
    if not contenders:
        return Choice(DEFAULT, "eager fp32 was the only candidate allowed", ups)
    best = max(contenders, key=lambda c: contenders[c].point)
    return Choice(DEFAULT, f"no candidate beat eager fp32 clearly (>= {gain} with the CI above 1); best was "
                           f"{best} at {contenders[best]}", ups)


def slower_than_choice(figures: Figures, name: str, choice: Choice) -> Speedup | None:
    """``name``'s paired speed against the policy's choice when the probe measured it slower (None otherwise,
    or when it was not probed): the figure behind the notice for an explicit setting."""
    if name == choice.name or name not in figures.rounds:
        return None
    s = speedup(figures.rounds[choice.name], figures.rounds[name], figures.seed)
    return s if s.point < 1.0 else None


def summary(figures: Figures, choice: Choice | None = None) -> str:
    """One line of figures: each candidate's median step and speed-up over eager fp32, the skipped ones, warm-up."""
    ups = choice.speedups if choice is not None else speedups(figures)
    parts = []
    for c in CANDIDATES:
        if c in figures.rounds:
            med = sorted(figures.rounds[c])[len(figures.rounds[c]) // 2] * 1000
            parts.append(f"{c} {med:.0f} ms" + ("" if c == DEFAULT else f" ({ups[c]})"))
    reasons: dict[str, list[str]] = {}
    for c, why in figures.skipped.items():
        reasons.setdefault(why, []).append(c)
    parts += [f"{', '.join(names)} not probed: {why}" for why, names in reasons.items()]
    warm = sum(figures.warmup_s.values())
    return (f"{'; '.join(parts)}; {figures.n_rounds} paired rounds, {figures.timed_s():.1f} s timed, "
            f"{warm:.1f} s warm-up")
