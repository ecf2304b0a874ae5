"""Every run record as a pandas DataFrame, for notebooks, exports and plots.

One row per (record, recipe): the spec (system, task, split, budget, seed, limit, overrides as
JSON), what ran (family, backbone, precision), every metric of the recipe (``bleu4``, ...) with
its 95 % CI bounds (``bleu4_ci_low``/``bleu4_ci_high``), the scorer signature, timings, the output
statistics (``out_*``), the harness SHA and the environment. :func:`wide` pivots it to one row
per record with ``recipe/metric`` columns.

Records are read by :func:`bench.store.records.load_records`, the one reader of the record
format (the tables use it too). pandas is imported only here.

    import bench.report.frame
    df = bench.report.frame.load("results")
    df[df.recipe == "mist-quora"].plot.scatter(x="fit_s", y="bleu4")
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.paths import RESULTS_DIR

ID_COLUMNS = ["run_id", "system", "task", "split", "budget", "seed", "limit", "overrides"]


def _rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    spec, info = rec["spec"], rec.get("system") or {}
    cfg = info.get("config") or {}
    train: dict[str, Any] = cfg["train"] if isinstance(cfg.get("train"), dict) else {}
    env, data = rec.get("environment") or {}, rec.get("data") or {}
    stats, timings = rec.get("output_stats") or {}, rec.get("timings") or {}
    base = {
        "run_id": rec["run_id"],
        "system": spec["system"],
        "task": spec["task"],
        "split": spec["split"],
        "budget": spec["budget"],
        "seed": spec.get("seed"),
        "limit": spec.get("limit"),
        "overrides": json.dumps(spec.get("overrides") or {}, sort_keys=True),
        "kind": rec.get("kind", "run"),  # run | external (bench submit)
        "results_dir": _folder(rec),  # results (committed) or the workspace (.cache/results): where it is
        "family": info.get("family"),
        "backbone": info.get("backbone"),
        "precision": train.get("precision"),
        "train_threads": train.get("threads"),
        "n_examples": data.get("n_examples"),
        "partial": bool(data.get("partial")),
        "harness_sha": (rec.get("harness") or {}).get("git_sha"),
        "harness_dirty": (rec.get("harness") or {}).get("dirty"),
        "cpu": env.get("cpu_model") or env.get("cpu"),
        "torch": env.get("torch"),
        "created": rec.get("created"),
        **{f"{k}": v for k, v in timings.items()},
        **{f"out_{k}": v for k, v in stats.items() if k != "most_frequent"},
        "out_most_frequent": stats.get("most_frequent"),
    }
    rows = []
    for recipe, sc in sorted((rec.get("scores") or {}).items()):
        row = {**base, "recipe": recipe, "signature": sc.get("signature"), "n_items": sc.get("n_items")}
        for metric, value in sorted(sc.get("metrics", {}).items()):
            lo, hi = (sc.get("ci") or {}).get(metric, (None, None))
            row.update({metric: value, f"{metric}_ci_low": lo, f"{metric}_ci_high": hi})
        rows.append(row)
    return rows or [{**base, "recipe": None, "signature": None, "n_items": None}]


def _folder(rec: dict[str, Any]) -> str | None:
    from bench.runs.paths import display_path

    source = getattr(rec, "source", None)
    return display_path(Path(source).parent) if source is not None else None


def load(results_dir: Path | str = RESULTS_DIR) -> Any:
    """One row per (record, recipe) of the complete records under ``results_dir`` (which must exist: a
    typo'd folder is an error, not an empty table)."""
    from bench.store.records import load_records, require_dir

    return from_records(load_records(require_dir(results_dir)))


def load_folders(where: Any) -> Any:
    """:func:`load` of several folders (:class:`bench.runs.folders.Folders`: the workspace, then the committed
    results; a run id in both is the workspace's)."""
    from bench.runs.folders import load_all

    return from_records(load_all(where))


def from_records(records: Iterable[dict[str, Any]]) -> Any:
    """One row per (record, recipe) of ``records``, sorted by run id and recipe."""
    import pandas as pd

    rows = [row for rec in records for row in _rows(rec)]
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    return df.sort_values(["run_id", "recipe"], na_position="last").reset_index(drop=True)


def wide(df: Any) -> Any:
    """One row per record, metric columns named ``recipe/metric`` (CI bounds dropped)."""
    import pandas as pd

    if df.empty:
        return df
    per_record = [c for c in df.columns if c in set(ID_COLUMNS) or not _is_score_column(c, df)]
    per_record = [c for c in per_record if c not in ("recipe", "signature", "n_items")]
    meta = df[per_record].drop_duplicates("run_id").set_index("run_id")
    metrics = [c for c in df.columns if _is_score_column(c, df) and not c.endswith(("_ci_low", "_ci_high"))]
    parts = []
    for recipe, block in df.dropna(subset=["recipe"]).groupby("recipe"):
        cols = [m for m in metrics if block[m].notna().any()]
        parts.append(block.set_index("run_id")[cols].rename(columns={m: f"{recipe}/{m}" for m in cols}))
    return pd.concat([meta, *parts], axis=1).reset_index()


def _is_score_column(col: str, df: Any) -> bool:
    """Metric columns are the ones a recipe filled: numeric, and absent on rows without a recipe."""
    base = col.removesuffix("_ci_low").removesuffix("_ci_high")
    return base in _metric_names(df)


def _metric_names(df: Any) -> set[str]:
    """Every metric has CI-bound columns beside it (also in a frame read back from CSV/Parquet)."""
    return {c.removesuffix("_ci_low") for c in df.columns if c.endswith("_ci_low")}


class FilterError(UserError, ValueError):
    """A ``--task``/``--system``/``--budget`` filter that names nothing known (a typo gave 0 rows, exit 0)."""


def filtered(df: Any, task: str | None = None, system: str | None = None, budget: str | None = None) -> Any:
    """The rows of ``df`` that match every filter given; a name neither registered nor recorded is a
    :class:`FilterError` with the closest known name, not an empty table."""
    for col, want in (("task", task), ("system", system), ("budget", budget)):
        if want is not None:
            recorded = set(df[col]) if col in df.columns else set()
            check_filter(col, want, recorded | set(_registered(col)))
            df = df[df[col] == want] if col in df.columns else df
    return df.reset_index(drop=True)


def _registered(col: str) -> list[str]:
    """Names the harness knows for a filter column, recorded or not."""
    if col == "task":
        from bench.data import TASKS

        return TASKS.names()
    if col == "system":
        from systems import SYSTEMS

        return SYSTEMS.names()
    from bench.papers import BUDGETS

    return [*BUDGETS, "external"]  # external: `bench submit` records


def check_filter(kind: str, name: str, known: Iterable[str]) -> None:
    """``name`` must be one of ``known``; else one line with the closest match (as the registries say it)."""
    from bench.api.registry import unknown_message

    names = set(known)
    if name not in names:
        raise FilterError(unknown_message(kind, name, names))


#: --format -> how pandas writes it to a path
_WRITERS = {
    "csv": lambda df, path: df.to_csv(path, index=False),
    "parquet": lambda df, path: df.to_parquet(path, index=False),
    "jsonl": lambda df, path: df.to_json(path, orient="records", lines=True, force_ascii=False),
}


#: what a spreadsheet takes for the start of a formula (OWASP's CSV injection list): a text cell starting so is
#: written with a leading ``'``, so ``=HYPERLINK(...)`` in an output or a ``--meta`` value stays text
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralised(value: Any) -> Any:
    """``value`` made safe for a spreadsheet cell: a string starting with :data:`FORMULA_START` gets a leading
    ``'``; numbers (a negative score) and everything else are kept as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def spreadsheet_safe(df: Any) -> Any:
    """``df`` with every text cell :func:`neutralised` (a copy; numeric columns untouched)."""
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_object_dtype(out[col]) or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(neutralised)
    return out.rename(columns={c: neutralised(c) for c in out.columns if isinstance(c, str)})


def export(df: Any, out: Path, fmt: str) -> Path:
    """Write ``df`` as csv | parquet | jsonl, atomically (:func:`bench.api.atomic.atomic_path`: no half-written
    file, and no temporary one left behind when the write fails, e.g. ``--out`` names a directory). CSV and
    Parquet (both opened by spreadsheets) get :func:`spreadsheet_safe` cells; JSON lines keep the text as is."""
    from bench.api.atomic import atomic_path

    if fmt not in _WRITERS:
        raise ValueError(f"--format {fmt!r}: choose csv, parquet or jsonl")
    out = Path(out)
    with atomic_path(out) as tmp:
        _WRITERS[fmt](spreadsheet_safe(df) if fmt in ("csv", "parquet") else df, tmp)
    return out
