"""The paired design proven on this machine (run by ``make bench``): an A/A control and a known 2x ratio, timed
paired (RMIT, the meter's design) and in the old block design, side by side.

One real system (default ``encoder_minilm``: MIST(MiniLM)'s encoder at paper size, untrained weights, length-forced
on Quora) is timed as three arms: ``once`` (the system), ``twice`` (a wrapper that decodes every unit twice, so its
true cost is exactly 2x) and the A/A arm (``once`` again). The speed-up of ``once`` over ``twice`` must read 2.00x
and the A/A control 1.00x, each within 3 % (the verdict's A/A rule); the same runs in the block design show what
timing whole blocks minutes apart does on a shared machine. Targets (exit 1 when missed): every paired run's 2x
control within ±3 % of 2.00 and its A/A control within ±3 % of 1.00. The block design's figures are printed, not
gated: they are the contrast.

    python benchmarks/bench_paired_method.py [--system encoder_minilm] [--task quora] [--n 40] [--rounds 3]
                                             [--repeats 2] [--out paired.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api.system import System, SystemInfo
from bench.api.types import Example, TaskInfo

TOLERANCE = 0.03


class Twice(System):
    """Decodes every unit twice with the wrapped system: a known 2x cost, the same outputs."""

    def __init__(self, inner: System) -> None:
        self.inner = inner
        self.supports_forced_length = inner.supports_forced_length
        self.device = inner.device
        self.last_iterations = None

    def describe(self) -> SystemInfo:
        info = self.inner.describe()
        return SystemInfo(f"twice({info.name})", info.family, info.iterations, "known-ratio control: decodes twice",
                          config=dict(info.config or {}))

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        """The wrapped system is built and placed already."""

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        first = self.inner.decode_one(example, forced_length=forced_length) if forced_length is not None \
            else self.inner.decode_one(example)
        second = self.inner.decode_one(example, forced_length=forced_length) if forced_length is not None \
            else self.inner.decode_one(example)
        if first != second:
            raise RuntimeError("the wrapped system decoded the same item differently twice")
        self.last_iterations = self.inner.last_iterations
        return second

    def models(self) -> Sequence[Any]:
        return self.inner.models()


def build(system: str, task: str, work: Path) -> tuple[System, list[Example]]:
    from bench.data import load_split
    from bench.latency.prepare import prepare

    prep = prepare([system], "paper", {system: {"weights": "random"}}, task, work, say=lambda _m: None)
    return prep.systems[system], list(load_split(task, "test").examples)


def run(design: str, inner: System, examples: list[Example], args: argparse.Namespace) -> dict[str, Any]:
    from bench.latency import measure

    t0 = time.perf_counter()
    rep = measure({"twice": Twice(inner), "once": inner}, examples, baseline="twice", n=args.n, rounds=args.rounds,
                  warmup_items=5, warmup_s=2.0, min_items=args.n, min_duration_s=0.0, length_forced=True,
                  design=design, aa="once", max_rounds=args.rounds, count_work=False, progress=False,
                  seed=args.seed)
    sp, aa = rep.systems["once"].speedup, rep.aa
    assert sp is not None and aa is not None
    return {"design": design, "wall_s": time.perf_counter() - t0, "rounds": rep.timed.log.rounds, "units": args.n,
            "two_x": sp.to_json(), "aa": aa.to_json(), "canary_drift": rep.canary_drift, "ms_label": rep.ms_label}


def line(r: dict[str, Any]) -> str:
    s, a = r["two_x"], r["aa"]
    return (f"{r['design']:<6} 2x control {s['mean']:.3f} [{s['mean_ci95'][0]:.3f}, {s['mean_ci95'][1]:.3f}] "
            f"rounds {min(s['per_round']):.3f}-{max(s['per_round']):.3f} {s['verdict']:<12} | A/A {a['mean']:.3f} "
            f"[{a['mean_ci95'][0]:.3f}, {a['mean_ci95'][1]:.3f}] rounds {min(a['per_round']):.3f}-"
            f"{max(a['per_round']):.3f} {a['verdict']:<12} | canary drift {r['canary_drift']:.0%}, "
            f"{r['wall_s']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--system", default="encoder_minilm")
    p.add_argument("--task", default="quora")
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2, help="runs of each design")
    p.add_argument("--designs", default="paired,block", help="paired, block or both (comma-separated)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-paired-") as work:
        inner, examples = build(args.system, args.task, Path(work))
        results = []
        for k in range(args.repeats):
            for design in [d.strip() for d in args.designs.split(",") if d.strip()]:
                results.append(run(design, inner, examples, args))
                print(f"run {k + 1}: " + line(results[-1]), flush=True)
    ok = True
    print(f"== {args.system} ({args.task}, paper size, untrained, length-forced), {args.n} units x {args.rounds} "
          f"rounds, {args.threads} thread(s)")
    for r in results:
        print(line(r))
        if r["design"] == "paired":
            ok &= abs(r["two_x"]["mean"] / 2.0 - 1.0) <= TOLERANCE and abs(r["aa"]["mean"] - 1.0) <= TOLERANCE
    paired = [r for r in results if r["design"] == "paired"]
    block = [r for r in results if r["design"] == "block"]
    for name, rs in (("paired", paired), ("block", block)):
        if not rs:
            continue
        worst2 = max(abs(r["two_x"]["mean"] / 2 - 1) for r in rs)
        worst_aa = max(abs(r["aa"]["mean"] - 1) for r in rs)
        print(f"{name}: worst 2x-control error {worst2:.1%}, worst A/A error {worst_aa:.1%} (target {TOLERANCE:.0%})")
    print("target (paired: 2x control and A/A within ±3 %): " + ("met" if ok else "MISSED"))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
