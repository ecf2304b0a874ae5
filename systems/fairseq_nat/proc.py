"""Run a fairseq command-line tool as a subprocess, streaming its log line by line.

Training runs out of process so a crash or kill leaves fairseq's own resumable checkpoints, and
the harness process never needs fairseq's global state (argparse registries, logging config).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


class FairseqToolError(RuntimeError):
    """A fairseq tool exited non-zero; the message names the command, its log and the last lines."""


def tool_argv(tool: str, args: Sequence[str]) -> list[str]:
    """``fairseq-<tool>`` through the current interpreter (no PATH lookup, same venv)."""
    return [sys.executable, "-m", f"fairseq_cli.{tool}", *args]


def run_tool(
    tool: str,
    args: Sequence[str],
    log_path: Path,
    on_line: Callable[[str], None] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> None:
    """Run ``fairseq-<tool> args``; append its output to ``log_path``; call ``on_line`` per line. The child's
    thread pools follow this process's OpenMP/MKL variables (a system's ``threads``: systems.presets.using_threads)."""
    argv = tool_argv(tool, args)
    env = dict(os.environ)
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)  # only ever granted explicitly via extra_env
    env.update({"PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8"})
    env.update(extra_env or {})
    log_path.parent.mkdir(parents=True, exist_ok=True)
    tail: list[str] = []
    with log_path.open("a", encoding="utf-8") as log:
        log.write("$ " + " ".join(argv) + "\n")
        log.flush()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                tail = (tail + [line.rstrip("\n")])[-15:]
                if on_line is not None:
                    on_line(line.rstrip("\n"))
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        rc = proc.wait()
    if rc != 0:
        last = "\n".join(tail)
        raise FairseqToolError(
            f"fairseq-{tool} exited with status {rc} (full log: {log_path}).\n"
            f"Command: {' '.join(argv)}\nLast lines:\n{last}"
        )
