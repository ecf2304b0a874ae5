"""No module of bench/ or systems/ reaches into another module's private (``_underscore``) names.

A leading underscore says "only this module uses it": a sibling that imports it (``from bench.runs import
_workdir``) ties itself to what the owner may rename or change at will, and the owner cannot tell. A name
another module needs is public, under a name that says what it is. Read from the source (nothing is
imported): ``from X import _name`` (relative forms too, and a package's own ``__init__``-level privates
imported by its modules), and ``module._name`` through a module bound by an import. Dunders (``__version__``)
are public. Only our own modules count: what a third-party package keeps private is its business.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from import_graph import ROOT, TOPS, find_modules, from_module

#: (importer, module, name) -> why it is still here. ONLY for files this change could not edit; each entry
#: goes when its owner makes the name public (the second test fails on an entry that no longer happens).
KNOWN: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True, order=True)
class PrivateUse:
    importer: str  # dotted module that reaches in
    module: str  # dotted module whose private name it takes
    name: str
    where: str  # path:line

    @property
    def key(self) -> tuple[str, str, str]:
        return self.importer, self.module, self.name


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _ours(module: str) -> bool:
    return module.split(".")[0] in TOPS


def private_uses(root: Path = ROOT) -> list[PrivateUse]:
    mods = find_modules(root)
    found: list[PrivateUse] = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(root).as_posix()
        bound: dict[str, str] = {}  # local name -> one of our modules
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = from_module(node, module, path)
                for alias in node.names:
                    if f"{base}.{alias.name}" in mods:
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                    if _ours(base) and _private(alias.name) and base != module:
                        found.append(PrivateUse(module, base, alias.name, f"{where}:{node.lineno}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _ours(alias.name):
                        bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                            alias.name.split(".")[0]
        for node in ast.walk(tree):  # module._name, through a module an import bound
            if not isinstance(node, ast.Attribute):
                continue
            chain: list[str] = []
            head: ast.expr = node
            while isinstance(head, ast.Attribute):
                chain.insert(0, head.attr)
                head = head.value
            if not isinstance(head, ast.Name) or head.id not in bound:
                continue
            owner = bound[head.id]
            for i, attr in enumerate(chain):  # walk down the submodules the chain names
                if f"{owner}.{attr}" in mods:
                    owner = f"{owner}.{attr}"
                    continue
                if i == len(chain) - 1 and _private(attr) and owner != module:
                    found.append(PrivateUse(module, owner, attr, f"{where}:{node.lineno}"))
                break
    return sorted(set(found))


def test_no_module_imports_another_modules_private_names() -> None:
    new = [f"{use.where}: {use.importer} takes {use.module}.{use.name}" for use in private_uses()
           if use.key not in KNOWN]
    assert new == [], ("private names used across modules: make the name public (a name that says what it is) "
                       "where a sibling needs it, or move the code that needs it into its module")


def test_every_known_exception_still_happens() -> None:
    """An entry whose import was fixed goes from KNOWN, so the list only shrinks and says what is left."""
    seen = {use.key for use in private_uses()}
    assert sorted(set(KNOWN) - seen) == [], "fixed: delete these entries from KNOWN"


@pytest.mark.parametrize(("source", "expected"), [
    ("from bench.toy.a import _hidden\n", [("bench.toy.b", "bench.toy.a", "_hidden")]),
    ("from .a import _hidden\n", [("bench.toy.b", "bench.toy.a", "_hidden")]),
    ("from bench.toy import _package_private\n", [("bench.toy.b", "bench.toy", "_package_private")]),
    ("from . import _package_private\n", [("bench.toy.b", "bench.toy", "_package_private")]),
    ("from bench.toy import a\nx = a._hidden\n", [("bench.toy.b", "bench.toy.a", "_hidden")]),
    ("import bench.toy.a\nx = bench.toy.a._hidden\n", [("bench.toy.b", "bench.toy.a", "_hidden")]),
    ("import bench.toy.a as a\nx = a._hidden()\n", [("bench.toy.b", "bench.toy.a", "_hidden")]),
    ("from bench import __version__\nfrom bench.toy.a import public\n", []),
    ("from typing import _SpecialForm\nimport os\nx = os._exit\n", []),  # not ours
    ("class B:\n    def f(self):\n        return self._own\n", []),
])
def test_the_scanner_finds_each_form(tmp_path: Path, source: str, expected: list[tuple[str, str, str]]) -> None:
    """The check above must be able to fail: each way of reaching in is found, and public names are not."""
    pkg = tmp_path / "bench" / "toy"
    pkg.mkdir(parents=True)
    (tmp_path / "bench" / "__init__.py").write_text("__version__ = '0'\n")
    (pkg / "__init__.py").write_text("_package_private = 1\n")
    (pkg / "a.py").write_text("public = 1\n_hidden = 2\n")
    (pkg / "b.py").write_text(source)
    (tmp_path / "systems").mkdir()
    assert [use.key for use in private_uses(tmp_path)] == expected
