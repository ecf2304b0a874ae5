"""One run at 2 threads or two runs at 1 thread each: which gets more updates per hour? (``make bench``)

Runs the NAR family's ``cpu`` training (``encoder_minilm_l6`` on Quora, the preset's speed policy)
for ``--steps`` updates: once alone with ``--threads`` threads, then ``--threads`` copies at the
same time with one thread each. Throughput is updates per hour summed over the processes, timed
after ``--warm`` updates (compilation) from each trainer's ``step_times.json``. The answer decides
how README "Queue runs" tells users to fill a machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import sys, torch
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
torch.set_num_threads({threads})
from bench_training import task_info
from systems import SYSTEMS
system = SYSTEMS.get("encoder_minilm_l6")("cpu", {{"steps": {steps}, "train_examples": 2048, "save_every": 0}})
system.fit(task_info("quora", 2048), __import__("pathlib").Path({work!r}))
"""


def rate(work: Path, warm: int) -> float:
    """Updates per hour after ``warm``."""
    rows = [(s, t) for s, t in json.loads((work / "step_times.json").read_text()) if s >= warm]
    (s0, t0), (s1, t1) = rows[0], rows[-1]
    return 3600 * (s1 - s0) / (t1 - t0)


def launch(work: Path, threads: int, steps: int) -> subprocess.Popen[bytes]:
    code = WORKER.format(root=str(ROOT), bench=str(ROOT / "benchmarks"), threads=threads, steps=steps, work=str(work))
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--warm", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = launch(root / "one", args.threads, args.steps)
        if one.wait():
            sys.exit(one.stderr.read().decode()[-2000:] if one.stderr else "worker failed")
        alone = rate(root / "one", args.warm)
        procs = [launch(root / f"p{i}", 1, args.steps) for i in range(args.threads)]
        for p in procs:
            if p.wait():
                sys.exit(p.stderr.read().decode()[-2000:] if p.stderr else "worker failed")
        rates = [rate(root / f"p{i}", args.warm) for i in range(args.threads)]
    together = sum(rates)
    print(f"1 run x {args.threads} threads: {alone:7.0f} updates/h")
    print(f"{args.threads} runs x 1 thread:  {together:7.0f} updates/h  ({' + '.join(f'{r:.0f}' for r in rates)})")
    best = f"{args.threads} runs x 1 thread" if together > alone else f"1 run x {args.threads} threads"
    print(f"more updates per hour: {best} ({max(together, alone) / min(together, alone):.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
