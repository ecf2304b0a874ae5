"""The command line stays thin (#41): bench/cli/ is one module per command group, each at most 200 lines, and
it defines typer commands, rendering helpers and option types only; what a command decides lives in the
library (e.g. bench.latency.plan, bench.launch.dispatch, bench.env.threads, bench.env.counts)."""

from __future__ import annotations

import ast
import enum
import importlib
from pathlib import Path

import typer

CLI = Path(__file__).resolve().parents[1] / "bench" / "cli"
MAX_LINES = 200
#: helpers a command module may define besides its commands: saying, failing and rendering (common.py), the
#: option checks that refuse a combination of options, and the reading of an outputs-file option
HELPERS = {
    "say", "fail", "check_counts", "shown",  # common.py: printing a message, the one-line failure, counts, paths
    "main",  # __init__.py: the entry point (errors -> one line and an exit code)
    "_refuse_score_conflicts",  # score.py: two options that ask for different things
    "_read_outputs",  # score.py: the --hyp file against the split, with the `--limit N` hint
}
RENDERING = ("render_", "_render_", "print_", "_print_")


def _modules() -> list[Path]:
    return sorted(CLI.glob("*.py"))


def _registered(app: typer.Typer) -> set[tuple[str, str]]:
    """(module, function) of every command and callback of ``app`` and its sub-apps."""
    out: set[tuple[str, str]] = set()
    callbacks = [c.callback for c in app.registered_commands]
    if app.registered_callback is not None:
        callbacks.append(app.registered_callback.callback)
    for fn in callbacks:
        if fn is not None:
            out.add((fn.__module__, fn.__name__))
    for group in app.registered_groups:
        if group.typer_instance is not None:
            out |= _registered(group.typer_instance)
    return out


def test_the_cli_is_a_package_of_small_modules() -> None:
    assert not (CLI.parent / "cli.py").exists()
    names = {p.stem for p in _modules()}
    assert {"__init__", "common"} <= names and len(names) >= 8, names
    long = {p.name: n for p in _modules() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"bench/cli modules over {MAX_LINES} lines: {long}; split the group or move code to the library"


def test_cli_modules_define_commands_renderers_and_option_types_only() -> None:
    from bench.cli import app

    registered = _registered(app)
    wrong: list[str] = []
    for path in _modules():
        module = "bench.cli" if path.stem == "__init__" else f"bench.cli.{path.stem}"
        mod = importlib.import_module(module)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name
                if (module, name) in registered or name in HELPERS or name.startswith(RENDERING):
                    continue
                wrong.append(f"{path.name}:{node.lineno} def {name}")
            elif isinstance(node, ast.ClassDef) and not issubclass(getattr(mod, node.name), enum.Enum):
                wrong.append(f"{path.name}:{node.lineno} class {node.name} (only Enum option types)")
    assert wrong == [], "not a command, a renderer or an option type (move it to the library): " + "; ".join(wrong)


#: commands whose --results-dir defaults to the committed results/: they build committed files from the evidence
#: (EvidenceDir). `bench latency --record` is not one: a newcomer's timing goes to the workspace like a run.
EVIDENCE_READERS = {"table_cmd", "order_cmd"}


def test_every_command_takes_the_one_results_dir_option() -> None:
    """One rule for results folders (docs/commands.md, "Where runs go"): every --results-dir is common.ResultsDir
    defaulting to None (write to the workspace, read it and results/), or common.EvidenceDir for the commands that
    build committed files from results/."""
    import inspect
    from typing import get_type_hints

    from bench.cli import app, common

    seen = 0
    for module, name in _registered(app):
        fn = getattr(importlib.import_module(module), name)
        param = inspect.signature(fn).parameters.get("results_dir")
        if param is None:
            continue
        seen += 1
        hint = get_type_hints(fn, include_extras=True)["results_dir"]
        if name in EVIDENCE_READERS:
            assert hint == common.EvidenceDir and param.default is None, f"{module}.{name}"
        else:
            assert param.default is None, f"{module}.{name}: --results-dir defaults to {param.default}, not the rule"
            assert hint == common.ResultsDir, f"{module}.{name}: --results-dir is declared again, not common.ResultsDir"
    assert seen >= 14
