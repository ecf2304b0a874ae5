"""docs/architecture.md's layer table is the import contract: the code imports only what it allows, no two
modules import each other in a circle, and the page names exactly the packages that exist."""

from __future__ import annotations

import re
from collections import defaultdict

import import_graph as graph
import pytest

DOC = graph.ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*`(?P<package>[\w.]+)`\s*\|(?P<holds>[^|]*)\|(?P<allowed>[^|]*)\|\s*$")


def layer_table() -> dict[str, set[str]]:
    """package -> the packages it may import, as the page's table states them."""
    table: dict[str, set[str]] = {}
    for line in DOC.read_text().splitlines():
        match = _ROW.match(line)
        if match:
            table[match["package"]] = set(re.findall(r"`([\w.]+)`", match["allowed"]))
    assert table, f"{DOC}: no layer table found (rows look like | `package` | holds | `a`, `b` |)"
    return table


def test_the_table_names_every_package_and_only_packages_that_exist() -> None:
    table = layer_table()
    existing = {graph.package_of(m) for m in graph.modules()}
    assert sorted(existing - set(table)) == [], "packages the architecture page does not place in a layer"
    assert sorted(set(table) - existing) == [], "the architecture page names packages that do not exist"
    named = {p for allowed in table.values() for p in allowed}
    assert sorted(named - existing) == [], "the table allows imports of packages that do not exist"


def test_every_import_is_one_the_layer_table_allows() -> None:
    table = layer_table()
    wrong: dict[str, list[str]] = defaultdict(list)
    for imp in graph.imports():
        src, dst = graph.package_of(imp.importer), graph.package_of(imp.target)
        if src != dst and dst not in table.get(src, set()):
            wrong[f"{src} -> {dst}"].append(f"{imp.importer}:{imp.line} imports {imp.target}")
    assert dict(wrong) == {}


def test_bench_reaches_systems_only_through_the_registry() -> None:
    inside = [f"{imp.importer}:{imp.line} imports {imp.target}" for imp in graph.imports()
              if graph.package_of(imp.importer) != "systems" and graph.package_of(imp.target) == "systems"
              and imp.target != "systems"]
    assert inside == [], "bench imports systems internals; go through systems.SYSTEMS / systems.build"


def test_systems_import_only_the_contract_package() -> None:
    """The rule a plugin author relies on: everything an adapter needs from bench is in bench.api."""
    outside = sorted({f"{imp.importer} imports {imp.target}" for imp in graph.imports()
                      if graph.package_of(imp.importer) == "systems"
                      and imp.target.split(".")[0] == "bench" and graph.package_of(imp.target) != "bench.api"})
    assert outside == []


def test_no_two_modules_import_each_other_in_a_circle() -> None:
    assert graph.cycles() == []


def test_the_cycle_finder_finds_a_circle(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above must be able to fail: a two-module circle written by a lazy import is found."""
    pkg = tmp_path / "bench" / "toy"
    pkg.mkdir(parents=True)
    (tmp_path / "bench" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from bench.toy.b import B\nA = 1\n")
    (pkg / "b.py").write_text("B = 2\n\n\ndef late():\n    from bench.toy import a\n    return a\n")
    (tmp_path / "systems").mkdir()
    monkeypatch.setattr(graph, "ROOT", tmp_path)
    graph.modules.cache_clear()
    graph.imports.cache_clear()
    try:
        assert graph.cycles() == [["bench.toy.a", "bench.toy.b"]]
    finally:
        graph.modules.cache_clear()
        graph.imports.cache_clear()


def test_the_example_plugins_system_and_task_import_only_the_contract_package() -> None:
    """What docs/plugins.md promises a system or task author, shown by the example plugin: bench.api suffices
    (its recipe uses the scoring package's base classes, and its include file the registries)."""
    import ast

    plugin = graph.ROOT / "examples" / "bench_example_plugin" / "bench_example_plugin"
    outside = []
    for name in ("system.py", "task.py"):
        for node in ast.walk(ast.parse((plugin / name).read_text())):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [module or ""]
            outside += [f"{name}: {m}" for m in names if m.split(".")[0] == "bench" and not m.startswith("bench.api")]
    assert outside == []
