"""GPU check of the latency canaries (issue 39, item 3), for a session that has a GPU; about 30 s.

Prints the GPU state (NVML or nvidia-smi), the canaries the meter would use (sizes, every size
tried, warm-up), then times ``--rounds`` rounds of the sized device canary, the host canary and
the old fixed 128×128 chain side by side, and finally a short ``measure()`` of two fixed GPU
workloads. Exits 1 if the sized device canary is outside 1–3 ms, if it or the host canary drifts
past the meter's 25 % on an idle GPU, or if the short measurement is INVALID. Without a GPU it
says so and exits 0. Not a ``bench_*`` file: ``make bench`` runs on CPU-only machines.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api.system import System, SystemInfo
from bench.api.types import Example, TaskInfo
from bench.env.device import resolve_device
from bench.env.fingerprint import describe_gpu_state, gpu_state
from bench.latency import measure, render_report
from bench.latency.canary import Canary, default_canaries
from bench.latency.sizing import Sizing
from bench.latency.workloads import MatmulChain

TOLERANCE = 0.25


class MatmulSteps(System):
    """A fixed number of 1024×1024 products per item on the GPU: a stand-in decoder with a known cost."""

    supports_forced_length = True

    def __init__(self, name: str, steps: int) -> None:
        import torch

        self.name, self.steps = name, steps
        self.a = torch.randn(1024, 1024, generator=torch.Generator().manual_seed(0)).to("cuda") / 32
        self.last_iterations = steps

    def describe(self) -> SystemInfo:
        return SystemInfo(self.name, "NAR", self.steps, "synthetic workload (benchmarks/gpu_canary_check.py)")

    def fit(self, task: TaskInfo, workdir: Path) -> None:
        """Untrained by design."""

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        x = self.a
        for _ in range(self.steps):
            x = x @ self.a
        return example.id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    if not resolve_device(None).startswith("cuda"):
        print("no GPU visible to torch: nothing to check here")
        return 0
    failed = []
    print("GPU state:", json.dumps(gpu_state()))
    cs = default_canaries("cuda")
    old = Canary(MatmulChain("cuda"), Sizing(128, 0.0, (1.0, 3.0), ()))
    setup = cs.to_json()
    print("device canary:", setup["workload"], "sizing", json.dumps(setup["sizing"]))
    print("warm-up:", json.dumps(setup["warmup"]))
    print("host canary:", setup["host"]["workload"], "sizing", json.dumps(setup["host"]["sizing"]))
    if not cs.device.sizing.in_range:
        failed.append(f"device canary sized outside 1–3 ms: {cs.device.sizing.ms:.3f} ms")
    for r in range(args.rounds):
        cs.measure(r)
        old.measure(r)
    for name, canary in (("sized device", cs.device), ("host", cs.host), ("old 128 chain", old)):
        ms = [round(c.median_ms, 3) for c in canary.rounds]
        print(f"{name}: drift {canary.drift():.1%}, per-round ms {ms}")
    failed += [f"{c.kind} canary drifted {c.drift():.0%} on an idle GPU" for c in cs.canaries if c.drift() > TOLERANCE]
    print("GPU state now:", describe_gpu_state(gpu_state()))

    examples = [Example(f"e{i}", "x", "y") for i in range(200)]
    rep = measure({"slow": MatmulSteps("slow", 8), "fast": MatmulSteps("fast", 2)}, examples, baseline="slow",
                  n=100, rounds=10, warmup_items=20, warmup_s=2.0, min_items=50, min_duration_s=2.0, progress=False,
                  device="cuda")
    render_report(rep)
    if not rep.valid:
        failed.append("short measurement INVALID: " + "; ".join(rep.invalid_reasons))
    for line in failed:
        print("FAILED:", line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
