"""One generic registry for tasks, systems and recipes.

Entries are registered as lazy ``"module:attr"`` strings so that listing names never imports
heavy dependencies (torch, fairseq, java); the object is imported the first time it is asked for.
Modelled on lm-evaluation-harness's ``lm_eval/api/registry.py``.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from bench.errors import UserError

T = TypeVar("T")


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


class Registry(Generic[T]):
    """Maps names to objects or lazy ``"module:attr"`` references."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._meta: dict[str, dict[str, str]] = {}
        self._bind: dict[str, str] = {}

    def register(self, name: str, obj: T | str, *, bind: str | None = None, **meta: str) -> None:
        """Add ``name``; ``obj`` may be the object or a ``"module:attr"`` string. ``bind``: the entry is
        ``obj`` with this first argument bound (one ``make(variant, ...)`` serves every variant of a family)."""
        if name in self._entries:
            raise RegistryError(f"Duplicate {self.kind} '{name}': it is already registered.")
        if isinstance(obj, str) and ":" not in obj:
            raise ValueError(f"Lazy {self.kind} reference must look like 'module:attr', got {obj!r}")
        if bind is not None and not isinstance(obj, str):
            obj = _bound(obj, bind)
        elif bind is not None:
            self._bind[name] = bind
        self._entries[name] = obj
        self._meta[name] = dict(meta)

    def decorator(self, name: str, **meta: str) -> Callable[[T], T]:
        def wrap(obj: T) -> T:
            self.register(name, obj, **meta)
            return obj

        return wrap

    def get(self, name: str) -> T:
        """Return the object, importing it on first use; unknown names suggest a close match."""
        if name not in self._entries:
            raise RegistryError(self._unknown_message(name))
        entry = self._entries[name]
        if isinstance(entry, str):
            module_name, attr = entry.split(":", 1)
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
            if name in self._bind:
                obj = _bound(obj, self._bind[name])
            self._entries[name] = obj
            entry = obj
        return entry

    def meta(self, name: str) -> dict[str, str]:
        if name not in self._entries:
            raise RegistryError(self._unknown_message(name))
        return dict(self._meta[name])

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, self._entries, n=1, cutoff=0.6)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        known = ", ".join(self.names()) or "none"
        return f"Unknown {self.kind} '{name}'.{hint} Known {self.kind}s: {known}."
