"""scripts/gpu_check.py on a CPU (#49): it plans against --budget-s, judges a latency record, and a check cut off
from outside still leaves the table of the steps it finished in --out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # noqa: E402
from gpu_check_plan import Budget, StepSpec, planned_shares  # noqa: E402
from gpu_check_proc import TIMED_OUT, python, run  # noqa: E402


def test_time_a_quick_step_leaves_flows_on_to_the_later_steps() -> None:
    a, b, c = StepSpec("x", "a", 1, 0), StepSpec("x", "b", 1, 0), StepSpec("x", "c", 2, 0)
    budget = Budget(105.0, 0.0)  # 100 s to share after the reserve
    assert budget.share_s(a, [b, c], now=0.0) == pytest.approx(25.0)
    assert budget.share_s(b, [c], now=5.0) == pytest.approx(95.0 / 3)  # a took 5 s of its 25
    assert planned_shares([a, b, c], 105.0) == pytest.approx([25.0, 25.0, 50.0])
    assert budget.left_s(now=200.0) == 0.0


def test_a_step_that_would_not_fit_is_skipped_with_the_reason() -> None:
    budget = Budget(360.0, 0.0)
    step = StepSpec("latency", "latency", 90, 45)
    assert budget.skip_reason(step, 45.0) is None
    reason = budget.skip_reason(step, 30.0)
    assert reason == ("would not fit: needs about 45 s, its share of --budget-s 360 is 30 s (run it alone: "
                      "--only latency)")


def test_only_selects_steps_and_names_a_wrong_one() -> None:
    specs = gpu_check.plan_steps(gpu_check._only("latency"), "cuda")
    assert [s.group for s in specs] == ["env", "latency"]
    runs = gpu_check.plan_steps(gpu_check._only("runs"), "cpu")
    assert [s.name for s in runs][1:] == [f"run {n}" for n in gpu_check.FAMILY_RUNS]
    with pytest.raises(SystemExit, match="--only bogus: unknown step; choose from env,tests,runs,latency,sweep,"):
        gpu_check._only("tests,bogus")


def test_the_default_plan_fits_the_default_budget_on_a_gpu() -> None:
    """With --budget-s 360 every step's planned share covers what it needs: nothing is skipped up front."""
    specs = gpu_check.plan_steps(set(gpu_check.GROUPS), "cuda")
    assert all(share >= s.need_s for s, share in zip(specs, planned_shares(specs, 360.0), strict=True))


def test_a_probe_or_step_that_hangs_is_stopped_at_its_timeout(tmp_path: Path) -> None:
    out, why = python(dict(os.environ), tmp_path, "import time; time.sleep(30)", timeout=0.5)
    assert out == "" and why.startswith("timed out")
    t0 = time.monotonic()
    code, seconds, _ = run([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), tmp_path,
                           tmp_path / "x.log", timeout=0.5)
    assert code == TIMED_OUT and seconds < 10 and time.monotonic() - t0 < 10
    assert "stopped at its timeout" in (tmp_path / "x.log").read_text()


def _record(verdict: str, reasons: list[str], speedup: float = 8.5, aa: str = "VALID") -> dict:
    return {"verdict": verdict, "invalid_reasons": reasons, "wall_s": 61.0, "ms_label": "INDICATIVE",
            "aa": {"mean": 1.01, "verdict": aa}, "x2": {"mean": 1.99, "verdict": "VALID"},
            "systems": {"encoder_bert": {"speedup": {"mean": speedup}}}}


