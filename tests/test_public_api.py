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
