"""The import graph of bench/ and systems/, read from the source (no imports run): every import counts,
module-level, inside functions (lazy) or under ``TYPE_CHECKING``, because each is a dependency a reader
must follow. ``from pkg import name`` is an edge to the module ``pkg.name`` where that is a module, else to
``pkg`` (import-linter's reading)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("bench", "systems")


@dataclass(frozen=True)
class Import:
    """One import statement's edge: who imports what, where."""

    importer: str
    target: str
    line: int
    names: tuple[str, ...]  # the names a ``from`` import takes ((): a plain ``import``)


def find_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under ``root``'s bench/ and systems/."""
    out: dict[str, Path] = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


@cache
def modules() -> dict[str, Path]:
    """:func:`find_modules` of this checkout (``ROOT``, read at call time so a test can point it elsewhere)."""
    return find_modules(ROOT)


def from_module(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute module a (possibly relative) ``from`` import in ``module`` (file ``path``) names."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def _known(name: str) -> str | None:
    """The longest prefix of ``name`` that is one of our modules (None: third-party or stdlib)."""
    mods = modules()
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def _walk(module: str, path: Path) -> Iterator[Import]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name)
                if target and target != module:
                    yield Import(module, target, node.lineno, ())
        elif isinstance(node, ast.ImportFrom):
            base = from_module(node, module, path)
            for alias in node.names:
                target = _known(f"{base}.{alias.name}")
                if target is None or not target.startswith(base) or target == base:
                    target = _known(base)
                if target and target != module:
                    yield Import(module, target, node.lineno, (alias.name,))


@cache
def imports() -> tuple[Import, ...]:
    return tuple(imp for module, path in modules().items() for imp in _walk(module, path))


def package_of(module: str) -> str:
    """The layer a module belongs to: ``systems`` as a whole, ``bench.<package>`` (``bench.__main__`` is its own), or
    ``bench`` for the root package."""
    parts = module.split(".")
    if parts[0] == "systems":
        return "systems"
    if module == "bench":
        return "bench"  # the root package: the version, nothing else
    return ".".join(parts[:2])


def cycles() -> list[list[str]]:
    """Every set of modules that import each other in a circle (strongly connected components of size > 1,
    or a module importing itself), each sorted."""
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for imp in imports():
        graph[imp.importer].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found
