"""Orderings (``results/ordering/<paper>-table<N>--<group>--<budget>.json``, kind ``ordering``).

``bench order`` (:mod:`bench.workflows.ordering`) tests whether a paper's ranking of its rows survives a
reduced budget and writes one record per column block: the rows with the run ids and outputs sha256 it
was computed over, Kendall's τ-b with its interval, each adjacent pair's paired test and the comparison
with the reference baseline. ``bench table`` prints it and ``--check`` compares its runs with the records,
so it is checked here when it is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.api.names import identifier
from bench.store.files import StoreError, is_number
from bench.store.integrity import ordering_problems
from bench.store.outputs import StoredRecord
from bench.store.paths import ordering_dir, ordering_file
from bench.store.sealed import MAX_RESAMPLES, SealedStore

KIND = "ordering"
#: the fields of an ordering file names are built from: its own file, the runs it names
ORDERING_NAMES = ("paper", "table", "group", "budget", "task", "rows[].run_id", "reference.run_id", "reference.system")
AGAIN = "delete it and run `bench order PAPER:TABLE --budget BUDGET` again"


class OrderingError(StoreError):
    """An ordering record does not follow the schema; the message names the file and the field."""


def _fail(path: Path | str, msg: str) -> OrderingError:
    return OrderingError(
        f"{path}: {msg}. Orderings are written by `bench order PAPER:TABLE --budget BUDGET`; fix this file, or "
        "delete it and run that command again."
    )


def _real(value: Any) -> bool:
    """A number, NaN allowed: τ-b is undefined (NaN) when every reproduced value ties."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reals(value: Any, n: int) -> bool:
    return isinstance(value, list) and len(value) == n and all(_real(v) for v in value)


