"""Submodules loaded on first use: ``bench.report.frame.load`` works after a bare ``import bench``.

Why: the docs write module paths (``bench.results.load``, ``bench.report.frame.load``,
``bench.data.xsum.check_full``), and a notebook that imports only ``bench`` used to meet AttributeError, since a
package's submodule is an attribute only once something imported it. Each package's ``__getattr__`` imports the
submodule asked for, so a documented path resolves whatever was imported before, and importing a package stays
as cheap as it was (nothing is imported until asked for).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType


def submodules(package: str) -> Callable[[str], ModuleType]:
    """A module ``__getattr__`` for ``package`` that imports ``package.<name>`` when asked for ``name``; a name that
    is no submodule (or a dunder, which Python's own machinery probes) is an AttributeError, as for any module."""

    def __getattr__(name: str) -> ModuleType:
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise  # the submodule exists but imports something missing: say that
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
