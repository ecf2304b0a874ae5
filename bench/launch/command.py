"""The ``bench run`` command line of one job, and the environment its process needs.

Why a child command and not a function call: a job is then exactly what a person would type to
re-run it (the log's first line says it), it runs under the same Python wherever it is started
(a local child, a SLURM node), and a crash or kill of one run never takes the launcher down.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.runs import RunSpec


def _value(v: Any) -> str:
    """An override as `--set` reads it back (:func:`bench.runs.parse_overrides` parses JSON literals)."""
    import json

    if isinstance(v, str):
        try:
            json.loads(v)
        except json.JSONDecodeError:
            return v  # read back as the same string
    return json.dumps(v)  # a string like "3" or "true" stays a string: quoted


def bench_argv(spec: RunSpec, *, results_dir: Path, threads: int | None = None,
               data_dir: Path | None = None, device: str | None = None) -> list[str]:
    """``python -m bench run ...`` for ``spec``, with absolute paths (a job may start in another cwd);
    ``device``: the launcher's ``--device``, resolved by each job where it runs (a SLURM node's GPU); the
    default (None or ``auto``) is left out of the line, as a person re-running the job would leave it."""
    argv = [sys.executable, "-m", "bench", "run", "--system", spec.system, "--task", spec.task,
            "--split", spec.split, "--budget", spec.budget, "--seed", str(spec.seed)]
    for key, value in sorted(spec.overrides.items()):
        argv += ["--set", f"{key}={_value(value)}"]
    if spec.limit is not None:
        argv += ["--limit", str(spec.limit)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    if device not in (None, "auto"):
        argv += ["--device", device]
    argv += ["--results-dir", str(Path(results_dir).resolve())]
    if data_dir is not None:
        argv += ["--data-dir", str(Path(data_dir).resolve())]
    return argv


def include_paths() -> list[str]:
    """Every plugin path this process knows (``--include`` and ``$BENCH_INCLUDE``), resolved."""
    from bench.env.plugins import include_paths_from_env, included

    paths: list[str] = []
    for path in [*included(), *include_paths_from_env()]:
        text = str(Path(path).expanduser().resolve())
        if text not in paths:
            paths.append(text)
    return paths


def child_env(threads: int | None = None) -> dict[str, str]:
    """What a job's process adds to the inherited environment: the plugins (``--include`` is not
    inherited, so it travels as ``$BENCH_INCLUDE``), unbuffered output (the log shows the current
    step), a wide console (messages stay on one line) and the thread pools' size."""
    env = {"PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    paths = include_paths()
    if paths:
        env["BENCH_INCLUDE"] = os.pathsep.join(paths)
    if threads is not None:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env


def merged_env(extra: Mapping[str, str]) -> dict[str, str]:
    return {**os.environ, **extra}
