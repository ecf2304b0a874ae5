"""One long-lived METEOR 1.5 process (pycocoevalcap's jar and command line) and its statistics.

pycocoevalcap starts a JVM per ``Meteor()`` (~15 s to load the paraphrase table) and throws away
the per-item sufficient statistics. Here one process serves a whole scoring session: items are
streamed through ``SCORE ||| ref1 ||| ... ||| hyp`` lines exactly as pycocoevalcap writes them, and
the returned 23-number statistics lines are kept so the corpus score (pooled statistics, as the
jar's ``EVAL`` computes it) and bootstrap resamples can be computed from them without more Java.
``corpus_score`` reimplements ``MeteorStats.addStats`` + ``MeteorScorer.computeMetrics`` for the
``-l en`` defaults; a test checks it against the jar's own ``EVAL`` answer.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from bench.scoring.errors import ToolFailedError, ToolMissingError

# MeteorConfiguration defaults for "-l en" (task "rank"): alpha beta gamma delta; module weights for
# exact, stem, synonym, paraphrase.
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
WEIGHTS = (1.0, 0.6, 0.8, 0.6)
N_STATS = 23  # MeteorStats.STATS_LENGTH: 4 lengths, 4 modules x 4 match counts, chunks, 2 word matches

#: seconds a JVM may take to start and answer (it loads a paraphrase table: ~15 s, minutes on a loaded node),
#: plus seconds per item (a few ms each): a ``java`` that never answers is stopped, not waited on for ever
TIMEOUT_ENV = "BENCH_METEOR_TIMEOUT"
BASE_TIMEOUT_S = 600.0
PER_ITEM_S = 0.1


def time_limit(n_items: int) -> float:
    """Seconds allowed for ``n_items`` lines: ``$BENCH_METEOR_TIMEOUT`` (else 600) plus 0.1 s per item."""
    import os

    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        base = float(raw) if raw.strip() else BASE_TIMEOUT_S
    except ValueError:
        raise ToolFailedError(f"${TIMEOUT_ENV}={raw!r}: not a number of seconds. Fix: e.g. "
                              f"{TIMEOUT_ENV}=1200, or unset it.") from None
    return max(base, 0.0) + PER_ITEM_S * n_items


def meteor_jar() -> Path:
    """The jar shipped by pycocoevalcap (next to ``data/paraphrase-en.gz``)."""
    try:
        import pycocoevalcap.meteor.meteor as mod
    except ImportError:
        raise ToolMissingError("pycocoevalcap is not installed. Fix: pip install pycocoevalcap==1.2") from None
    jar = Path(mod.__file__).resolve().parent / "meteor-1.5.jar"
    if not jar.is_file():
        raise ToolMissingError(f"METEOR jar not found at {jar}. Fix: pip install --force-reinstall "
                               "pycocoevalcap==1.2")
    para = jar.parent / "data" / "paraphrase-en.gz"
    if not para.is_file():
        raise ToolMissingError(f"METEOR paraphrase table not found at {para} (the jar would die with "
                               "'file not found'). Fix: pip install --force-reinstall pycocoevalcap==1.2")
    return jar


def score_line(hyp: str, refs: Sequence[str]) -> str:
    """The exact line pycocoevalcap's ``Meteor._stat`` writes (its one hypothesis clean-up kept)."""
    hyp = hyp.replace("|||", "").replace("  ", " ")
    return " ||| ".join(("SCORE", " ||| ".join(refs), hyp))


