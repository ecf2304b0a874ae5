"""bench: one data layer, one scorer and one latency meter for comparing text generators.

The Python API (docs/commands.md, "Python API"): ``bench.load_results()``, ``bench.load_split()``,
``bench.compare()``, ``bench.run()``. They are loaded on first use (module ``__getattr__``), so ``import bench``
and ``bench --help`` import nothing heavy.
"""

from typing import Any

from bench.version import __version__

__all__ = ["__version__", "compare", "load_results", "load_split", "run"]


def __getattr__(name: str) -> Any:
    """The public functions of :mod:`bench.public`, imported when first asked for; else a subpackage or module
    (``bench.report``, ``bench.results``), so the module paths the docs write work after ``import bench``."""
    if name in ("compare", "load_results", "load_split", "run"):
        from bench import public

        return getattr(public, name)
    if not name.startswith("_"):
        import importlib

        try:
            return importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"bench.{name}":
                raise
    raise AttributeError(f"module 'bench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