def validate_ordering(data: Any, path: Path | str = "<ordering>") -> dict[str, Any]:
    """Check the fields the table notes and the staleness check read; returns ``data``."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise _fail(path, f"top level must be a JSON object with 'kind' '{KIND}'")
    for key in ("paper", "table", "group", "budget", "column", "metric"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    samples = data.get("samples")  # `--deep` bootstraps the ordering again with this many resamples
    if samples is not None and not (isinstance(samples, int) and not isinstance(samples, bool)
                                    and 1 <= samples <= MAX_RESAMPLES):
        raise _fail(path, f"'samples' is {samples!r:.40}, not a resample count (a whole number from 1 to "
                          f"{MAX_RESAMPLES:,}; `--deep` resamples that many times)")
    rows = data.get("rows")
    if not isinstance(rows, list) or not rows:
        raise _fail(path, "'rows' must be a non-empty list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("row", "run_id")):
            raise _fail(path, f"'rows[{i}]' must be an object with string 'row' and 'run_id'")
        if not is_number(row.get("reproduced")):
            raise _fail(path, f"'rows[{i}].reproduced' must be a finite number")
        if row.get("reported") is not None and not is_number(row["reported"]):
            raise _fail(path, f"'rows[{i}].reported' must be a number or null")
    tau, ci = data.get("tau_b"), data.get("tau_ci95")
    if (tau is None) != (ci is None) or (tau is not None and not (_real(tau) and _reals(ci, 2))):
        raise _fail(path, "'tau_b' and 'tau_ci95' must both be null, or a number and a two-number interval")
    pairs = data.get("pairs")
    if not isinstance(pairs, list):
        raise _fail(path, "'pairs' must be a list")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, dict) and isinstance(pair.get("higher"), str) and isinstance(pair.get("lower"), str)
                and all(is_number(pair.get(k)) for k in ("reproduced_delta", "p_bootstrap"))):
            raise _fail(path, f"'pairs[{i}]' needs 'higher', 'lower', a number 'reproduced_delta' and 'p_bootstrap'")
    excluded = data.get("excluded", [])
    if not isinstance(excluded, list) or any(
        not (isinstance(e, dict) and isinstance(e.get("row"), str) and isinstance(e.get("why"), str)) for e in excluded
    ):
        raise _fail(path, "'excluded' must be a list of objects with 'row', 'label' and 'why'")
    ref = data.get("reference")
    if ref is not None:
        if not (isinstance(ref, dict) and isinstance(ref.get("system"), str) and isinstance(ref.get("run_id"), str)
                and isinstance(ref.get("rows"), list)):
            raise _fail(path, "'reference' must be null or an object with 'system', 'run_id' and 'rows'")
        for i, r in enumerate(ref["rows"]):
            if not (isinstance(r, dict) and isinstance(r.get("row"), str) and isinstance(r.get("recipe"), str)
                    and all(is_number(r.get(k)) for k in ("reference_value", "delta", "p_bootstrap"))):
                raise _fail(path, f"'reference.rows[{i}]' needs 'row', 'recipe' and number 'reference_value', "
                                  "'delta' and 'p_bootstrap'")
    problems = ordering_problems(data)
    if problems:
        raise STORE.edited(path, problems[0], data)
    return data


class OrderingStore(SealedStore):
    """Orderings through the one sealed path, with their own wording."""

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return _fail(path, msg)

    def named_right(self, results_dir: Path | str, rec: StoredRecord) -> StoredRecord:
        """One column block is one file: an ordering is read only from the file `bench order` names it by
        (:func:`bench.store.paths.ordering_file`: the group, plus the task where the block has its own); a copy
        under another name would be counted twice."""
        if rec.source is None:
            return rec
        names = {ordering_file(results_dir, rec["paper"], rec["table"], block, rec["budget"]).name
                 for block in (rec["group"], *([f"{rec['group']}--{rec['task']}"] if rec.get("task") else []))}
        if Path(rec.source).name not in names:
            own = " or ".join(sorted(names))
            raise self.fail(rec.source, f"holds the ordering of {rec['paper']} table {rec['table']}, group "
                                        f"{rec['group']}, at {rec['budget']}, whose file is {own}: one block is one "
                                        "file. Rename it or delete the copy")
        return rec


def _file(results_dir: Path | str, name: str) -> Path:
    return ordering_dir(results_dir) / f"{identifier(name, 'ordering')}.json"


#: orderings (``results/ordering/*.json``), the store's kind ``ordering``
STORE = OrderingStore(OrderingError, "Ordering", "bench order", AGAIN, "paper", ordering_dir, _file,
                      validate_ordering, names=ORDERING_NAMES, kind=KIND,
                      non_finite=("tau_b", "tau_ci95[]"))  # τ-b is undefined (NaN) when every reproduced value ties


def read_ordering(path: Path | str) -> dict[str, Any]:
    """One ordering file, checked, its seal fitting (or pinned as legacy), knowing its file (``.source``)."""
    return STORE.read(path)


def load_orderings(results_dir: Path | str) -> list[dict[str, Any]]:
    """Every ordering under ``results/ordering/``, checked, in file-name order."""
    out: list[dict[str, Any]] = []
    seen: dict[tuple[Any, ...], Path | str] = {}
    for path in STORE.files(results_dir):
        rec = STORE.read_in(results_dir, path)
        block = tuple(rec.get(k) for k in ("paper", "table", "group", "task", "budget"))
        if block in seen:
            raise _fail(path, f"orders the same block as {seen[block]}: one block is one file; delete the copy")
        seen[block] = path
        out.append(rec)
    return out


def write_ordering(results_dir: Path | str, data: dict[str, Any], group: str) -> Path:
    """Check, then write sealed and atomically to :func:`bench.store.paths.ordering_file` (``group`` names the
    column block: the group's id, plus the task where the block has its own)."""
    STORE.check(data, "<new ordering>")
    return STORE.save(ordering_file(results_dir, data["paper"], data["table"], group, data["budget"]), data)


def remove_ordering(results_dir: Path | str, paper: str, table: str, group: str, budget: str) -> Path | None:
    """Delete an ordering that no longer stands for any runs; its path, or None when there was none."""
    path = ordering_file(results_dir, paper, table, group, budget)
    if not path.is_file():
        return None
    path.unlink()
    return path