class MeteorProcess:
    """A METEOR ``-stdio`` JVM; ``stats`` streams lines through it, restarting it once if it dies."""

    def __init__(self, java: str | None = None, jar: Path | None = None) -> None:
        java_path = java or shutil.which("java")
        if not java_path:
            raise ToolMissingError("METEOR needs Java, but no 'java' is on PATH. Fix: install a Java "
                                   "runtime >= 8 (Debian/Ubuntu: apt-get install default-jre-headless).")
        self.jar = jar or meteor_jar()
        self.cmd = [java_path, "-jar", "-Xmx2G", self.jar.name, "-", "-", "-stdio", "-l", "en", "-norm"]
        self._proc: subprocess.Popen[bytes] | None = None
        self._err: IO[bytes] | None = None
        self._lock = threading.Lock()
        self.starts = 0  # how many JVMs this object launched (1 unless one died)
        self.java = java_path

    def start(self) -> None:
        """Launch the JVM without waiting for it; its table loads while the caller does other work."""
        if self._proc is not None and self._proc.poll() is None:
            return
        self._err = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(self.cmd, cwd=self.jar.parent, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._err)
        self.starts += 1

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if self._err is not None:
            self._err.close()
            self._err = None

    def _stderr_tail(self) -> str:
        if self._err is None:
            return ""
        self._err.seek(0)
        return self._err.read().decode("utf-8", "replace")[-3000:].strip()

    def stats(self, lines: Sequence[str]) -> list[str]:
        """Statistics line for every ``SCORE`` line, in order. Retries once on a dead JVM."""
        out: list[str] = []
        with self._lock:
            for attempt in (1, 2):
                self.start()
                try:
                    self._stream(lines[len(out):], out)
                    return out
                except _TimedOut as late:
                    self.close()
                    raise ToolFailedError(
                        f"METEOR ({self.java} -jar {self.jar}) gave {len(out)} of {len(lines)} answers in "
                        f"{late.seconds:.0f} s and was stopped: Java hangs, or the machine is overloaded. Fix: "
                        f"check that `{self.java} -version` answers, or allow more time with ${TIMEOUT_ENV} "
                        f"(seconds; now {late.seconds - PER_ITEM_S * len(lines[len(out):]):.0f} + "
                        f"{PER_ITEM_S} per item)."
                    ) from None
                except _Died as died:
                    err = self._stderr_tail()
                    self.close()
                    if attempt == 2:
                        raise ToolFailedError(
                            f"METEOR (java -jar {self.jar}) died twice ({died}) after "
                            f"{len(out)} of {len(lines)} items. Its stderr:\n{err or '(empty)'}\n"
                            "Fix: check Java memory (-Xmx2G needs 2 GB free) and the input line above."
                        ) from None
        return out

    def _stream(self, lines: Sequence[str], out: list[str]) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        failed: list[BaseException] = []

        def write() -> None:
            try:
                for line in lines:
                    proc.stdin.write(line.encode("utf-8") + b"\n")  # type: ignore[union-attr]
                proc.stdin.flush()  # type: ignore[union-attr]
            except (BrokenPipeError, OSError, ValueError) as exc:
                failed.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        limit = time_limit(len(lines))
        late = threading.Event()

        def stop() -> None:  # the watchdog: a JVM that never answers is killed, which ends readline below
            late.set()
            proc.kill()

        watchdog = threading.Timer(limit, stop)
        watchdog.daemon = True
        watchdog.start()
        try:
            for line in lines:
                raw = proc.stdout.readline()
                if late.is_set():
                    raise _TimedOut(limit)
                if not raw:
                    try:
                        code = proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        code = None
                    raise _Died(f"its output ended; exit code {code}")
                text = raw.decode("utf-8", "replace").strip()
                if len(text.split()) != N_STATS:
                    raise _Died(f"unparseable answer {text[:200]!r} to input {line[:200]!r}")
                out.append(text)
        finally:
            watchdog.cancel()
            if failed or len(out) < len(lines):
                proc.kill()  # unblocks the writer
            writer.join()


class _Died(Exception):
    pass


class _TimedOut(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer in {seconds:.0f} s")
        self.seconds = seconds


def parse_stats(lines: Sequence[str]) -> np.ndarray:
    """N x 23 float matrix from METEOR statistics lines."""
    arr = np.array([[float(x) for x in ln.split()] for ln in lines], dtype=np.float64)
    return arr.reshape(len(lines), N_STATS)


def chunk_column(stats: np.ndarray) -> np.ndarray:
    """Chunks as ``addStats`` pools them: an item aligned perfectly in one chunk adds 0 chunks."""
    test_total, ref_total = _totals(stats)
    perfect = (test_total == stats[:, 0]) & (ref_total == stats[:, 1]) & (stats[:, 20] == 1.0)
    return np.where(perfect, 0.0, stats[:, 20])


def _totals(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    test_total = np.zeros(s.shape[:-1])
    ref_total = np.zeros(s.shape[:-1])
    for m in range(4):  # same summation order as MeteorStats(String)
        base = 4 + 4 * m
        test_total = test_total + s[..., base]
        ref_total = ref_total + s[..., base + 1]
        test_total = test_total + s[..., base + 2]
        ref_total = ref_total + s[..., base + 3]
    return test_total, ref_total


def scores_from_stats(s: np.ndarray) -> np.ndarray:
    """``MeteorScorer.computeMetrics`` vectorised over rows of (pooled) statistics (Java float rules)."""
    s = np.atleast_2d(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        tl, rl, tf, rf = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        twl = DELTA * (tl - tf) + (1.0 - DELTA) * tf
        rwl = DELTA * (rl - rf) + (1.0 - DELTA) * rf
        twm = np.zeros(len(s))
        rwm = np.zeros(len(s))
        for m in range(4):
            twm = twm + s[:, 4 + 4 * m] * WEIGHTS[m] * DELTA
        for m in range(4):
            rwm = rwm + s[:, 5 + 4 * m] * WEIGHTS[m] * DELTA
        for m in range(4):
            twm = twm + s[:, 6 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
        for m in range(4):
            rwm = rwm + s[:, 7 + 4 * m] * WEIGHTS[m] * (1.0 - DELTA)
        p = twm / twl
        r = rwm / rwl
        fmean = 1.0 / (((1.0 - ALPHA) / p) + (ALPHA / r))
        test_total, ref_total = _totals(s)
        chunks = s[:, 20]
        perfect = (test_total == tl) & (ref_total == rl) & (chunks == 1.0)
        frag = np.where(perfect, 0.0, chunks / ((s[:, 21] + s[:, 22]) / 2))
        pen = GAMMA * np.power(frag, BETA)
        score = fmean * (1.0 - pen)
    return np.where(np.isnan(score), 0.0, np.maximum(score, 0.0))


def pooled(stats: np.ndarray) -> np.ndarray:
    """Per-item statistics with the chunk column replaced by its pooled contribution (see addStats)."""
    out = stats.copy()
    out[:, 20] = chunk_column(stats)
    return out


def corpus_score(stats: np.ndarray) -> float:
    """The jar's ``EVAL`` answer: computeMetrics on statistics pooled with addStats' chunk rule."""
    total = np.zeros(N_STATS)
    for row in pooled(stats):  # sequential sum in item order, as addStats does
        total = total + row
    return float(scores_from_stats(total)[0])
