"""A queue file: one `bench run` per line, run by the same launchers as a paper table.

Researchers keep their pending runs as a list of command lines; so does this project (its cpu
evidence runs). Each non-blank, non-comment line holds the options of one `bench run`
(``--system S --task T [--split X] [--budget B] [--seed N] [--set k=v ...] [--limit N]``; a
leading ``bench run`` is allowed). The lines become a plan (:func:`bench.launch.plan.plan_specs`),
so decode-only runs wait for the run that trains their model and complete runs are skipped.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import NoReturn

from bench.api.errors import UserError
from bench.api.reading import read_text
from bench.api.text import clip, clip_repr
from bench.runs import RunSpec, parse_overrides

_TEXT_FIX = "write it as UTF-8 text, one `bench run` option line per run"


class QueueFileError(UserError, ValueError):
    """A line of a queue file that is not a `bench run` command; the message names file and line."""


class _Quiet(argparse.ArgumentParser):
    """A parser that says nothing itself: ``exit_on_error=False`` still prints "bench run: error: ..." and exits for
    missing options (Python 3.11), a stray second line beside the harness's one error line."""

    def error(self, message: str) -> NoReturn:
        raise argparse.ArgumentError(None, message)


def _parser() -> argparse.ArgumentParser:
    p = _Quiet(prog="bench run", add_help=False, exit_on_error=False)
    p.add_argument("--system", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--split", default="test")
    p.add_argument("--budget", default="smoke")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--set", dest="set_", action="append", default=[])
    p.add_argument("--limit", type=int, default=None)
    return p


def _shown(value: object) -> str:
    """A queue line as a message quotes it: cut to 200 characters (a line may be any length)."""
    return clip_repr(value.strip() if isinstance(value, str) else str(value), 200)


def read_queue(path: Path) -> list[RunSpec]:
    """The run specs of a queue file, in file order."""
    if not path.exists() and not path.is_symlink():  # a FIFO, a device or a folder is named by read_text
        raise QueueFileError(f"{path}: no such queue file. Fix: write one `bench run` option line per run.")
    specs: list[RunSpec] = []
    parser = _parser()
    for lineno, raw in enumerate(read_text(path, _TEXT_FIX).splitlines(), 1):
        try:
            words = shlex.split(raw, comments=True)
        except ValueError as exc:
            raise QueueFileError(f"{path}:{lineno}: {exc}: {_shown(raw)}") from None
        if not words:
            continue
        if words[:2] == ["bench", "run"]:
            words = words[2:]
        try:
            args, extra = parser.parse_known_args(words)
        except (argparse.ArgumentError, SystemExit) as exc:
            raise QueueFileError(f"{path}:{lineno}: {exc or 'needs --system and --task'}: {_shown(raw)}. Fix: "
                                 "give the options of one `bench run`, e.g. --system unilm --task squad_qg "
                                 "--budget cpu --limit 2000.") from None
        if extra:
            raise QueueFileError(f"{path}:{lineno}: unknown option(s) {clip(str(extra), 200)} in {_shown(raw)}; a "
                                 "queue line takes --system --task --split --budget --seed --set --limit.")
        try:
            overrides = parse_overrides(args.set_)
        except ValueError as exc:
            raise QueueFileError(f"{path}:{lineno}: {exc}") from None
        specs.append(RunSpec(system=args.system, task=args.task, split=args.split, budget=args.budget,
                             overrides=overrides, seed=args.seed, limit=args.limit))
    if not specs:
        raise QueueFileError(f"{path}: no runs in it (blank and # lines are skipped).")
    return specs
