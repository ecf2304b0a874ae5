"""One sealed-record store: how every kind of record under results/ is written, read back and refused (#57).

Why one: each kind of record (run, submission, calibration summary and point, latency, sweep, ordering, the
leaderboards' p-values) is a claim the pages print as facts. Each used to bring its own reader, and each reader
its own hole (a name pasted into a path, a deleted digest read as "legacy", a range nobody checked). Here
there is one path, and a kind is a :class:`SealedStore` value that plugs into it:

1. the file is read by the one JSON reader (:func:`bench.store.files.read_json`), inside its results folder
   (a link out of the folder is refused);
2. every name a path is built from (:attr:`SealedStore.names`) is checked against the one identifier rule
   (:mod:`bench.api.names`) before any path is built from it;
3. the rules every kind shares (:func:`shared_problem`: a ``created`` is a timestamp, a resample count and a seed
   are whole numbers in range and no number is NaN or infinite, wherever they stand), then the kind's validator
   checks the schema, the types and the ranges (it names the field), then a kind whose id is derived from its
   content is held to it (:attr:`SealedStore.identity`, :mod:`bench.store.ids`);
4. the seal: the digest fits the content, or the record has none and its content is pinned as legacy
   (:func:`bench.store.integrity.digest_problem`, :mod:`bench.store.legacy`).

Writers run steps 2 and 3, then seal and write atomically. The registry of kinds is
:mod:`bench.store.kinds`; no module of the store reads a results JSON another way (a test holds that).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.api.errors import UserError
from bench.api.names import identifier_problem
from bench.store.files import StoreError, json_files, read_json, write_json
from bench.store.integrity import Problem, digest_problem, sealed, unsealed
from bench.store.outputs import StoredRecord


@dataclass(frozen=True)
class SealedStore:
    """A kind of sealed record: its error, its wording, where it lives, its validator and its name fields."""

    error: type[StoreError]
    name: str  # "Latency", "Sweep"
    command: str  # the command that writes such a record, named in every error
    again: str | Callable[[Mapping[str, Any]], str]  # what to do when a record was edited ("measure again")
    id_field: str
    folder: Callable[[Path | str], Path]
    file: Callable[[Path | str, str], Path]
    validate: Callable[[Any, Path | str], Any]
    #: the fields a file name may be built from, each an identifier: ``a.b``, ``a[].b`` (each item of a list),
    #: ``a{}`` (each key of an object); absent or null ones are the validator's to require
    names: tuple[str, ...] = ()
    #: the registry's name of the kind (:mod:`bench.store.kinds`)
    kind: str = ""
    #: the record's id names its file (``<run_id>.json``): a file in its folder under another name is refused,
    #: so one id is one file (a copy under a new name would be counted twice, and `show ID` would miss it)
    id_names_file: bool = False
    #: the number fields that may be NaN (undefined; field specs as :attr:`names`); every other number is finite
    non_finite: tuple[str, ...] = ()
    #: the id the record's content gives it (:mod:`bench.store.ids`; None: the record has none to check), held against
    #: its :attr:`id_field` after the validator: an id is how a record is found and linked, so a record whose spec was
    #: edited under its old id (resealed) is not the record its id names
    identity: Callable[[Mapping[str, Any]], str | None] | None = None

    def fail(self, path: Path | str, msg: str) -> StoreError:
        return self.error(f"{path}: {msg}. {self.name} records are written by `{self.command}`; "
                          "fix or delete this file.")

    def redo(self, rec: Mapping[str, Any] | None = None) -> str:
        """What to do instead of restoring an edited record (the command that makes it again)."""
        return self.again if isinstance(self.again, str) else self.again(rec or {})

    def edited(self, path: Path | str, problem: Problem, rec: Mapping[str, Any] | None = None) -> StoreError:
        return self.error(
            f"{path}: {problem}; the record is not as `{self.command}` wrote it (edited or damaged), so no number "
            f"of it is shown. Restore it (`git checkout -- {path}` if it is committed) or {self.redo(rec)}."
        )

    # ------------------------------------------------------------------ reading
    def check(self, data: Any, path: Path | str) -> Any:
        """Steps 2 and 3: every name field against the identifier rule (first: a name that climbs out is named as
        such, whatever else is wrong), then the kind's validator; returns what the validator returns. A validator
        tripped by a field of the wrong JSON type is one line naming the file, never a traceback."""
        for field, value in name_values(data, self.names):
            problem = identifier_problem(value)
            if problem is not None:
                raise self.fail(path, f"'{field}' {problem}")
        shared = shared_problem(data, self.non_finite)
        if shared is not None:
            raise self.fail(path, shared)
        try:
            rec = self.validate(data, path)
            own = self.identity(rec) if self.identity is not None and isinstance(rec, Mapping) else None
        except UserError:
            raise
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError) as exc:
            raise self.fail(path, f"a field has the wrong JSON type or shape ({type(exc).__name__}: "
                                  f"{str(exc)[:200]})") from None
        if own is not None and rec.get(self.id_field) != own:
            raise self.edited(path, Problem(self.id_field, f"is {str(rec.get(self.id_field))[:120]!r}, but what the "
                                                           f"record says it is gives the id {own!r} (an id is its "
                                                           "content's: a spec edited under an old id is not the "
                                                           "record that id names)"), rec)
        return rec

    def raw(self, path: Path | str) -> Any:
        """The parsed JSON of ``path`` (step 1), nothing checked yet."""
        return read_json(path, self.fail)

    def consistent(self, rec: Any, path: Path | str) -> None:
        """A kind's checks of its record against files beside it (a run record's outputs), after its validator
        and before its seal: an edited number is named by its field first. None by default."""

    def accept(self, data: Any, path: Path | str) -> StoredRecord:
        """Steps 2 to 4 on a parsed file: the record without its digest, knowing its file."""
        rec = self.check(data, path)
        self.consistent(rec, path)
        problem = digest_problem(data) if isinstance(data, Mapping) else None
        if problem is not None:
            raise self.edited(path, problem, data if isinstance(data, Mapping) else None)
        return StoredRecord(unsealed(rec), path)

    def read(self, path: Path | str) -> StoredRecord:
        """One record file, checked, its seal fitting (or its content pinned as legacy), bearing the name its id
        gives it (:meth:`named_right`: a record read by its path is held to the rule its folder's loader applies,
        so ``read_summary(copy)`` cannot pass off one sweep under another's name); returned without its digest
        (the file's seal, made again by the writer) and knowing its file (``.source``)."""
        return self.named_right(Path(path).parent, self.accept(self.raw(path), path))

    def read_in(self, results_dir: Path | str, path: Path | str) -> StoredRecord:
        """:meth:`read` of a file kept in ``results_dir``, whose name must be the one its id gives it
        (:attr:`id_names_file`)."""
        return self.named_right(results_dir, self.read(path))

    def named_right(self, results_dir: Path | str, rec: StoredRecord) -> StoredRecord:
        """``rec`` (read from ``rec.source`` in ``results_dir``) if its file bears the name its id gives it (only the
        name is compared: ``results_dir`` may be any folder)."""
        if self.id_names_file and rec.source is not None:
            own = self.file(results_dir, str(rec[self.id_field])).name
            if Path(rec.source).name != own:
                raise self.fail(rec.source, f"holds {self.id_field} '{rec[self.id_field]}', whose file is {own}: "
                                            "one id is one file (a copy under another name would be counted twice)."
                                            f" Rename it to {own} or delete the copy")
        return rec

    def files(self, results_dir: Path | str) -> list[Path]:
        """The kind's JSON files in ``results_dir`` (none there: []), each checked to stay inside its folder."""
        folder = self.own_folder(results_dir)
        return [self.inside(folder, path) for path in json_files(folder)]

    def own_folder(self, results_dir: Path | str) -> Path:
        """The kind's folder in ``results_dir``, refused when it is a link out of ``results_dir`` (a committed
        ``results/calibration`` linked to another folder would have its records read, and the writer's files
        written, outside the results folder)."""
        folder = self.folder(results_dir)
        real, root = Path(os.path.realpath(folder)), Path(os.path.realpath(results_dir))
        if Path(folder) != Path(results_dir) and folder.is_symlink() and not real.is_relative_to(root):
            raise self.fail(folder, f"is a link out of the results folder {results_dir} (to {real}); records are read "
                                    "and written only inside it. Replace the link by the folder")
        return folder

    def inside(self, folder: Path | str, path: Path) -> Path:
        """``path`` if it (links resolved) stays inside ``folder``, else the kind's error naming the link."""
        if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder)):
            raise self.fail(path, f"is a link out of its folder {folder} (to {os.path.realpath(path)}); a record is "
                                  "read only inside its results folder. Replace the link by the file")
        return path

    def path_of(self, results_dir: Path | str, name: str) -> Path:
        """Where the record named ``name`` lives under ``results_dir`` (``name`` an identifier), inside its folder."""
        return self.inside(self.own_folder(results_dir), self.file(results_dir, name))

    def load(self, results_dir: Path | str) -> list[dict[str, Any]]:
        """Every record in the kind's folder of ``results_dir``, checked, oldest first (by created, then id)."""
        out = [self.read_in(results_dir, path) for path in self.files(results_dir)]
        return sorted(out, key=lambda r: (r["created"], r[self.id_field]))

    # ------------------------------------------------------------------ writing
    def save(self, path: Path | str, record: Mapping[str, Any]) -> Path:
        """Check (as every reader does), then write sealed and atomically at ``path`` (a reader never sees half
        a file): the harness never writes a record its own readers refuse."""
        body = unsealed(dict(record))
        self.check(body, "<new record>")
        return write_json(path, sealed(body))

    def write(self, results_dir: Path | str, record: Mapping[str, Any]) -> Path:
        """:meth:`save` at the record's own place (its id names the file)."""
        self.check(unsealed(dict(record)), "<new record>")
        return self.save(self.file(results_dir, str(record[self.id_field])), record)


