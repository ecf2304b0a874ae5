"""The short Python API a notebook or script uses, reached as ``bench.<name>`` (``bench/__init__.py`` loads this
module on first use, so ``import bench`` and ``bench --help`` stay instant). Each function is the library side
of one command; the names are documented in docs/commands.md ("Python API") and a test holds that every one
still imports, so a refactor of the packages below does not break users' code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the names ``bench`` exposes lazily (and documents); tests/test_public_api.py imports each
PUBLIC = ("load_results", "load_split", "compare", "run")


def load_results(results_dir: Path | str | None = None, *, wide: bool = False) -> Any:
    """Every run record as a pandas DataFrame, one row per (record, recipe), as `bench export` writes it: your
    workspace's runs and the committed ones (column ``results_dir`` says which), or ``results_dir`` alone;
    ``wide``: one row per record with ``recipe/metric`` columns (:mod:`bench.report.frame`)."""
    from bench.report import frame
    from bench.runs.folders import folders

    df = frame.load_folders(folders(results_dir))
    return frame.wide(df) if wide else df


def load_split(task: str, split: str = "test", data_dir: Path | str | None = None) -> Any:
    """One split of a task (:class:`bench.api.types.Split`), built and cached from the raw data on first use."""
    from bench.data import load_split as load

    return load(task, split, data_dir=data_dir)


def compare(a: str, b: str, recipe: str | None = None, *, results_dir: Path | str | None = None,
            data_dir: Path | str | None = None, use_cache: bool = True) -> dict[str, Any]:
    """Paired significance of two recorded runs (run ids or the short ids the pages show) on the same examples:
    exactly what `bench compare A B --json` prints, from the same cache (``$BENCH_CACHE/compare``; ``use_cache``
    False: ``--no-cache``). Per metric ``a``, ``b``, ``delta`` (a − b), its 95% CI ``ci95_a_minus_b``,
    ``p_bootstrap`` and ``p_ar``; ``identical``: outputs byte-identical. ``recipe``: the task's first default."""
    from bench.runs.lookup import compare_runs

    data = Path(data_dir) if data_dir is not None else None
    return compare_runs(a, b, [recipe] if recipe else None, results_dir=results_dir, data_dir=data,
                        use_cache=use_cache).results[0]


def run(system: str, task: str, budget: str = "smoke", *, split: str | None = None, seed: int = 42,
        overrides: dict[str, Any] | None = None, limit: int | None = None, stand_in: bool = False,
        results_dir: Path | str | None = None, data_dir: Path | str | None = None,
        force: bool = False) -> dict[str, Any]:
    """Train (or load), decode, score and record one run, as `bench run` does (the same defaults: smoke budget,
    the task's default test split, the training split and cpu stand-in resolved the same way, the record written
    to your workspace unless ``results_dir``, a run the committed results hold not run again); returns the
    record. ``force``: run again even where a complete record exists (`bench run --force`)."""
    from bench.data import default_eval_split
    from bench.runs.folders import folders
    from bench.runs.pipeline import execute
    from bench.runs.resolve import check_weights_here, with_training_split
    from bench.runs.spec import RunSpec

    data = Path(data_dir) if data_dir is not None else None
    spec = RunSpec(system=system, task=task, split=split or default_eval_split(task, data), budget=budget,
                   overrides=dict(overrides or {}), seed=seed, limit=limit)
    spec = with_training_split(check_weights_here(spec, use_stand_in=stand_in), data)
    where = folders(results_dir)
    return execute(spec, results_dir=where.write, data_dir=data, done_in=where.read[1:], force=force)
