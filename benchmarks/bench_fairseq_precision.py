"""fairseq's own precision switches on CPU, measured rather than assumed (run by ``make bench``).

Trains the ``fairseq_transformer`` ``cpu`` recipe on the first Quora pairs for ``--updates``
updates in fp32 through the system (seconds per update from fairseq's ``ups`` on its log lines
after the first), then runs the very same ``fairseq-train`` command with ``--bf16`` and with
``--fp16`` appended and reports what each does on this machine. With fairseq-fixed 0.12.3.1,
``--bf16`` "implies --tpu" and stops in ``get_tpu_device`` without torch_xla, and ``--fp16``
needs CUDA, so neither speeds up CPU training; the cpu preset trains in fp32. No target; exit 0
unless the fp32 run fails.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

UPS = re.compile(r"train_inner \|.*?ups=([\d.]+)")


def seconds_per_update(log: str) -> float:
    """1 / mean updates-per-second over fairseq's ``train_inner`` lines, the first (warm-up) left out."""
    rates = [float(x) for x in UPS.findall(log)][1:]
    return len(rates) / sum(rates) if rates and sum(rates) else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--updates", type=int, default=40)
    ap.add_argument("--train", type=int, default=4000)
    args = ap.parse_args()

    from bench_training import task_info

    from systems import SYSTEMS
    from systems.fairseq_nat.flags import train_command
    from systems.fairseq_nat.proc import FairseqToolError, run_tool

    overrides = {"max_update": args.updates, "train_examples": args.train, "log_interval": 5}
    system = SYSTEMS.get("fairseq_transformer")("cpu", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        system.fit(task_info("quora", args.train), Path(tmp))
        fp32 = seconds_per_update(next(Path(tmp).rglob("train.log")).read_text())
        print(f"fairseq_transformer cpu recipe, fp32: {fp32:.2f} s/update ({args.updates} updates)")
        for flag in ("--bf16", "--fp16"):
            save = Path(tmp) / flag.strip("-")
            cmd = train_command(system.cfg, system.data_info["dir"], str(save), cpu=True) + [flag]
            t0 = time.perf_counter()
            try:
                run_tool("train", cmd, save / "train.log")
            except FairseqToolError as exc:
                last = [ln for ln in str(exc).splitlines() if ln.strip()][-1].strip()
                print(f"fairseq_transformer cpu recipe, {flag}: fails after {time.perf_counter() - t0:.0f} s: {last}")
                continue
            rate = seconds_per_update((save / "train.log").read_text())
            print(f"fairseq_transformer cpu recipe, {flag}: {rate:.2f} s/update ({fp32 / rate:.2f}× fp32's speed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
