"""Progress display for long measurements that does not disturb the clock.

rich's default live display redraws from a background thread, which would compete with the
system being timed for the GIL and the CPU. Here redraws happen only between items, and at most a
few times per second, so the display's cost never lands inside a timed window.
"""

from __future__ import annotations

import time
from typing import Any

_REDRAW_S = 0.5


class MeterProgress:
    """A warm-up bar and a timing bar; every method is a cheap no-op when disabled."""

    def __init__(self, enabled: bool = True, console: Any = None) -> None:
        self.enabled = enabled
        self._console = console
        self._progress: Any = None
        self._task: Any = None
        self._last = 0.0
        self.started = False  # whether the timing bar exists (extra rounds extend it)

    def __enter__(self) -> MeterProgress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                auto_refresh=False, console=self._console, transient=False,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.refresh()
            self._progress.stop()

    def start_warmup(self, name: str, items: int) -> None:
        if self._progress is not None:
            self._task = self._progress.add_task(f"warm-up {name}", total=items)
            self._progress.refresh()

    def warmup_tick(self, count: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=count)
            self._maybe_refresh()

    def start_timing(self, total: int) -> None:
        self.started = True
        if self._progress is not None:
            self._task = self._progress.add_task("timing", total=total)
            self._progress.refresh()

    def extend(self, extra: int) -> None:
        if self._progress is not None:
            task = self._progress.tasks[-1]
            self._progress.update(self._task, total=(task.total or 0) + extra)

    def describe(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=text)
            self._maybe_refresh()

    def tick(self, text: str) -> None:
        """One timing done: say what it was and advance."""
        if self._progress is not None:
            self._progress.update(self._task, description=text)
            self._progress.advance(self._task)
            self._maybe_refresh()

    def advance(self) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)
            self._maybe_refresh()

    def _maybe_refresh(self) -> None:
        now = time.monotonic()
        if now - self._last >= _REDRAW_S:
            self._last = now
            self._progress.refresh()
