"""#40's probe: every ``bench`` command, given bad arguments as a new user types them, fails cleanly and
writes nothing.

For each case: exit code 2 (1 where the environment is the problem: a path that cannot be read or
written), no traceback, the name of what was wrong in the message, and ``results/``, ``reports/``, the
caches and the case's own folder byte-identical afterwards. Every command of the typer app must have a
case here: a new command without one fails :func:`test_every_command_is_probed`.

Each case writes (if it wrongly writes at all) inside its own folder: run records to ``WORK/results``,
reports to a copy of ``reports/`` in ``WORK/reports``, exports to ``WORK/out.csv``, the run cache to
``WORK/cache`` (``$BENCH_CACHE``, whose ``splits`` link to the checkout's built splits), so a probe that
finds a bug does not damage the checkout; the checkout's own folders are hashed too.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.data.cache import cache_root

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SPLITS = cache_root()  # where this test process builds splits ($BENCH_CACHE/splits, else <repo>/.cache/splits)

pytestmark = pytest.mark.slow  # about 80 `bench` processes


@dataclass(frozen=True)
class Probe:
    args: tuple[str, ...]  # {work} is the case's folder; see _work for what it holds
    names: str  # what the message must name (whitespace-insensitive)
    codes: tuple[int, ...] = (2,)
    env: tuple[tuple[str, str], ...] = ()  # extra environment ({work} expanded)

    @property
    def id(self) -> str:
        return " ".join(self.args)[:90]


ENV_PROBLEM = (1, 2)  # a path that cannot be read or written: the environment, or the argument naming it
RID = "copy_source--quora--test--cpu--s42--af654a53"  # a record in results/ (show, refile)
UNWRITABLE_CACHE = (("BENCH_CACHE", "{work}/afile/cache"),)  # a cache that cannot be made (root can write a 0555 dir)
RUN = ("run", "--results-dir", "{work}/results")
SMOKE = ("--task", "quora", "--budget", "smoke", "--limit", "5")

PROBES: list[Probe] = [
    # global
    Probe(("--include", "{work}/missing.py", "ls", "tasks"), "missing.py"),
    # ls
    Probe(("ls", "nope"), "nope"),
    Probe(("ls", "runs", "--task", "qoura"), "qoura"),
    Probe(("ls", "runs", "--budget", "huge"), "huge"),
    Probe(("ls", "runs", "--results-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    # data
    Probe(("data", "build", "--task", "qoura"), "qoura"),
    Probe(("data", "verify", "--task", "qoura"), "qoura"),
    Probe(("data", "verify", "--task", "quora", "--data-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    Probe(("data", "show", "--task", "qoura"), "qoura"),
    Probe(("data", "show", "--task", "quora", "--split", "tset"), "tset"),
    Probe(("data", "show", "--task", "quora", "-n", "-1"), "-n"),
    Probe(("data", "show", "--task", "quora"), "afile", ENV_PROBLEM, env=UNWRITABLE_CACHE),
    Probe(("data", "fetch", "--data-dir", "{work}/afile/data"), "afile", ENV_PROBLEM),  # fails before any download
    # run
    Probe((*RUN, "--system", "nope", "--task", "quora"), "nope"),
    Probe((*RUN, "--system", "copy_source", "--task", "qoura"), "qoura"),
    Probe((*RUN, "--system", "copy_source", "--task", "quora", "--budget", "huge"), "huge"),
    Probe((*RUN, "--system", "copy_source", "--task", "quora", "--split", "tset"), "tset"),
    Probe((*RUN, "--system", "copy_source", *SMOKE, "--device", "gpu0"), "gpu0"),
    Probe((*RUN, "--system", "unilm", *SMOKE, "--set", "nosuch=1"), "nosuch"),
    Probe((*RUN, "--system", "copy_source", "--task", "quora", "--limit", "-1"), "--limit"),
    Probe((*RUN, "--system", "copy_source", "--task", "quora", "--limit", "0"), "--limit"),
    Probe((*RUN, "--system", "unilm", *SMOKE, "--set", "steps=-5"), "steps"),
    Probe((*RUN, "--system", "unilm", *SMOKE, "--set", "batch_size=0"), "batch_size"),
    Probe((*RUN, "--system", "unilm", *SMOKE, "--set", "lr=0"), "lr"),
    Probe((*RUN, "--system", "copy_source", *SMOKE, "--threads", "0"), "--threads"),
    Probe((*RUN, "--system", "copy_source", *SMOKE, "--latency-n", "-1"), "--latency-n"),
    Probe((*RUN, "--system", "copy_source", *SMOKE, "--data-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    Probe(("run", "--system", "copy_source", *SMOKE, "--results-dir", "{work}/afile/results"), "afile", ENV_PROBLEM),
    Probe((*RUN, "--system", "copy_source", *SMOKE), "afile", ENV_PROBLEM, env=UNWRITABLE_CACHE),
    # submit
    Probe(("submit", "--name", "copy_source", "--task", "quora", "--hyp", "{work}/hyp.txt", "--results-dir",
           "{work}/results"), "copy_source"),
    Probe(("submit", "--name", "mine", "--task", "qoura", "--hyp", "{work}/hyp.txt", "--results-dir",
           "{work}/results"), "qoura"),
    Probe(("submit", "--name", "mine", "--task", "quora", "--hyp", "{work}/missing.txt", "--results-dir",
           "{work}/results"), "missing.txt", ENV_PROBLEM),
    Probe(("submit", "--name", "mine", "--task", "quora", "--hyp", "{work}/adir", "--results-dir",
           "{work}/results"), "adir", ENV_PROBLEM),
    Probe(("submit", "--name", "mine", "--task", "quora", "--hyp", "{work}/hyp.txt", "--paper", "mist:99",
           "--results-dir", "{work}/results"), "99"),
    # score
    Probe(("score", "--task", "quora", "--recipe", "mist-quora", "--all-recipes", "--hyp", "{work}/hyp.txt"),
          "--all-recipes"),
    Probe(("score", "--task", "quora", "--ref", "{work}/hyp.txt", "--recipe", "mist-quora", "--hyp",
           "{work}/hyp.txt"), "--ref"),
    Probe(("score", "--ref", "{work}/hyp.txt", "--recipe", "mist-quora", "--limit", "2", "--hyp", "{work}/hyp.txt"),
          "--limit"),
    Probe(("score", "--task", "quora", "--key", "{work}/hyp.txt", "--hyp", "{work}/hyp.txt"), "--key"),
    Probe(("score", "--task", "qoura", "--hyp", "{work}/hyp.txt"), "qoura"),
    Probe(("score", "--task", "quora", "--recipe", "nope", "--hyp", "{work}/hyp.txt"), "nope"),
    Probe(("score", "--task", "quora", "--hyp", "{work}/missing.txt"), "missing.txt", ENV_PROBLEM),
    Probe(("score", "--task", "quora", "--hyp", "{work}/binary.txt"), "binary.txt", ENV_PROBLEM),
    Probe(("score", "--task", "quora", "--limit", "0", "--hyp", "{work}/hyp.txt"), "--limit"),
    # compare
    Probe(("compare", "{work}/missing_a.txt", "{work}/hyp.txt", "--task", "quora"), "missing_a", ENV_PROBLEM),
    Probe(("compare", "nope-a", "nope-b"), "nope-a"),
    Probe(("compare", "{work}/hyp.txt", "{work}/hyp.txt", "--task", "qoura"), "qoura"),
    # show
    Probe(("show", "no-such-run"), "no-such-run"),
    Probe(("show", "{work}/missing.json"), "missing.json"),
    Probe(("show", RID, "-n", "-1"), "-n"),
    Probe(("show", RID, "--results-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    # export
    Probe(("export", "--format", "xls", "--out", "{work}/out.xls"), "xls"),
    Probe(("export", "--results-dir", "{work}/missing", "--out", "{work}/out.csv"), "missing", ENV_PROBLEM),
    Probe(("export", "--out", "{work}/adir"), "adir", ENV_PROBLEM),
    Probe(("export", "--out", "{work}/afile/out.csv"), "afile", ENV_PROBLEM),
    Probe(("export", "--task", "qoura", "--out", "{work}/out.csv"), "qoura"),
    # leaderboard (and its alias board)
    Probe(("leaderboard", "qoura"), "qoura"),
    Probe(("leaderboard", "quora", "--budget", "huge"), "huge"),  # the checkout's records, none at "huge"
    Probe(("leaderboard", "quora", "--results-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    Probe(("board", "qoura"), "qoura"),
    # table
    Probe(("table", "--results-dir", "{work}/missing", "--reports-dir", "{work}/reports"), "missing", ENV_PROBLEM),
    Probe(("table", "--check", "--results-dir", "{work}/missing", "--reports-dir", "{work}/reports"), "missing",
          ENV_PROBLEM),
    Probe(("table", "--paper", "nope"), "nope"),
    Probe(("table", "--table", "3", "--reports-dir", "{work}/reports"), "--table"),
    Probe(("table", "--paper", "mist", "--table", "99"), "99"),
    # reproduce
    Probe(("reproduce", "nope:1", "--results-dir", "{work}/results"), "nope"),
    Probe(("reproduce", "mist:99", "--results-dir", "{work}/results"), "99"),
    Probe(("reproduce", "mist:1", "--budget", "huge", "--dry-run", "--results-dir", "{work}/results"), "huge"),
    Probe(("reproduce", "mist:6", "--jobs", "2", "--results-dir", "{work}/results"), "--jobs"),
    Probe(("reproduce", "mist:6", "--budget", "smoke", "--launcher", "local", "--jobs", "64", "--threads-per-job",
           "64", "--dry-run", "--results-dir", "{work}/results"), "--jobs 64"),
    Probe(("reproduce", "mist:6", "--budget", "smoke", "--launcher", "local", "--jobs", "0", "--dry-run",
           "--results-dir", "{work}/results"), "--jobs 0"),
    Probe(("reproduce", "mist:6", "--budget", "smoke", "--launcher", "slurm", "--gpus", "-1", "--dry-run",
           "--results-dir", "{work}/results"), "--gpus"),
    Probe(("reproduce", "mist:6", "--launcher", "cluster"), "cluster"),
    # queue
    Probe(("queue", "{work}/missing.txt", "--results-dir", "{work}/results"), "missing.txt", ENV_PROBLEM),
    Probe(("queue", "{work}/adir", "--results-dir", "{work}/results"), "adir", ENV_PROBLEM),
    Probe(("queue", "{work}/queue.txt", "--dry-run", "--results-dir", "{work}/results"), "nope"),
    Probe(("queue", "{work}/hyp.txt", "--launcher", "inline", "--results-dir", "{work}/results"), "inline"),
    Probe(("queue", "{work}/good_queue.txt", "--jobs", "64", "--threads-per-job", "64", "--dry-run",
           "--results-dir", "{work}/results"), "--jobs 64"),
    # status
    Probe(("status", "mist:99"), "99"),
    Probe(("status", "mist:1", "--budget", "huge"), "huge"),
    # calibrate
    Probe(("calibrate", "--system", "nope", "--task", "quora", "--lr", "1e-3", "--steps", "10", "--results-dir",
           "{work}/results"), "nope"),
    Probe(("calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "x", "--steps", "10",
           "--results-dir", "{work}/results"), "--lr"),
    Probe(("calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "-1", "--steps", "10",
           "--results-dir", "{work}/results"), "lr"),
    Probe(("calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "1e-3", "--steps", "0",
           "--results-dir", "{work}/results"), "steps"),
    Probe(("calibrate", "--system", "encoder_minilm_l6", "--task", "quora", "--lr", "1e-3", "--steps", "10",
           "--dev", "0", "--results-dir", "{work}/results"), "--dev"),
    # order
    Probe(("order", "mist:nine", "--results-dir", "{work}/results"), "nine"),
    Probe(("order", "mist:3", "--budget", "huge", "--results-dir", "{work}/results"), "huge"),
    Probe(("order", "mist:3", "--samples", "0", "--results-dir", "{work}/results"), "--samples"),
    # rescore
    Probe(("rescore", "nope", "--results-dir", "{work}/results"), "nope"),
    Probe(("rescore", "--results-dir", "{work}/missing"), "missing", ENV_PROBLEM),
    # promote (a committed run is not in the workspace; the workspace of these cases is empty)
    Probe(("promote", "nope", "--from", "{work}/results"), "nope"),
    Probe(("promote", RID, "--from", "{work}/results"), RID),
    Probe(("promote", RID, "--from", "{work}/missing"), "missing", ENV_PROBLEM),
    # refile
    Probe(("refile", "nope", "--results-dir", "{work}/results"), "nope"),
    Probe(("refile", RID, "--set", "noequals", "--results-dir", "{work}/results"), "noequals"),
    # latency
    Probe(("preflight", "--seconds", "0"), "--seconds"),
    Probe(("preflight", "--windows", "1"), "--windows"),
    Probe(("preflight", "--threads", "0", "--quiet-gate", "-1"), "--threads"),
    Probe(("preflight", "--device", "gpu9"), "gpu9"),
    Probe(("latency", "--task", "quora", "--systems", "nope"), "nope"),
    Probe(("latency", "--task", "qoura", "--systems", "copy_source"), "qoura"),
    Probe(("latency", "--task", "quora", "--systems", "copy_source", "--weights", "fake"), "fake"),
    Probe(("latency", "--task", "quora", "--systems", "copy_source", "--n", "0"), "--n"),
    Probe(("latency", "--task", "quora", "--systems", "copy_source", "--precision", "fp3"), "fp3"),
    Probe(("latency", "--task", "quora", "--systems", "copy_source", "--min-duration-s", "-1"), "--min-duration-s"),
    Probe(("latency", "--task", "quora", "--systems", "copy_source", "--warmup-items", "-1"), "--warmup-items"),
    # fetch (nothing here reaches the network: every case fails before)
    Probe(("fetch", "--system", "nope", "--dry-run"), "nope"),
    Probe(("fetch", "--system", "unilm", "--budget", "huge", "--dry-run"), "huge"),
    Probe(("fetch", "--set", "model=x", "--dry-run"), "--set"),
    Probe(("fetch", "--paper", "nope", "--table", "1", "--dry-run"), "nope"),
    # validate
    Probe(("validate", "--data-dir", "{work}/missing"), "missing", (1,)),
]


def _work(tmp_path: Path) -> Path:
    """The case's folder: a 3-line hypothesis file, a file and a folder to misuse as paths, bytes that are
    not UTF-8, a queue file with an unknown system and a good one, an empty results folder, a copy of
    reports/ and the cache."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "hyp.txt").write_text("a question ?\nanother one ?\na third ?\n")
    (work / "afile").write_text("a file where a folder is expected\n")
    (work / "adir").mkdir()
    (work / "results").mkdir()  # an empty results folder: records would go here
    (work / "binary.txt").write_bytes(b"\xff\xfe\x00bad\n" * 3)
    (work / "queue.txt").write_text("--system nope --task quora --budget smoke\n")
    (work / "good_queue.txt").write_text("--system copy_source --task quora --budget smoke --limit 5\n")
    shutil.copytree(REPO / "reports", work / "reports")
    (work / "cache").mkdir()
    if SPLITS.is_dir():  # hard links: the case's own view of the built splits, immune to other workers' builds
        shutil.copytree(SPLITS, work / "cache" / "splits", copy_function=os.link)
    return work