#: the most resamples a record may claim: ``--deep`` re-derives its intervals and p-values with that many (a
#: forger's 10^10 was an 80 GB allocation, 10^9 an hour); the harness writes 1,000 to 2,000
MAX_RESAMPLES = 100_000
#: keys that mean one thing in every kind of record, wherever they stand: a resample count, a seed
RESAMPLE_KEYS = frozenset({"n_resamples"})
SEED_KEYS = frozenset({"seed"})
#: a seed fits in 63 bits (torch and numpy take it; a larger one is no seed the harness wrote)
MAX_SEED = 2**63 - 1


def shared_problem(data: Any, non_finite: tuple[str, ...] = ()) -> str | None:
    """What breaks a rule every kind of record shares, or None:

    - ``created`` (top level), where given, is an ISO-8601 timestamp with its UTC offset: it orders records (the
      newest of a spec is the one shown), so ``"not-a-date"`` (sorted after every real date) or a number would
      shadow the records made after it;
    - every ``n_resamples`` is a whole number from 1 to :data:`MAX_RESAMPLES`, and every ``seed`` a whole number
      of at most 63 bits, wherever they stand: ``--deep`` re-derives with them, so they bound its time and memory;
    - no number is NaN or infinite (JSON's ``NaN``, ``Infinity``, ``1e999``) but where the kind says it may be
      (``non_finite``, field specs as :attr:`SealedStore.names`: an ordering's undefined τ-b): every comparison
      with NaN is false, so a NaN drift or canary reading passed every check it met, and a verdict with it.
    """
    if isinstance(data, Mapping) and "created" in data:
        created = data["created"]
        if not isinstance(created, str) or (created and _timestamp(created) is None):
            return (f"'created' is {str(created)[:60]!r}, not an ISO-8601 timestamp with its UTC offset "
                    "(2026-11-29T10:45:45+00:00): it orders the records")
    allowed = _patterns(non_finite)
    for where, key, value in _scan(data, RESAMPLE_KEYS | SEED_KEYS, ""):
        if key is None:
            if not (math.isnan(value) and allowed.fullmatch(where)):  # undefined may be NaN, never infinite
                return (f"'{where}' is {value!r}, not a number the harness writes there (NaN or infinite: every "
                        "check compares it as false)")
            continue
        whole = isinstance(value, int) and not isinstance(value, bool)
        if key in RESAMPLE_KEYS and not (whole and 1 <= value <= MAX_RESAMPLES):
            return (f"'{where}' is {value!r:.40}, not a resample count (a whole number from 1 to "
                    f"{MAX_RESAMPLES:,}; `--deep` resamples that many times)")
        if key in SEED_KEYS and value is not None and not (whole and abs(value) <= MAX_SEED):
            return f"'{where}' is {value!r:.40}, not a seed (a whole number of at most 63 bits)"
    return None


