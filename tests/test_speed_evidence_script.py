"""scripts/speed_evidence.sh (`make speed-evidence`): each step runs the tables' own commands in the paired design,
with `bench preflight` printed first as information (a moving machine is named, not skipped); driven by a fake
`bench` that logs its arguments (nothing is timed)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, quiet_steps: int, steps: str, runs: str | None = None
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "calls.log"
    fake = tmp_path / "bench"
    # preflight passes for the first `quiet_steps` calls, then reports a machine that moved (exit 3)
    fake.write_text(f"""#!/usr/bin/env bash
echo "$*" >> {log}
if [ "$1" = preflight ]; then
  n=$(grep -c '^preflight' {log})
  [ "$n" -le {quiet_steps} ] || exit 3
fi
exit 0
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "BENCH": str(fake), "STEPS": steps, "RESULTS": str(tmp_path / "results"),
           **({"RUNS": runs} if runs else {})}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "speed_evidence.sh")], env=env, capture_output=True,
                          text=True, timeout=60)
    return done, log.read_text().splitlines() if log.exists() else []


def test_every_step_runs_after_a_passing_preflight(tmp_path: Path):
    done, calls = _run(tmp_path, quiet_steps=5, steps="t3 sq")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [c.split()[0] for c in calls] == ["preflight", "latency", "preflight", "latency"]
    table, sweep = calls[1], calls[3]
    assert "--task quora" in table and "--stand-in mist_unilm=encoder_bert" in table
    assert "--set fairseq_transformer_ct2.compute_type=int8" in table and "fairseq_transformer_ct2" in table
    assert "fairseq_nat_int8" in table and "encoder_bert_int8" in table  # int8 vs CT2 int8 (#60)
    assert "--x2-control encoder_minilm " in f"{table} "  # not the warm-second-decode int8 twin
    assert "--batch-sizes 1,8,32,128 --threads 1,2" in sweep and "--record" in sweep
    assert f"--results-dir {tmp_path / 'results'}" in sweep


def test_a_moving_machine_is_named_and_still_timed(tmp_path: Path):
    done, calls = _run(tmp_path, quiet_steps=1, steps="t3 t1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [c.split()[0] for c in calls] == ["preflight", "latency", "preflight", "latency"]  # t1 timed all the same
    assert "milliseconds will be INDICATIVE" in done.stdout
    assert "--n 200 --rounds 3" in calls[3]  # enough items for a CI of about ±5 %


def test_an_unknown_step_is_refused(tmp_path: Path):
    done, calls = _run(tmp_path, quiet_steps=5, steps="t9")
    assert done.returncode == 2 and "unknown step t9" in done.stdout and calls == []


def test_the_trained_step_times_the_boards_runs_by_id(tmp_path: Path):
    """`STEPS=tq`: the trained Quora runs, each with its own model (bench latency --runs), no random weights."""
    done, calls = _run(tmp_path, quiet_steps=5, steps="tq")
    assert done.returncode == 0, done.stdout + done.stderr
    timed = calls[1]
    assert "--runs fairseq_transformer--quora--test--cpu--s42--b0395e29," in timed
    assert "--baseline fairseq_transformer" in timed and "--record" in timed
    assert "--weights" not in timed and "--systems" not in timed and "--task" not in timed
    ids = timed.split("--runs ")[1].split()[0].split(",")
    assert len(ids) == len(set(ids)) == 12
    subset = "fairseq_transformer--quora--test--cpu--s42--b0395e29,mist_minilm_l6--quora--test--cpu--s42--63d155f0"
    done, calls = _run(tmp_path / "subset", quiet_steps=5, steps="tq", runs=subset)
    assert done.returncode == 0 and calls[1].split("--runs ")[1].split()[0] == subset  # RUNS=: those runs only


def test_the_trained_queue_makes_exactly_the_runs_the_timing_step_names(tmp_path: Path):
    """scripts/trained_quora.sh: every board run's spec trained (two at a time), its int8 decode, then STEPS=tq; the
    run ids those specs hash to are the ones the timing step names (a run id is its spec's hash)."""
    from bench.runs.spec import RunSpec

    log = tmp_path / "calls.log"
    fake = tmp_path / "bench"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {**os.environ, "BENCH": str(fake), "RESULTS": str(tmp_path / "results")}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "trained_quora.sh")], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    runs = [c for c in calls if c.startswith("run ")]
    assert len(runs) == 12 and all("--task quora --budget cpu" in c and "--force" in c for c in runs)
    made = set()
    for c in runs:
        words = c.split()
        sets = dict(w.split("=", 1) for i, w in enumerate(words) if i and words[i - 1] == "--set")
        made.add(RunSpec(words[words.index("--system") + 1], "quora", budget="cpu",
                         overrides={k: int(v) if v.isdigit() else v for k, v in sets.items()}).run_id)
    timed = next(c for c in calls if c.startswith("latency "))
    assert set(timed.split("--runs ")[1].split()[0].split(",")) == made
    assert all((ROOT / "results" / f"{i}.json").is_file() for i in made if "_int8" not in i)