def _tree(root: Path, content: bool = True, sizes_under: Path | None = None) -> dict[str, object]:
    """Every entry under ``root`` (links not followed): a file's sha256 (or size and mtime, always under
    ``sizes_under``), a link's target."""
    out: dict[str, object] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in sorted(dirnames + filenames):
            path = base / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir", path.stat().st_mode)
            elif content and (sizes_under is None or sizes_under not in path.parents):
                out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
            else:
                st = path.stat()
                out[rel] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def _state(work: Path) -> dict[str, object]:
    return {
        "results/": _tree(REPO / "results"),
        "reports/": _tree(REPO / "reports"),
        ".cache/launch": _tree(REPO / ".cache" / "launch"),
        # the case's cache holds its own links to the built splits (400 MB: a write changes a size or mtime)
        "the case's folder": _tree(work, sizes_under=work / "cache" / "splits"),
    }


@pytest.fixture(scope="module", autouse=True)
def _built_splits() -> None:
    """Build the probed tasks' splits first (seconds), so no case depends on whether another test did."""
    if DATA.is_dir():
        from bench.data import TASKS, load_split

        for task in ("quora", "squad_qg"):
            for split in TASKS.get(task).splits:
                load_split(task, split)


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_bad_input_fails_cleanly_and_writes_nothing(probe: Probe, tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    work = _work(tmp_path)
    args = [a.replace("{work}", str(work)) for a in probe.args]
    env = {**os.environ, "BENCH_CACHE": str(work / "cache"), "COLUMNS": "400", "HOME": str(tmp_path / "home")}
    env.pop("BENCH_INCLUDE", None)
    env.update({k: v.replace("{work}", str(work)) for k, v in probe.env})
    before = _state(work)
    proc = subprocess.run([sys.executable, "-m", "bench", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    flat = " ".join(out.split())
    assert "Traceback" not in out, out[-3000:]
    assert proc.returncode in probe.codes, f"exit {proc.returncode}, expected {probe.codes}:\n{out[-3000:]}"
    assert probe.names in flat, f"the message does not name {probe.names!r}:\n{out[-3000:]}"
    after = _state(work)
    changed = {where: sorted(set(before[where].items()) ^ set(after[where].items()))[:5]  # type: ignore[attr-defined]
               for where in before if before[where] != after[where]}
    assert not changed, f"written: {changed}"


def test_every_command_is_probed() -> None:
    """A command added to the app without a probe case fails here."""
    from typer.main import get_command

    from bench.cli import app

    def paths(cmd: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [prefix]
        return [p for name, sub in subs.items() for p in paths(sub, (*prefix, name))]

    commands = paths(get_command(app))
    assert len(commands) >= 20
    probed = {p.args[: len(c)] for p in PROBES for c in commands if p.args[: len(c)] == c}
    assert [c for c in commands if c not in probed] == []