def _timestamp(text: str) -> _dt.datetime | None:
    try:
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _patterns(specs: tuple[str, ...]) -> re.Pattern[str]:
    """Field specs (``a.b``, ``a[]``, ``a{}.b``) as one pattern of the paths :func:`_scan` shows."""
    def one(spec: str) -> str:
        return re.escape(spec).replace(r"\[\]", r"\[\d+\]").replace(r"\{\}", r"\.[^.\[]+")

    return re.compile("|".join(f"(?:{one(s)})" for s in specs) or r"(?!)")


_SCALARS = frozenset({int, float, str, bool, type(None)})


def _bad(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _finite_sum(items: list[Any]) -> bool:
    """Whether a list of scalars surely holds no NaN or infinity: its sum, at C speed, is finite (a list with a
    string or a sum that overflows is looked at item by item)."""
    try:
        return math.isfinite(sum(items, 0.0))
    except (TypeError, OverflowError):
        return False


def _scan(node: Any, keys: frozenset[str], at: str) -> Iterator[tuple[str, str | None, Any]]:
    """(shown path, key, value) of every object entry whose key is in ``keys``, and (path, None, value) of every
    NaN or infinite number, at any depth (a list of numbers, most of a latency record, is summed, not walked)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            where = f"{at}.{key}" if at else str(key)
            if key in keys:
                yield where, key, value
            if _bad(value):
                yield where, None, value
            elif isinstance(value, Mapping | list):
                yield from _scan(value, keys, where)
    elif isinstance(node, list):
        if _SCALARS.issuperset(map(type, node)) and _finite_sum(node):
            return
        for i, item in enumerate(node):
            if _bad(item):
                yield f"{at}[{i}]", None, item
            elif isinstance(item, Mapping | list):
                yield from _scan(item, keys, f"{at}[{i}]")


def name_values(data: Any, fields: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """(shown field, value) of every name ``fields`` point at in ``data`` (see :attr:`SealedStore.names`)."""
    for spec in fields:
        yield from _walk(data, spec.split("."), "")


def _walk(node: Any, parts: list[str], at: str) -> Iterator[tuple[str, Any]]:
    if not parts:
        if node is not None:
            yield at, node
        return
    head, rest = parts[0], parts[1:]
    if head.endswith("{}"):
        obj = node.get(head[:-2]) if isinstance(node, Mapping) else None
        if isinstance(obj, Mapping):
            for key, value in obj.items():
                where = f"{at}{head[:-2]}.{key}" if isinstance(key, str) and identifier_problem(key) is None \
                    else f"{at}{head[:-2]} (a key)"
                if rest:
                    yield from _walk(value, rest, where + ".")
                else:
                    yield where, key
        return
    if head.endswith("[]"):
        items = node.get(head[:-2]) if isinstance(node, Mapping) else None
        if isinstance(items, list):
            for i, item in enumerate(items):
                yield from _walk(item, rest, f"{at}{head[:-2]}[{i}]" + ("." if rest else ""))
        return
    if isinstance(node, Mapping) and head in node:
        yield from _walk(node[head], rest, f"{at}{head}" + ("." if rest else ""))


__all__ = ["MAX_RESAMPLES", "MAX_SEED", "SealedStore", "name_values", "shared_problem"]
