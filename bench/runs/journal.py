"""Decoding a split in journaled chunks: a progress bar, and a killed run resumes where it stopped.

A paper-budget decode (11,877 SQuAD questions, beam 5, BERT-Large) takes hours; losing it to a
kill, a reboot or a full disk is the expensive failure. The harness therefore hands the system
chunks of examples and appends every finished chunk to a JSONL journal beside the model; a re-run of
the same spec at the same harness commit reads the journal back and decodes only the rest.

Chunks follow source length (stable, short first), the order every batch decoder here sorts into
anyway, and hold a multiple of every preset's decode batch size, so batches pad as little as in one
whole-split call. The journal's first line is its key (run id, split hash, harness commit); a
journal with another key is stale and is started over. A torn last line (a kill mid-write) is cut
off and that chunk decoded again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api.atomic import write_text_atomic

#: examples per chunk: a multiple of every decode batch size in the presets (16, 32, 64, 128)
CHUNK = 128
JOURNAL_VERSION = 1


@dataclass(frozen=True)
class Decoded:
    """The outputs in input order, decode seconds summed over every session, examples read back."""

    outputs: list[str]
    seconds: float
    resumed: int


def decode_in_chunks(
    decode: Callable[[list[Any]], list[str]],
    examples: Sequence[Any],
    journal: Path,
    key: Mapping[str, Any],
    *,
    chunk: int = CHUNK,
    who: str = "decode",
    progress: Any = None,
    say: Callable[[str], None] = print,
) -> Decoded:
    """``decode`` over ``examples`` chunk by chunk, journaled in ``journal`` under ``key``.

    ``who``: the decoder's name for errors. ``progress``: a rich Console to draw a bar on (None: no
    bar). The caller removes the journal once the outputs are safely written.
    """
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].source))
    header = {"journal": JOURNAL_VERSION, **key, "n": len(examples)}
    done, seconds = _read(journal, header, [examples[i].id for i in order], say)
    resumed = len(done)
    if resumed == 0:
        write_text_atomic(journal, json.dumps(header, sort_keys=True) + "\n")
    elif resumed < len(examples):
        say(f"[decode] resuming: {resumed:,} of {len(examples):,} examples read back from {journal}")
    with _Bar(progress, len(examples), resumed) as bar, journal.open("a", encoding="utf-8") as fh:
        for start in range(resumed, len(order), chunk):
            idx = order[start : start + chunk]
            t0 = time.perf_counter()
            outs = list(decode([examples[i] for i in idx]))
            took = time.perf_counter() - t0
            if len(outs) != len(idx):
                raise RuntimeError(f"{who} returned {len(outs)} outputs for a chunk of {len(idx)} examples.")
            entry = {"pos": start, "ids": [examples[i].id for i in idx], "outputs": outs, "seconds": took}
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
            done.extend(outs)
            seconds += took
            bar.advance(len(idx))
    outputs = [""] * len(examples)
    for pos, text in enumerate(done):
        outputs[order[pos]] = text
    return Decoded(outputs, seconds, resumed)


def _read(journal: Path, header: dict[str, Any], ids: list[str], say: Callable[[str], None]) -> tuple[list[str], float]:
    """The outputs (in chunk order) and seconds of the journal's valid prefix; ([], 0) when none.

    Reading stops at the first line that does not continue the prefix exactly (torn, out of order,
    other examples); the file is cut there so that appends continue a clean journal.
    """
    if not journal.is_file():
        return [], 0.0
    with journal.open("rb") as fh:
        first = fh.readline()
        try:
            found = json.loads(first)
        except (ValueError, RecursionError):  # torn, not UTF-8, or nested too deep
            found = None
        if found != json.loads(json.dumps(header)):
            say(f"[decode] {journal} was written for another run, split or harness commit; starting over")
            return [], 0.0
        done: list[str] = []
        seconds = 0.0
        good = fh.tell()
        for line in fh:
            entry = _entry(line)
            at = len(done)
            if entry is None or entry["pos"] != at or entry["ids"] != ids[at : at + len(entry["ids"])]:
                break
            done.extend(entry["outputs"])
            seconds += float(entry["seconds"])
            good = fh.tell()
    if good < journal.stat().st_size:
        os.truncate(journal, good)
    return done, seconds


def _entry(line: bytes) -> dict[str, Any] | None:
    """A well-formed chunk entry, or None (a torn or foreign line)."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("pos"), int):
        return None
    ids, outs = entry.get("ids"), entry.get("outputs")
    if not (isinstance(ids, list) and isinstance(outs, list) and ids and len(ids) == len(outs)):
        return None
    if not all(isinstance(o, str) for o in outs) or not isinstance(entry.get("seconds"), int | float):
        return None
    return entry


class _Bar:
    """A rich progress bar over examples (no-op without a console)."""

    def __init__(self, console: Any, total: int, completed: int) -> None:
        self._console, self._total, self._completed = console, total, completed
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Bar:
        if self._console is not None and self._completed < self._total:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("decode"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), console=self._console, transient=False,
            )
            self._progress.start()
            self._task = self._progress.add_task("decode", total=self._total, completed=self._completed)
        return self

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
