"""Where the checkout, its results and its caches are: computed once, here, for every layer."""

from __future__ import annotations

import os
from pathlib import Path

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


def workspace_dir() -> Path:
    """Where runs are written when no results folder is named: ``$BENCH_RESULTS``, else ``<cache root>/results``
    (``.cache/results``, git-ignored). A user's first runs (smoke models, degenerate by design) never land in the
    committed ``results/``; writing there is an explicit choice (docs/commands.md, "Where runs go")."""
    env = os.environ.get(WORKSPACE_ENV)
    return Path(env).expanduser() if env else cache_root() / "results"
