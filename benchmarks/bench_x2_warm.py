"""How "truly 2.00x" the known-ratio control is: the second of two back-to-back decodes against the first.

The known-ratio arm (``--x2-control``) decodes every unit twice in one timed call and is compared with the same
system's single arm, which, like the first of the two decodes, runs right after another arm of the schedule. On a
shared-cache CPU the second decode finds the first one's weights and activations still warm, so for a small model
the arm costs less than twice one decode: MIST Table 3's 16:38 run read the control at 1.938x [1.931, 1.946] on
``encoder_minilm_int8`` with every other check in bounds. This prints, per system, the first decode (after another
system, as in the schedule), the second (back to back), and the ratio the arm truly has, 1 + second / first.
No target: the figures say which systems make a fair known-ratio control on this machine.

    python benchmarks/bench_x2_warm.py [--systems encoder_minilm_int8,fairseq_nat_int8,encoder_minilm]
                                       [--between encoder_bert] [--task quora] [--n 80]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="encoder_minilm_int8,fairseq_nat_int8,encoder_minilm")
    ap.add_argument("--between", default="encoder_bert", help="the system decoded before each first decode")
    ap.add_argument("--task", default="quora")
    ap.add_argument("--n", type=int, default=80)
    args = ap.parse_args(argv)

    from bench.data import load_split
    from bench.env.threads import set_threads
    from bench.latency.prepare import prepare

    set_threads(1)
    names = [s for s in args.systems.split(",") if s]
    every = [*names, args.between]
    with tempfile.TemporaryDirectory() as work:
        prep = prepare(every, "paper", {n: {"weights": "random"} for n in every}, args.task, Path(work),
                       say=lambda _m: None)
        examples = list(load_split(args.task, "test").examples)[: args.n]
        other = prep.systems[args.between]
        print(f"{args.n} items of {args.task}/test, paper size, random weights, length-forced, 1 thread; "
              f"before each first decode: {args.between}")
        for name in names:
            system = prep.systems[name]
            for ex in examples[:5]:  # warm-up
                system.decode_one(ex, forced_length=len(ex.target.split()))
            first = second = 0
            for ex in examples:
                length = len(ex.target.split())
                other.decode_one(ex, forced_length=length)  # another arm ran just before, as in the schedule
                t0 = time.perf_counter_ns()
                system.decode_one(ex, forced_length=length)
                t1 = time.perf_counter_ns()
                system.decode_one(ex, forced_length=length)
                t2 = time.perf_counter_ns()
                first, second = first + t1 - t0, second + t2 - t1
            print(f"{name:22s} first {first / args.n / 1e6:7.2f} ms  second {second / args.n / 1e6:7.2f} ms  "
                  f"second/first {second / first:.3f}  the twice-arm is truly {1 + second / first:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
