"""Where the checkout, its results and its caches are: computed once, here, for every layer."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from bench.api.errors import UserError

#: the checkout root (the directory holding ``bench/`` and ``systems/``)
REPO_ROOT = Path(__file__).resolve().parents[2]
#: the committed evidence: run records a maintainer chose to keep (``--results-dir results``, ``bench promote``);
#: the boards under reports/ are built from it alone
RESULTS_DIR = REPO_ROOT / "results"
#: moves every cache (splits, checkpoints, fairseq binaries, decode journals) elsewhere
CACHE_ENV = "BENCH_CACHE"
#: moves the workspace, where a user's runs land when no ``--results-dir`` is given
WORKSPACE_ENV = "BENCH_RESULTS"


def repo_root() -> Path:
    """The checkout root; a function so tests and plugins read one place."""
    return REPO_ROOT


def cache_root() -> Path:
    """Checkpoints, split caches and resumable state live outside results/ (not committed): ``$BENCH_CACHE``,
    else ``<repo>/.cache``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else REPO_ROOT / ".cache"


class PathLoop(UserError, ValueError):
    """A path that cannot be resolved because a symbolic link on it leads back to itself (``a -> b -> a``)."""


def resolved(path: Path | str, what: str = "path") -> Path:
    """``path`` made absolute with its links resolved, as ``Path.resolve`` (non-strict); a symbolic-link loop on it
    is :class:`PathLoop` naming ``what`` and the path (Python 3.11 raises ``RuntimeError`` there, 3.13 ``OSError``:
    one line either way, never a traceback)."""
    try:
        return Path(path).expanduser().resolve()
    except (RuntimeError, OSError) as exc:
        if isinstance(exc, RuntimeError) and not str(exc).startswith("Symlink loop"):
            raise
        if isinstance(exc, OSError) and exc.errno != errno.ELOOP:
            raise
        raise PathLoop(f"{what} {path}: a symbolic link on it leads back to itself (a link loop). Fix: point "
                       f"{what} at a real folder, or remove the loop (`ls -l {path}`).") from None
def workspace_dir() -> Path:
    """Where runs are written when no results folder is named: ``$BENCH_RESULTS``, else ``<cache root>/results``
    (``.cache/results``, git-ignored). A user's first runs (smoke models, degenerate by design) never land in the
    committed ``results/``; writing there is an explicit choice (docs/commands.md, "Where runs go")."""
    env = os.environ.get(WORKSPACE_ENV)
    return Path(env).expanduser() if env else cache_root() / "results"
