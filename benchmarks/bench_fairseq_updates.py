"""What one update of each fairseq row costs here, and so what its ``cpu`` budget costs (run by ``make bench``).

Every fairseq row of a table column trains the same number of updates (the ``cpu`` preset's
``max_update``), but not at the same price: iNAT refines its output ``train_step`` times per update,
LevT and InsT run their insertion/deletion policies. This trains each system's ``cpu`` recipe for
``--updates`` updates on the first Quora pairs (one thread, as the evidence runs train: one run per
core) and prints seconds per update (fairseq's ``ups`` after the first log line) and the hours the
preset's updates would take, against the ``cpu`` budget's cap of 45 minutes of training. No target;
exit 0 unless a run fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the cpu budget's ceiling on training time (the cpu-budget issue: <= 45 min on an idle 2-core box)
CPU_TRAIN_CAP_S = 45 * 60
ROWS = ("fairseq_transformer", "fairseq_nat", "fairseq_cmlm", "fairseq_inat", "fairseq_levt", "fairseq_inst")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--systems", default=",".join(ROWS))
    args = ap.parse_args()
    if args.updates < 10:
        ap.error("--updates must be >= 10: the rate is read off log lines every 5 updates, the first left out")

    from bench_fairseq_precision import seconds_per_update
    from bench_training import task_info

    from systems import SYSTEMS

    task = task_info("quora", args.train)
    overrides = {"max_update": args.updates, "train_examples": args.train, "log_interval": 5, "validate": False,
                 "threads": args.threads}
    print(f"cpu recipes on Quora, {args.updates} updates each, {args.threads} thread(s):")
    for name in args.systems.split(","):
        budget_updates = SYSTEMS.get(name)("cpu", {}).cfg.max_update
        system = SYSTEMS.get(name)("cpu", overrides)
        with tempfile.TemporaryDirectory() as tmp:
            system.fit(task, Path(tmp))
            rate = seconds_per_update(next(Path(tmp).rglob("train.log")).read_text())
        total = rate * budget_updates
        verdict = "within" if total <= CPU_TRAIN_CAP_S else "OVER"
        print(f"  {name:20s} {rate:5.2f} s/update -> {budget_updates} updates = {total / 3600:4.1f} h "
              f"({verdict} the {CPU_TRAIN_CAP_S // 60}-min cap at this thread count)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
