"""Where the checkout, its results and its caches are: computed once, here, for every layer."""

from __future__ import annotations

import os
from pathlib import Path

#: the checkout root (the directory holding ``bench/`` and ``systems/``)
REPO_ROOT = Path(__file__).resolve().parents[2]
#: the one default results folder: every command and library function that takes ``results_dir`` defaults to it
RESULTS_DIR = REPO_ROOT / "results"
#: moves every cache (splits, checkpoints, fairseq binaries, decode journals) elsewhere
CACHE_ENV = "BENCH_CACHE"


def repo_root() -> Path:
    """The checkout root; a function so tests and plugins read one place."""
    return REPO_ROOT


def cache_root() -> Path:
    """Checkpoints, split caches and resumable state live outside results/ (not committed): ``$BENCH_CACHE``,
    else ``<repo>/.cache``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else REPO_ROOT / ".cache"