def test_the_latency_verdict_is_judged_on_a_gpu_and_said_on_a_cpu() -> None:
    assert gpu_check.judge_latency(_record("VALID", []), "NVIDIA H100 80GB HBM3", "cuda")[0] == "ok"
    assert gpu_check.judge_latency(_record("VALID", [], 3.0), "NVIDIA H100 80GB HBM3", "cuda")[0] == "fail"
    wide = ["encoder_bert speed-up INCONCLUSIVE: CI [7.9, 9.1] is wider than hi/lo 1.10 (1.152); the rounds agree "
            "(max/min 1.02), so the width is the spread between items, which more items narrow: about 64 would do"]
    status, detail = gpu_check.judge_latency(_record("INCONCLUSIVE", wide), "NVIDIA H200", "cuda")
    assert status == "ok" and "A/A 1.010x VALID" in detail and "2x control 1.990x VALID" in detail
    assert gpu_check.judge_latency(_record("INCONCLUSIVE", wide, aa="UNSTABLE"), "NVIDIA H200", "cuda")[0] == "fail"
    spread = ["encoder_bert speed-up UNSTABLE: per-round speed-ups ranged 6.0-9.0x (max/min 1.5 > 1.15)"]
    assert gpu_check.judge_latency(_record("UNSTABLE", spread), "NVIDIA H200", "cuda")[0] == "fail"
    status, detail = gpu_check.judge_latency(_record("UNSTABLE", spread), "cpu", "cpu")
    assert status == "warn" and detail.startswith("UNSTABLE") and "not judged" in detail
    placed = ["fairseq_nat is placed on cpu, but the meter times cuda"]
    assert gpu_check.judge_latency(_record("INVALID", placed), "cpu", "cpu")[0] == "fail"


DRIVER = """
import sys, time
sys.path.insert(0, {scripts!r})
import gpu_check
from gpu_check_proc import run

def fake_step(self, spec, share):  # no model is trained: the first step ends at once, the second hangs
    if spec.group == "env":
        self.info = {{"name": "fake"}}
        return "ok", "fake environment"
    run([sys.executable, "-c", "import time; time.sleep(120)", {marker!r}], self.env, gpu_check.ROOT,
        self.out / "hang.log", 600)
    return "ok", "never"

gpu_check.Check.step = fake_step
gpu_check.prepare_environment = lambda work, data, bundle: {{}}
sys.exit(gpu_check.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_check_killed_part_way_leaves_the_table_of_its_finished_steps(tmp_path: Path, sig: int) -> None:
    marker = f"gpu-check-hang-{os.getpid()}-{sig}"
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(scripts=str(ROOT / "scripts"), marker=marker))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(driver), "--device", "cpu", "--only", "tests,latency",
                             "--budget-s", "600", "--out", str(out), "--work", str(tmp_path / "work")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    summary = out / "summary.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # wait for the *second* step: the environment step also reads "running" for a moment before it ends
        if summary.is_file() and any(r["name"] == "pytest -m gpu" and r["status"] == "running"
                                     for r in json.loads(summary.read_text())["steps"]):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail(f"the check never started its second step: {proc.communicate()[0]}")
    proc.send_signal(sig)
    printed = proc.communicate(timeout=30)[0]
    data = json.loads(summary.read_text())
    steps = {r["name"]: r for r in data["steps"]}
    assert steps["environment"]["status"] == "ok" and steps["environment"]["detail"] == "fake environment"
    assert "ok" in printed and "fake environment" in printed  # the line was printed when the step ended
    assert steps["latency (MIST Table 1, bounded)"]["status"] == "pending"
    assert "| environment | ok |" in (out / "summary.md").read_text()
    if sig == signal.SIGTERM:
        assert data["final"] and steps["pytest -m gpu"]["status"] == "fail"
        assert steps["pytest -m gpu"]["detail"] == "stopped from outside (SIGTERM)"
    else:
        assert not data["final"] and steps["pytest -m gpu"]["status"] == "running"
    # the kernel kills the child when the check dies (PR_SET_PDEATHSIG); on a loaded machine (CI runs two test
    # workers) the kill and exit can take longer than a second, so wait up to 15 s for it to be gone
    deadline = time.monotonic() + 15
    while (alive := [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).endswith(marker)]) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, "the hanging child outlived the check"


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def test_the_verdict_counts_a_step_skipped_for_the_budget_as_no_pass(tmp_path: Path) -> None:
    from gpu_check_table import Row, Table

    table = Table(tmp_path, {"device": "cuda", "budget_s": 360})
    table.rows = [Row("environment", "env", "ok"), Row("run fairseq_cmlm", "runs", "skipped", detail="no libnat")]
    assert table.verdict() == "passed"
    reason = Budget(360.0, 0.0).skip_reason(StepSpec("latency", "latency", 90, 45), 10.0)
    table.rows.append(Row("latency", "latency", "skipped", detail=reason or ""))
    assert table.verdict() == "incomplete, skipped for the budget: latency"
    table.rows.append(Row("training", "training", "fail"))
    table.write(final=True)
    assert json.loads((tmp_path / "summary.json").read_text())["verdict"] == "FAILED: training"
    assert (tmp_path / "summary.md").read_text().startswith("# gpu-check: FAILED: training")


def _sweep(valid: bool, reasons: list[str], rate: float = 1.0, energy: dict | None = None,
           verdict: str | None = None, differ: list[str] | None = None) -> dict:
    cells = [{"system": nm, "batch_size": b, "sentences_per_s": 10.0 * b, "energy": energy or {"status": "x"}}
             for nm in ("fairseq_transformer", "fairseq_nat") for b in (1, 128)]
    return {"valid": valid, "verdict": verdict or ("VALID" if valid else "UNSTABLE"), "invalid_reasons": reasons,
            "sweep": {"cells": cells, "crossover": {"1": {"fairseq_nat": 128}},
                      "agreement": {"fairseq_nat": {"rate": rate}}, "agreement_reasons": differ or []}}


def test_the_sweep_verdict_names_throughput_agreement_and_energy() -> None:
    """#48's GPU sweep step: VALID passes and says sent/s at the largest B; a batched output that differs
    from B = 1's is named; measured energy is shown per cell; canary drift alone only warns on a CPU."""
    status, detail = gpu_check.judge_sweep(_sweep(True, [], energy={"status": "measured", "j_per_sentence": 0.5}),
                                           "cuda")
    assert status == "ok" and "sent/s at B=128: fairseq_transformer 1280, fairseq_nat 1280" in detail
    assert "J/sentence fairseq_transformer@1 0.5" in detail
    differ = ["fairseq_nat: batched outputs differ from B=1 on 3/64 items"]
    status, detail = gpu_check.judge_sweep(_sweep(True, [], rate=61 / 64, differ=differ), "cuda")
    assert status == "fail" and "batched != B=1: fairseq_nat 95%" in detail
    spread = ["threads=1 B=1: fairseq_nat speed-up UNSTABLE: per-round speed-ups ranged 2.0-3.0x"]
    assert gpu_check.judge_sweep(_sweep(False, spread), "cpu")[0] == "warn"
    assert gpu_check.judge_sweep(_sweep(False, spread), "cuda")[0] == "fail"
    unread = {"status": "unreadable: pynvml is not installed"}
    assert "energy unreadable: pynvml" in gpu_check.judge_sweep(_sweep(True, [], energy=unread), "cuda")[1]


