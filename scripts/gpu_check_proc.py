"""Child processes for ``scripts/gpu_check.py`` that can never outlive their share of the budget.

A hung step or probe must not take the whole check (and its table) with it: every child gets a
timeout, runs in its own process group so a timeout kills what it started too, and is asked by the
kernel to die with the check (``PR_SET_PDEATHSIG``) if the check itself is killed from outside.
Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: exit code of a child stopped at its timeout (the shell's ``timeout`` uses the same)
TIMED_OUT = 124
_PR_SET_PDEATHSIG = 1
#: the children running now, so a SIGTERM of the check can stop them before it writes its table
_RUNNING: set[subprocess.Popen] = set()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the timeout still holds
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_running() -> None:
    """Stop every child now (the check was told to stop)."""
    for proc in list(_RUNNING):
        _kill_group(proc)


def run(cmd: list[str], env: dict[str, str], cwd: Path, log: Path, timeout: float) -> tuple[int, float, str]:
    """(exit code, seconds, last lines) of ``cmd``; its whole output goes to ``log``. At ``timeout`` the child
    and everything it started are killed and the code is :data:`TIMED_OUT`."""
    t0 = time.perf_counter()
    with log.open("w") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent)
        _RUNNING.add(proc)
        try:
            code = proc.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            code = TIMED_OUT
            fh.write(f"\n[gpu-check] stopped at its timeout of {timeout:.0f} s\n")
        finally:
            _RUNNING.discard(proc)
    tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
    return code, time.perf_counter() - t0, " | ".join(tail)[-300:]


def python(env: dict[str, str], cwd: Path, code: str, timeout: float) -> tuple[str, str]:
    """(stdout, why it failed or '') of ``python -c code``: a timeout or a crash is an answer, never an
    exception, so a hung probe cannot end the check before it writes its table."""
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_die_with_parent)
    _RUNNING.add(proc)
    try:
        out, err = proc.communicate(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        proc.communicate()
        return "", f"timed out after {timeout:.0f} s"
    finally:
        _RUNNING.discard(proc)
    if proc.returncode != 0:
        last = [ln for ln in err.splitlines() if ln.strip()][-1:] or [f"exit {proc.returncode}"]
        return out.strip(), last[0][-300:]
    return out.strip(), ""
