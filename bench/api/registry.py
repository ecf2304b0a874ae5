"""One generic registry for tasks, systems and recipes.

Entries are registered as lazy ``"module:attr"`` strings so that listing names never imports
heavy dependencies (torch, fairseq, java); the object is imported the first time it is asked for.
Modelled on lm-evaluation-harness's ``lm_eval/api/registry.py``.

Every entry remembers where it came from (``meta(name)["origin"]``): ``built-in``, an installed
distribution's entry point (``bench.systems`` / ``bench.tasks`` / ``bench.recipes``, read the first
time a registry is asked for a name or a listing), or a file or folder imported by
``bench --include`` (:mod:`bench.env.plugins`). A record of a plugin's run names that origin.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from bench.api.errors import UserError
from bench.api.names import IDENTIFIER

T = TypeVar("T")

BUILT_IN = "built-in"
_ORIGIN: contextvars.ContextVar[str] = contextvars.ContextVar("bench_registry_origin", default=BUILT_IN)


@contextlib.contextmanager
def registering_from(origin: str) -> Iterator[None]:
    """Entries registered inside this block are stamped with ``origin`` (``bench --include`` uses it)."""
    token = _ORIGIN.set(origin)
    try:
        yield
    finally:
        _ORIGIN.reset(token)


#: a name names files (``<system>--<task>--...json``): letters, digits and ``_ . + -``, no ``--`` (the run id's
#: separator), short enough that a run id stays far below the file system's 255-byte limit
NAME_MAX = 64
_NAME = IDENTIFIER  # the one identifier rule (bench.api.names), plus no '--' and a shorter cap


def name_problem(name: object) -> str | None:
    """What makes ``name`` unfit to name a system, task, recipe or submission (None when it is fine)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or "--" in name:
        return "use letters, digits and _ . + - (not starting with one of those, no '--'): it names files"
    if len(name) > NAME_MAX:
        return f"{len(name)} characters; at most {NAME_MAX} (it names files)"
    return None


def folded(name: str) -> str:
    """``name`` as names are told apart: case and ``-``/``_`` do not count (``MIST-unilm`` is ``mist_unilm``),
    so no two entries, or a submission and a system, can look alike in a table or a file list."""
    return name.casefold().replace("-", "_")


class RegistryError(UserError, KeyError):
    """Unknown or duplicate name; the message is meant for the user as is."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


def _bound(make: Any, first: str) -> Any:
    """``make`` with its first argument fixed, named after it (``bench ls`` and tracebacks show the variant)."""

    def factory(*args: Any, **kwargs: Any) -> Any:
        return make(first, *args, **kwargs)

    factory.__name__ = factory.__qualname__ = first
    factory.__doc__ = f"{make.__module__}.{make.__name__}({first!r}, ...)"
    return factory


def check_named(kind: str, name: str, obj: Any, cls: type[Any], want: str, label: str) -> None:
    """A registry's ``check`` for named objects (tasks, recipes): ``obj`` must be a ``cls`` whose
    ``name`` is the entry's; otherwise one line saying what to register (``want``)."""
    if not isinstance(obj, cls):
        raise RegistryError(f"{kind} '{name}': its registered object is a {type(obj).__name__}; register {want}.")
    if obj.name != name:
        raise RegistryError(f"{kind} '{name}': the registered {label} is named '{obj.name}'; the names must match.")