@pytest.mark.parametrize("kind", ["latency", "sweep"])
def test_the_timing_steps_run_the_table_shape_and_keep_the_record_they_wrote(tmp_path: Path, kind: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Both timing steps call `bench latency` on SQuAD at paper size with random weights, their own options after
    the shared ones, and judge the newest record of their kind (saved to <out>/<kind>.json); a failed command or
    no record is the step's verdict."""
    calls: list[list[str]] = []
    rec = (_record("VALID", []) if kind == "latency" else _sweep(True, []))

    def fake_run(cmd: list[str], env: dict, cwd: Path, log: Path, timeout: float) -> tuple[int, float, str]:
        calls.append(cmd)
        where = Path(cmd[cmd.index("--results-dir") + 1]) / kind
        where.mkdir(parents=True, exist_ok=True)
        (where / "r.json").write_text(json.dumps(rec))
        return 0, 1.0, ""

    monkeypatch.setattr(gpu_check, "run", fake_run)
    check = gpu_check.Check({}, tmp_path, tmp_path / "work", "cuda", "cuda")
    check.info = {"libnat": True}
    status, _ = getattr(check, kind)(100.0)
    assert status == "ok" and json.loads((tmp_path / f"{kind}.json").read_text()) == rec
    cmd = calls[0]
    assert cmd[4:13] == ["--task", "squad_qg", "--budget", "paper", "--weights", "random", "--baseline",
                         "fairseq_transformer", "--systems"]
    assert cmd[-5:] == ["--record", "--results-dir", str(tmp_path / "work" / "results"), "--device", "cuda"]
    assert ("--batch-sizes" in cmd) == (kind == "sweep") and ("--stand-in" in cmd) == (kind == "latency")
    monkeypatch.setattr(gpu_check, "run", lambda *a, **k: (1, 1.0, "boom"))
    assert getattr(check, kind)(100.0) == ("fail", "boom")
