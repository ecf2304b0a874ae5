"""``ScoringSession``: one METEOR JVM and per-item caches shared by every recipe and run in a session.

METEOR's start-up (~15 s, the paraphrase table) is paid once per session. Requests are queued on
one worker thread that owns the JVM, so the caller can compute BLEU/ROUGE (Python, other core)
while Java aligns; identical (hypothesis, references) items are sent to Java only once, however
many recipes or runs ask for them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from bench.scoring.errors import ScoringError
from bench.scoring.meteor import MeteorProcess


class MeteorFuture:
    """Statistics lines for a list of SCORE lines, resolved from the session's batch futures."""

    def __init__(self, parts: list[tuple[Future, int]]) -> None:
        self._parts = parts

    def result(self) -> list[str]:
        return [fut.result()[i] for fut, i in self._parts]


class ScoringSession:
    """Context manager owning one METEOR process (started lazily) and the per-item caches."""

    def __init__(self, java: str | None = None) -> None:
        self._java = java
        self._meteor: MeteorProcess | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._known: dict[str, tuple[Future, int]] = {}
        self._lock = threading.Lock()
        self.bleu_cache: dict[tuple[str, tuple[str, ...]], dict] = {}
        self.rouge_cache: dict[tuple[str, tuple[str, ...]], float] = {}
        #: references cooked once per session (`bench compare` scores two outputs against the same ones)
        self.refs_cache: dict[tuple[str, ...], tuple] = {}
        self.meteor_lines_sent = 0
        self._closed = False

    def __enter__(self) -> ScoringSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def meteor_starts(self) -> int:
        """JVMs launched so far (1 in a healthy session that used METEOR)."""
        return self._meteor.starts if self._meteor else 0

    def _process(self) -> MeteorProcess:
        if self._closed:
            raise ScoringError("This ScoringSession is closed; open a new one.")
        if self._meteor is None:
            self._meteor = MeteorProcess(java=self._java)
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="meteor")
        return self._meteor

    def start_meteor(self) -> None:
        """Launch the JVM now (non-blocking) so its start-up overlaps other work."""
        self._process().start()

    def meteor_async(self, lines: Sequence[str]) -> MeteorFuture:
        """Queue SCORE lines; lines already sent in this session are not sent again."""
        proc = self._process()
        with self._lock:
            new = list(dict.fromkeys(ln for ln in lines if ln not in self._known))
            if new:
                proc.start()
                assert self._pool is not None
                fut = self._pool.submit(proc.stats, new)
                for i, ln in enumerate(new):
                    self._known[ln] = (fut, i)
                self.meteor_lines_sent += len(new)
            parts = [self._known[ln] for ln in lines]
        return MeteorFuture(parts)

    def forget_failed(self) -> None:
        """Drop queued lines whose batch failed, so a later call retries them."""
        with self._lock:
            self._known = {k: v for k, v in self._known.items()
                           if not (v[0].done() and v[0].exception() is not None)}

    def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._meteor is not None:
            self._meteor.close()
