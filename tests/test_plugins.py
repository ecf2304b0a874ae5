"""Plugins without forking: the example plugin through its entry points and through `bench --include`.

Every test runs `bench` in a fresh process (the registries are process-wide), with the example's
distribution metadata generated from its own pyproject.toml, so the test proves the declarations a
user copies are the ones that work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bench_example_plugin"
INCLUDE = EXAMPLE / "bench_include.py"


def bench(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [full_env.get("PYTHONPATH", ""), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=300)


def installed(tmp_path: Path) -> dict[str, str]:
    """What `pip install examples/bench_example_plugin` leaves behind, made from its pyproject.toml:
    a dist-info folder with the entry points, and the package importable."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()) + "\n"
                     for group, entries in project["entry-points"].items())
    (info / "entry_points.txt").write_text(groups)
    return {"PYTHONPATH": os.pathsep.join([str(site), str(EXAMPLE)])}


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"BENCH_CACHE": str(tmp_path / "cache"), **extra}


def run_toy(tmp_path: Path, *pre: str, env: dict[str, str]) -> dict:
    results = tmp_path / "results"
    out = bench(*pre, "run", "--system", "lead_words", "--task", "toy_pairs", "--results-dir", str(results), env=env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    (record,) = results.glob("lead_words--toy_pairs--test--smoke--*.json")
    return json.loads(record.read_text())


def test_entry_points_add_a_system_a_task_and_a_recipe(tmp_path: Path) -> None:
    env = {**env_for(tmp_path), **installed(tmp_path)}
    listing = bench("ls", "systems", env=env)
    assert listing.returncode == 0, listing.stderr
    assert "lead_words" in listing.stdout and "bench-example-plugin" in listing.stdout
    assert "exact_match" in bench("ls", "recipes", env=env).stdout
    record = run_toy(tmp_path, env=env)
    assert record["system"]["origin"] == "entry point bench.systems of bench-example-plugin 0.1.0"
    assert record["data"]["task_origin"] == "entry point bench.tasks of bench-example-plugin 0.1.0"
    # lead_words learned the median training target length (5 words) and cuts each source there
    assert record["system"]["config"]["learned_length"] == 5
    outputs = (tmp_path / "results" / "outputs" / f"{record['run_id']}.txt").read_text().splitlines()
    assert outputs[0] == "the orchestra played three new"
    # exact_match is the plugin recipe; the toy references are never the first 5 words verbatim but one
    assert record["scores"]["exact_match"]["metrics"]["exact_match"] == pytest.approx(100 / 6)
    assert record["scores"]["sacrebleu"]["metrics"]["bleu4"] > 50


def test_include_adds_the_same_entries_and_records_the_code_hash(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    listing = bench("--include", str(INCLUDE), "ls", "systems", env=env)
    assert listing.returncode == 0, listing.stderr
    rows = [line for line in listing.stdout.splitlines() if "lead_words" in line]
    assert any("--include" in row for row in rows)  # the plugin's origin, under the table
    assert "every other system is built-in" in listing.stdout
    assert any(line.split()[:1] == ["unilm"] for line in listing.stdout.splitlines())
    record = run_toy(tmp_path, "--include", str(INCLUDE), env=env)
    assert record["system"]["origin"].startswith(f"--include {INCLUDE} (code sha256 ")
    # the same through $BENCH_INCLUDE, and with the plugin installed as well: no duplicate error
    both = {**env, **installed(tmp_path), "BENCH_INCLUDE": str(INCLUDE)}
    assert bench("ls", "tasks", env=both).returncode == 0


def test_without_the_plugin_its_names_are_unknown(tmp_path: Path) -> None:
    out = bench("run", "--system", "lead_words", "--task", "quora", env=env_for(tmp_path))
    assert out.returncode == 2 and "Unknown system 'lead_words'" in out.stderr


@pytest.mark.parametrize(
    ("code", "args", "message"),
    [
        ("raise RuntimeError('boom')", ("ls", "systems"), "importing it failed with RuntimeError: boom"),
        ("from systems import SYSTEMS\nSYSTEMS.register('unilm', 'json:dumps')", ("ls", "systems"),
         "Duplicate system 'unilm' from --include"),
        ("from systems import SYSTEMS\nSYSTEMS.register('bad', 'json:dumps')",
         ("run", "--system", "bad", "--task", "quora", "--limit", "1"),
         "cannot be called as factory(budget, overrides)"),
        ("from systems import SYSTEMS\nSYSTEMS.register('bad', lambda budget, overrides: object())",
         ("run", "--system", "bad", "--task", "quora", "--limit", "1"), "does not subclass bench.api.system.System"),
        ("from systems import SYSTEMS\nSYSTEMS.register('gone', 'no_such_module:make')",
         ("run", "--system", "gone", "--task", "quora", "--limit", "1"), "cannot be loaded: ModuleNotFoundError"),
        ("from bench.data import TASKS\nTASKS.register('t2', 'json:dumps')",
         ("run", "--system", "copy_source", "--task", "t2"), "register a bench.data.tasks.Task"),
    ],
)
def test_a_broken_plugin_is_a_one_line_error(tmp_path: Path, code: str, args: tuple[str, ...], message: str) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(code + "\n")
    out = bench("--include", str(plugin), *args, env=env_for(tmp_path))
    assert out.returncode == 2, out.stdout[-1500:] + out.stderr[-1500:]
    assert message in " ".join(out.stderr.split()) and "Traceback" not in out.stderr, out.stderr


def test_a_missing_include_path_is_a_one_line_error(tmp_path: Path) -> None:
    out = bench("--include", str(tmp_path / "nope.py"), "ls", "systems", env=env_for(tmp_path))
    assert out.returncode == 2 and "no such file or folder" in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr


def readme_plugin_commands() -> list[list[str]]:
    """The `bench ...` lines of README's "Add your own system" code blocks, as argument lists."""
    import shlex

    text = (ROOT / "README.md").read_text()
    section = text.split("## Add your own system", 1)[1].split("\n## ", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in section.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("bench ")]


def test_the_readmes_plugin_commands_work_as_written(tmp_path: Path) -> None:
    """Each `bench` line of the README section runs (the `pip install -e` line stands in as the dist-info
    it leaves behind); runs get a temporary results folder instead of the checkout's."""
    commands = readme_plugin_commands()
    assert len(commands) >= 3 and any("--include" in c for c in commands)
    env = {**env_for(tmp_path), **installed(tmp_path)}
    for i, args in enumerate(commands):
        extra = ["--results-dir", str(tmp_path / f"results{i}")] if "run" in args else []
        out = bench(*args, *extra, env=env)
        assert out.returncode == 0, (args, out.stderr[-2000:])
        if args[-2:] == ["ls", "systems"]:
            assert "lead_words" in out.stdout and "bench-example-plugin" in out.stdout
    assert len(list(tmp_path.glob("results*/lead_words--toy_pairs--test--smoke--*.json"))) == 2


def doc_blocks(path: Path, lang: str) -> list[str]:
    """The ``lang`` code blocks of a markdown page, in order (indented blocks included, their indent removed)."""
    import re
    import textwrap

    fence = re.compile(rf"^( *)```{lang}\n(.*?)^\1```", re.M | re.S)
    return [textwrap.dedent(m.group(2)) for m in fence.finditer(path.read_text(encoding="utf-8"))]


def test_the_plugin_written_in_the_docs_runs_as_the_docs_say(tmp_path: Path) -> None:
    """docs/plugins.md's one-file system, copied from the page as a user would, runs with the page's own commands:
    the imports it names are all it needs, the seed override the harness passes is taken, and the family it sets
    is listed and recorded."""
    doc = ROOT / "docs" / "plugins.md"
    (code,) = [b for b in doc_blocks(doc, "python") if b.startswith("# my_first_plugin.py")]
    (tmp_path / "my_first_plugin.py").write_text(code, encoding="utf-8")
    commands = [line.split("#", 1)[0].split() for b in doc_blocks(doc, "bash") for line in b.splitlines()
                if line.startswith("bench --include my_first_plugin.py")]
    assert [c[3] for c in commands] == ["ls", "run"], commands
    env = env_for(tmp_path, BENCH_RESULTS=str(tmp_path / "workspace"))
    # a wide terminal: at 80 columns the listing drops its optional family column before any other
    listing = bench(*commands[0][1:], env={**env, "COLUMNS": "160"}, cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    (row,) = [line for line in listing.stdout.splitlines() if line.startswith("first_words")]
    assert " NAR " in f" {row} " and "smoke" in row, row  # not "reference": it trains, so it is ranked
    run = bench(*commands[1][1:], env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (path,) = (tmp_path / "workspace").glob("first_words--quora--test--smoke--s42--*.json")
    record = json.loads(path.read_text())
    assert record["system"]["family"] == "NAR" and record["system"]["config"]["seed"] == 42
    assert record["system"]["origin"].startswith("--include") and record["data"]["n_examples"] == 50
    assert record["system"]["config"]["learned_length"] > 0 and record["scores"]
