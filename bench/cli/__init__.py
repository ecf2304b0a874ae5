"""The ``bench`` command line: one module per command group, each parsing its options, calling one library
function and rendering the result with rich (docs/architecture.md).

Every heavy import (torch, pandas, scoring tools, systems, report) happens inside the command that needs it,
so ``bench --help`` stays instant (tests/test_cli_startup.py).
"""

from __future__ import annotations

import sys

from bench.cli.common import app, err_console

# each module registers its commands on the app, in the order `bench --help` lists them
# isort: off
from bench.cli import listing, data, run, score, show, board, table, launch, latency, workflows  # noqa: F401
# isort: on

__all__ = ["app", "main"]


def main() -> None:
    """The ``bench`` entry point: a :class:`~bench.api.errors.UserError` anywhere becomes one line and exit 2; an
    environment problem (:class:`~bench.api.errors.EnvironmentProblem`, a folder that cannot be written) exit 1."""
    from rich.markup import escape

    from bench.api.errors import EnvironmentProblem, UserError

    try:
        app()
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    except (EnvironmentProblem, OSError) as exc:
        from bench.api.atomic import is_unwritable, not_writable

        if isinstance(exc, OSError) and not isinstance(exc, EnvironmentProblem):
            if not is_unwritable(exc):
                raise
            exc = not_writable(exc.filename or ".", exc)  # a read-only $BENCH_CACHE, results/ or --out folder
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        sys.exit(1)