class Registry(Generic[T]):
    """Maps names to objects or lazy ``"module:attr"`` references.

    ``entry_point_group``: installed distributions add entries through this group (name = entry
    name, value = ``"module:attr"``), loaded once, lazily. ``check(name, obj)``: run on every object
    the first time it is resolved, so a plugin's mistake is one line naming the entry and the fix.
    """

    def __init__(self, kind: str, *, entry_point_group: str | None = None,
                 check: Callable[[str, Any], None] | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._check = check
        self._entries: dict[str, T | str] = {}
        self._meta: dict[str, dict[str, str]] = {}
        self._bind: dict[str, str] = {}
        self._refs: dict[str, str] = {}
        self._folded: dict[str, str] = {}  # folded(name) -> name
        self._entry_points_loaded = entry_point_group is None

    def register(self, name: str, obj: T | str, *, bind: str | None = None, **meta: str) -> None:
        """Add ``name``; ``obj`` may be the object or a ``"module:attr"`` string. ``bind``: the entry is
        ``obj`` with this first argument bound (one ``make(variant, ...)`` serves every variant of a family).

        Registering the same lazy reference under the same name again is a no-op (a plugin both
        installed and passed to ``--include``); another object under a taken name is an error.
        """
        ref = f"{obj}@{bind}" if isinstance(obj, str) else None
        new = _ORIGIN.get()
        source = "" if new == BUILT_IN else f" from {new}"
        problem = name_problem(name)
        if problem:
            raise RegistryError(f"Bad {self.kind} name {str(name)[:80]!r}{source}: {problem}.")
        if name in self._entries:
            if ref is not None and self._refs.get(name) == ref:
                return
            where = self._meta[name].get("origin", BUILT_IN)
            raise RegistryError(
                f"Duplicate {self.kind} '{name}'{source}: it is already registered ({where}). Give the new "
                "one another name."
            )
        twin = self._folded.get(folded(name))
        if twin is not None:
            where = self._meta[twin].get("origin", BUILT_IN)
            raise RegistryError(
                f"{self.kind.capitalize()} '{name}'{source} differs from the registered '{twin}' ({where}) only in "
                "case or -/_; names that look alike would be confused in tables and file names. Give the new one "
                "another name."
            )
        if isinstance(obj, str) and ":" not in obj:
            raise ValueError(f"Lazy {self.kind} reference must look like 'module:attr', got {obj!r}")
        if bind is not None and not isinstance(obj, str):
            obj = _bound(obj, bind)
        elif bind is not None:
            self._bind[name] = bind
        self._entries[name] = obj
        self._folded[folded(name)] = name
        self._meta[name] = {"origin": new, **meta}
        if ref is not None:
            self._refs[name] = ref

    def load_entry_points(self) -> None:
        """Register every installed ``entry_point_group`` entry (once; lazily, nothing is imported)."""
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=str(self.entry_point_group)):
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "unknown distribution"
            with registering_from(f"entry point {self.entry_point_group} of {dist}"):
                self.register(ep.name, ep.value)

    def decorator(self, name: str, **meta: str) -> Callable[[T], T]:
        def wrap(obj: T) -> T:
            self.register(name, obj, **meta)
            return obj

        return wrap

    def get(self, name: str) -> T:
        """Return the object, importing it on first use; unknown names suggest a close match."""
        self.load_entry_points()
        if name not in self._entries:
            raise RegistryError(self._unknown_message(name))
        entry = self._entries[name]
        if isinstance(entry, str):
            obj = self._import(name, entry)
            if name in self._bind:
                obj = _bound(obj, self._bind[name])
            if self._check is not None:
                self._check(name, obj)
            self._entries[name] = obj
            entry = obj
        return entry

    def _import(self, name: str, ref: str) -> Any:
        module_name, attr = ref.split(":", 1)
        origin = self._meta[name].get("origin", BUILT_IN)
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            if origin == BUILT_IN:
                raise
            raise RegistryError(
                f"{self.kind} '{name}' ({origin}) points at '{ref}', which cannot be loaded: "
                f"{type(exc).__name__}: {exc}. Fix the plugin's reference or install what it imports."
            ) from exc
        return obj

    def meta(self, name: str) -> dict[str, str]:
        self.load_entry_points()
        if name not in self._entries:
            raise RegistryError(self._unknown_message(name))
        return dict(self._meta[name])

    def names(self) -> list[str]:
        self.load_entry_points()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self.load_entry_points()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load_entry_points()
        return len(self._entries)

    def _unknown_message(self, name: str) -> str:
        return unknown_message(self.kind, name, self.names())


def unknown_message(kind: str, name: str, known: Iterable[str]) -> str:
    """``Unknown system 'mist_unlim'. Did you mean 'mist_unilm'? Known systems: ...``: every "no such name"
    the harness says, registry or not, in one form."""
    names = sorted(known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"Unknown {kind} '{name}'.{hint} Known {kind}s: {', '.join(names) or 'none'}."
