"""Which code made a run: the harness version and git commit, whether the tree was dirty, and a hash of the
uncommitted diff (what a resumed decode must share with the session that started it)."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from typing import Any

from bench.api.paths import REPO_ROOT
from bench.version import __version__

#: what runs write, not code: a run that re-records (``--force``) a committed record must not make the
#: next run in the same worktree look "dirty" (the flag says whether the *code* differs from the commit)
DATA_PATHSPECS = (":(exclude)results", ":(exclude)reports")


def harness_info() -> dict[str, Any]:
    """Version and git SHA of the harness, with a dirty flag (uncommitted changes to the code)."""
    sha, dirty = "unknown", None
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *DATA_PATHSPECS],
            cwd=REPO_ROOT, capture_output=True, text=True, check=True,
        ).stdout
        dirty = bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"version": __version__, "git_sha": sha, "dirty": dirty}


def code_state(harness: Mapping[str, Any]) -> dict[str, Any]:
    """The harness commit, plus a hash of the uncommitted diff when the tree is dirty: what a
    resumed decode must share with the session that started it."""
    state = {"git_sha": harness.get("git_sha"), "dirty": harness.get("dirty")}
    if harness.get("dirty"):
        try:
            diff = subprocess.run(["git", "diff", "HEAD", "--no-color", "--", ".", *DATA_PATHSPECS],
                                  cwd=REPO_ROOT, capture_output=True, check=True).stdout
            state["diff_sha256"] = hashlib.sha256(diff).hexdigest()
        except (OSError, subprocess.CalledProcessError):
            state["diff_sha256"] = None
    return state
