"""The ``bench`` command line: one module per command group, each parsing its options, calling one library
function and rendering the result with rich (docs/architecture.md).

Every heavy import (torch, pandas, scoring tools, systems, report) happens inside the command that needs it,
so ``bench --help`` stays instant (tests/test_cli_startup.py).
"""

from __future__ import annotations

import sys

from bench.cli.common import app, print_error
from bench.env.help_summaries import one_line_summaries

# each module registers its commands on the app, in the order `bench --help` lists them
# isort: off
from bench.cli import listing, data, run, score, show, board, table, launch, latency, workflows  # noqa: F401
# isort: on

__all__ = ["app", "main"]


one_line_summaries(app)  # `bench --help` fills each summary's lines (bench.env.help_summaries)


def main() -> None:
    """The ``bench`` entry point: a :class:`~bench.api.errors.UserError` anywhere becomes one line and exit 2; an
    environment problem (:class:`~bench.api.errors.EnvironmentProblem`, a folder that cannot be written) exit 1.
    Two classes of failure no input check can name in advance are one line too: running out of memory (exit 1;
    the readers bound what they read, so this is the machine) and a symbolic-link loop met while resolving a path
    (exit 2; Python 3.11 raises ``RuntimeError`` for it)."""
    from bench.api.errors import EnvironmentProblem, UserError

    try:
        app()
    except UserError as exc:
        print_error(str(exc))
        sys.exit(2)
    except (EnvironmentProblem, OSError) as exc:
        from bench.api.atomic import os_problem

        # a read-only or full $BENCH_CACHE, results/ or --out folder, a name too long: one line, by errno
        problem = exc if isinstance(exc, EnvironmentProblem) else os_problem(exc)
        if problem is None:
            raise
        print_error(str(problem))
        sys.exit(2 if isinstance(problem, UserError) else 1)
    except MemoryError:
        print_error("ran out of memory. Fix: free memory (or run on a machine with more), "
                    "and check that the files given are the ones meant (inputs are capped: docs/integrity.md).")
        sys.exit(1)
    except RuntimeError as exc:
        if not str(exc).startswith("Symlink loop from"):
            raise
        print_error(f"{exc}: a symbolic link on this path leads back to "
                    "itself. Fix: point the option at a real file or folder, or remove the loop.")
        sys.exit(2)


import typing  # noqa: E402

if not typing.TYPE_CHECKING:  # at run time `bench.cli.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
