"""The Python API users' notebooks stand on: every name docs/commands.md documents still imports (a refactor of the
packages below must keep them), ``import bench`` stays instant, and the old ``bench.results.load`` still works."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bench

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "commands.md"


def documented_names() -> list[str]:
    """Every ``bench.<name>`` written in the "Python API" section of docs/commands.md."""
    text = DOC.read_text()
    start = text.index("### Python API")
    ends = [i for i in (text.find("\n## ", start), text.find("\n### ", start + 1)) if i > 0]
    section = text[start: min(ends) if ends else None]
    return sorted(set(re.findall(r"\bbench(?:\.\w+)+", section)))


def resolve(dotted: str) -> object:
    """``bench.a.b``: the module, or the attribute of the longest importable module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_the_python_api_section_documents_every_public_name() -> None:
    from bench.public import PUBLIC

    documented = documented_names()
    assert {f"bench.{name}" for name in PUBLIC} <= set(documented)
    assert "bench.results.load" in documented


@pytest.mark.parametrize("dotted", documented_names())
def test_every_documented_name_imports(dotted: str) -> None:
    assert resolve(dotted) is not None


def test_top_level_names_are_the_public_functions() -> None:
    from bench import public

    for name in public.PUBLIC:
        assert getattr(bench, name) is getattr(public, name)
        assert name in bench.__all__ and name in dir(bench)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        bench.nope  # noqa: B018


def test_import_bench_loads_nothing_heavy() -> None:
    code = "import sys, bench\nprint(sorted(m for m in sys.modules if m.startswith(('bench', 'pandas', 'torch'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['bench', 'bench.version']"


def test_the_old_notebook_entry_point_is_an_alias() -> None:
    import bench.report.frame
    import bench.results

    assert bench.results.load is bench.report.frame.load
    assert bench.results.wide is bench.report.frame.wide


def test_load_results_reads_the_committed_records() -> None:
    df = bench.load_results(ROOT / "results")
    assert {"run_id", "system", "task", "recipe"} <= set(df.columns) and len(df) > 0
    wide = bench.load_results(ROOT / "results", wide=True)
    assert wide.run_id.is_unique


#: `bench.X` strings the docs write that are no module path: the entry-point groups a plugin declares, and the
#: module `python -m bench` runs (importing it runs the command line)
NOT_PATHS = {"bench.systems", "bench.tasks", "bench.recipes", "bench.__main__"}


def documented_paths() -> list[str]:
    """Every ``bench.a.b`` README.md, docs/*.md and the Makefile (its demo lines) write."""
    pages = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    found = {m for p in pages for m in re.findall(r"\bbench(?:\.[A-Za-z_]\w*)+", p.read_text(encoding="utf-8"))}
    return sorted(found - NOT_PATHS)


def test_every_module_path_the_docs_write_resolves_after_a_bare_import_bench() -> None:
    """#58: `bench.results.load` and `bench.report.frame.load` raised AttributeError after `import bench`. Each
    path is resolved in a fresh interpreter state (every bench module dropped first), by attributes only, so what
    an earlier path imported cannot make a later one work."""
    names = documented_paths()
    assert {"bench.results.load", "bench.report.frame.load", "bench.load_results"} <= set(names)
    code = ("import sys, json\nbad = []\nfor name in json.loads(sys.argv[1]):\n"
            "    for m in [k for k in sys.modules if k == 'bench' or k.startswith('bench.')]:\n"
            "        del sys.modules[m]\n"
            "    import bench\n    obj = bench\n"
            "    try:\n        for part in name.split('.')[1:]:\n            obj = getattr(obj, part)\n"
            "    except AttributeError as exc:\n        bad.append(f'{name}: {exc}')\n"
            "print(json.dumps(bad))\n")
    import json

    out = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert json.loads(out.stdout) == []


def test_a_subpackage_attribute_that_is_no_module_is_an_attribute_error() -> None:
    import bench.report

    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        bench.report.nope  # noqa: B018
    assert not hasattr(bench.store, "__wrapped__")  # dunders Python's own machinery probes are never imported


def test_run_takes_force_as_the_command_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bench.run` says "use --force" when it finds a run complete; from Python that is ``force=True`` (#58 walk:
    a notebook had no way to run a spec again)."""
    import bench.runs.pipeline as pipeline

    calls: list[dict[str, object]] = []
    monkeypatch.setattr(pipeline, "execute", lambda spec, **kw: calls.append(kw) or {"run_id": spec.run_id})
    bench.run("copy_source", "quora", limit=5)
    bench.run("copy_source", "quora", limit=5, force=True)
    assert [c["force"] for c in calls] == [False, True]
