"""Benchmark of the everyday commands (run by ``make bench``; #47 "fast everyday commands").

Prints the wall time of `bench show`, `bench compare` of two committed runs (first with an empty
``$BENCH_CACHE/compare``, then from the cache), `bench ls runs` and `bench validate`, each a fresh
``python -m bench`` process as a user types it, against its target on an idle 2-core machine. Exits 1 when
a target is missed. The split cache is kept (it is built once per machine); only the compare cache is
emptied for the cold figure, in a temporary ``$BENCH_CACHE`` that links the real split cache.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHOW = "copybert_selfcopy--squad_qg--test--cpu--s42--9b7c5e3b"
COMPARE = (SHOW, "copybert_twohop--squad_qg--test--cpu--s42--b908abb6")
#: seconds on an idle 2-core machine (the issue's targets; ls runs and validate: no slower than today)
TARGETS = {"show": 2.0, "compare (cached)": 5.0, "ls runs": 2.0, "validate": 7.0}


def timed(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one ``python -m bench ARGS`` (its output dropped: the time is what is measured)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cold", action="store_true", help="Skip the uncached compare (METEOR start-up).")
    opts = parser.parse_args()
    from bench.api.paths import cache_root

    with tempfile.TemporaryDirectory(prefix="bench-everyday-") as tmp:
        cache = Path(tmp)
        splits = cache_root() / "splits"
        if splits.is_dir():
            (cache / "splits").symlink_to(splits)
        env = {**os.environ, "BENCH_CACHE": str(cache), "COLUMNS": "80", "PYTHONPATH": str(ROOT)}
        figures = {"show": timed(["show", SHOW], env)}
        if not opts.skip_cold:
            figures["compare (cold)"] = timed(["compare", *COMPARE], env)
        else:
            timed(["compare", *COMPARE], env)
        figures["compare (cached)"] = timed(["compare", *COMPARE], env)
        figures["ls runs"] = timed(["ls", "runs"], env)
        figures["validate"] = timed(["validate"], env)
    load = os.getloadavg()[0]
    print(f"everyday commands (fresh processes, COLUMNS=80; load average {load:.1f} on {os.cpu_count()} cores)")
    missed = []
    for name, seconds in figures.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else ("ok" if seconds <= target else "MISSED")
        print(f"  {name:<18} {seconds:6.2f} s" + (f"   target < {target:.0f} s  {verdict}" if target else ""))
        if verdict == "MISSED":
            missed.append(name)
    if missed and load > (os.cpu_count() or 1):
        print(f"  (the machine is loaded: {load:.1f} runnable processes per {os.cpu_count()} cores)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
