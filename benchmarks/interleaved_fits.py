"""Several ``fit``s in one process, one update at a time, in an order shuffled per round (``bench_training.py``).

Why: this benchmark runs on shared 2-core machines, where a neighbour's job can make one minute twice as slow as
the next. Two fits run one after the other compare two different minutes; here every setting's update ``i`` runs
in the same round as every other setting's update ``i`` (each fit in its own thread, and only the thread holding
the baton runs), so a slow minute slows all of them alike and the ratio of their step times is paired, with a
bootstrap CI over the rounds (:func:`bench.api.speed_policy.speedup`, the probe's own statistic).

Each fit's update is timed from the moment it gets the baton to its trainer's ``on_step`` (the trainer is wrapped
for threads of this module only). Its first turn also builds the system, loads weights and, under
``precision=auto``, runs the training speed probe: the first ``warm`` updates are not counted, nor the last (it
saves the final checkpoint).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass
class Fit:
    """One setting's fit, run in its own thread when the baton comes."""

    name: str
    run: Callable[[], dict[str, Any]]  # builds and fits the system; returns what it recorded (config.train)
    times: list[float] = field(default_factory=list)  # seconds of each update, in order
    result: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    finished: bool = False

    def __post_init__(self) -> None:
        self.go, self.done = threading.Event(), threading.Event()
        self.started = 0.0

    def _wait_turn(self) -> None:
        self.go.wait()
        self.go.clear()
        self.started = time.perf_counter()

    def step_done(self) -> None:
        """Called in this fit's thread after each update: time it, hand the baton back, wait for the next turn."""
        self.times.append(time.perf_counter() - self.started)
        self.done.set()
        self._wait_turn()

    def main(self) -> None:
        self._wait_turn()
        try:
            self.result = self.run()
        except BaseException as exc:  # reported by run_interleaved in the main thread
            self.error = exc
        finally:
            self.finished = True
            self.done.set()


_BY_THREAD: dict[int, Fit] = {}


@contextlib.contextmanager
def _wrapped_trainer() -> Iterator[None]:
    """While the fits run, every Trainer built in a fit's thread calls :meth:`Fit.step_done` after each update, and
    shows no progress bar (one live display per process); the Trainer is restored afterwards."""
    from systems.training import trainer

    original = trainer.Trainer.__init__

    def init(self: Any, cfg: Any, workdir: Any, on_step: Any = None) -> None:
        fit = _BY_THREAD.get(threading.get_ident())
        if fit is None:
            original(self, cfg, workdir, on_step)
            return

        def hook(done: int, loss: float) -> None:
            if on_step is not None:
                on_step(done, loss)
            fit.step_done()

        original(self, replace(cfg, progress=False), workdir, hook)

    trainer.Trainer.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        trainer.Trainer.__init__ = original  # type: ignore[method-assign]


def run_interleaved(fits: list[Fit], seed: int = 0) -> None:
    """Run ``fits`` to the end, one update per fit per round, in an order shuffled per round (seeded)."""
    with _wrapped_trainer():
        threads = []
        for fit in fits:
            t = threading.Thread(target=fit.main, name=f"fit:{fit.name}", daemon=True)
            t.start()
            assert t.ident is not None
            _BY_THREAD[t.ident] = fit
            threads.append(t)
        rng = random.Random(seed)
        active = list(fits)
        while active:
            order = list(active)
            rng.shuffle(order)
            for fit in order:
                fit.done.clear()
                fit.go.set()
                fit.done.wait()
            active = [f for f in active if not f.finished]
        for t in threads:
            t.join()
            _BY_THREAD.pop(t.ident or 0, None)
    for fit in fits:
        if fit.error is not None:
            raise RuntimeError(f"fit {fit.name!r} failed: {fit.error!r}") from fit.error


def timed(fit: Fit, warm: int) -> list[float]:
    """The updates that count: after the first ``warm``, without the last (the final checkpoint's save)."""
    return fit.times[warm:-1]
