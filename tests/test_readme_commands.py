"""Every ``bench`` command line shown in README.md and docs/*.md parses with the real command line (#40).

The README said ``bench data show --task quora --split test -n 2`` while the CLI had no ``-n``. The
commands are found in the documents' fenced code blocks at test time, never copied here, so the
documents can be rewritten freely and still never disagree with the CLI. Each one is parsed with the
real typer app without running it (click's ``make_context`` down to the sub-command: unknown options,
missing required ones, bad choices and numbers fail); the cheap ones (``ls``, ``data show``) run too.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer import Exit as ClickExit  # what --help raises, in typers that vendor click and in those that do not

try:  # recent typers vendor click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover
    from click.exceptions import UsageError

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: shell words that end one command and may start another
SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "do", "then", "else", "{", "}"}
REDIRECTS = {">", ">>", "<", "2>", "2>>", "&>", "<<", "<<<"}
#: commands cheap and side-effect free enough to run for real: (sub-command words, needs ../shared/data)
RUN_FULLY = {("ls",): False, ("data", "show"): True}


@dataclass(frozen=True)
class DocCommand:
    where: str  # README.md:34
    text: str  # the line as written
    args: tuple[str, ...]  # the words after `bench`

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def doc_commands(path: Path) -> list[DocCommand]:
    """Every ``bench ...`` command in the fenced code blocks of ``path``, continuation lines joined."""
    found: list[DocCommand] = []
    fence: str | None = None
    pending, start = "", 0
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = raw.strip()
        if fence is None:
            if stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            continue
        if stripped.startswith(fence):
            fence, pending = None, ""
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        line, pending = pending + stripped, ""
        where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{start}"
        found += [DocCommand(where, line, args) for args in _bench_calls(line)]
    return found


def _bench_calls(line: str) -> list[tuple[str, ...]]:
    """The argument lists of the ``bench`` invocations in one shell line (placeholders made parseable)."""
    line = re.sub(r"(?<!\S)<[A-Za-z][\w .:/-]*>", "PLACEHOLDER", line)  # `bench show <run id>`
    line = re.sub(r"\$\{?\w+\}?", "1", line)  # shell variables: `--set iterations=$k`
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        words = list(lexer)
    except ValueError:  # an unbalanced quote: not a shell line (prose in a code block)
        return []
    calls, current = [], []
    for word in [*words, ";"]:
        if word in SEPARATORS:
            calls.append(current)
            current = []
        else:
            current.append(word)
    return [args for call in calls if (args := _after_bench(call)) is not None]


def _after_bench(words: list[str]) -> tuple[str, ...] | None:
    while words and re.fullmatch(r"[A-Za-z_]\w*=\S*", words[0]):  # VAR=value bench ...
        words = words[1:]
    if words[:1] == ["$"]:  # a prompt
        words = words[1:]
    if words[:3] in (["python", "-m", "bench"], ["python3", "-m", "bench"]):
        words = ["bench", *words[3:]]
    if not words or Path(words[0]).name != "bench":
        return None
    args: list[str] = []
    rest = iter(words[1:])
    for word in rest:
        if word in REDIRECTS:
            next(rest, None)  # and its target
        elif word in ("...", "…"):  # "the options shown above"
            continue
        else:  # an optional part written [--data-dir DIR]: parse it as given
            args.append(word[1:] if word.startswith("[-") else word[:-1] if word.endswith("]") and "[" not in word
                        else word)
    return tuple(args)


COMMANDS = [cmd for doc in DOCS if doc.is_file() for cmd in doc_commands(doc)]


def test_the_documents_show_commands() -> None:
    """The extraction itself works (a broken one would pass every parse below vacuously)."""
    readme = [c for c in COMMANDS if c.where.startswith("README.md")]
    assert len(readme) >= 10, [str(c) for c in readme]
    assert len({c.args[0] for c in readme if c.args}) >= 5


def test_the_extraction_reads_shell_the_way_a_reader_does(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("text bench ls tasks\n```bash\nbench ls tasks; bench ls systems  # both\n"
                   "for k in 3 6; do\n  bench run --system s --task t \\\n    --set iterations=$k\ndone\n"
                   "bench fetch --data [--data-dir DIR]\nbench fetch ... --force\nBENCH_CACHE=/x bench show <run id>\n"
                   "bench table --paper mist > out.md\n```\nbench not-in-a-block\n")
    got = [c.args for c in doc_commands(doc)]
    assert got == [("ls", "tasks"), ("ls", "systems"), ("run", "--system", "s", "--task", "t", "--set", "iterations=1"),
                   ("fetch", "--data", "--data-dir", "DIR"), ("fetch", "--force"), ("show", "PLACEHOLDER"),
                   ("table", "--paper", "mist")]


def parse_only(args: tuple[str, ...]) -> str:
    """Parse ``bench ARGS`` down to its sub-command with the real app, invoking nothing; returns the
    sub-command's path (``data show``). Raises click's UsageError for what the CLI would refuse to parse."""
    from typer.main import get_command

    from bench.cli import app

    cmd = get_command(app)
    ctx = cmd.make_context("bench", list(args))
    path = []
    while hasattr(cmd, "resolve_command"):  # a group: its options are parsed, the rest names a sub-command
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            raise UsageError("no sub-command given", ctx)
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        path.append(name)
        cmd, ctx = sub, sub.make_context(name, rest, parent=ctx)
    return " ".join(path)


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_every_documented_command_parses(command: DocCommand) -> None:
    try:
        parse_only(command.args)
    except ClickExit:  # --help: parsed
        pass
    except UsageError as exc:
        pytest.fail(f"{command}\n  does not parse: {exc.format_message()}")


def _runnable(command: DocCommand) -> bool:
    for words, needs_data in RUN_FULLY.items():
        if command.args[: len(words)] == words:
            return not needs_data or (REPO.parent / "shared" / "data").is_dir()
    return False


FULL = [c for c in COMMANDS if _runnable(c)]


@pytest.mark.parametrize("command", FULL, ids=[c.where + " " + " ".join(c.args) for c in FULL])
def test_cheap_documented_commands_run(command: DocCommand) -> None:
    proc = subprocess.run([sys.executable, "-m", "bench", *command.args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr


def test_a_wrong_option_in_a_document_is_caught() -> None:
    """The check is real: what the README said before #40 fails it, naming the option."""
    with pytest.raises(UsageError, match="-n"):
        parse_only(("data", "show", "--task", "quora", "--split", "test", "--n-examples", "2"))
    with pytest.raises(UsageError):
        parse_only(("reproduce", "mist:1", "--launcher", "cluster"))
    with pytest.raises(UsageError):
        parse_only(("run", "--task", "quora"))  # --system is required
    assert parse_only(("data", "show", "--task", "quora", "-n", "2")) == "data show"
