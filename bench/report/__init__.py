"""Reports: paper tables with reported-vs-reproduced numbers, plots and a static HTML page.

Public API (the CLI calls these):

- :func:`render_table` — markdown for one paper table from run records.
- :func:`render_all` — regenerate every file under reports/, or with ``check=True`` return
  the list of differences (empty = up to date) without writing.
- :func:`runnable_rows` / :func:`parse_table_ref` — re-exported from :mod:`bench.papers` for
  ``bench reproduce``.
- :func:`load_records` — complete run records under results/, schema-checked.
- :func:`table_command` — what ``bench table`` prints.

Submodules: ``records`` (loading), ``views`` (records joined with paper tables), ``markdown``,
``html``, ``plots`` (matplotlib, imported only when drawing), ``build`` (files and --check); the
per-task leaderboards: ``ranking`` (groups, headline, rank clusters), ``significance`` (the paired
bootstrap between two runs; ``clusters`` forms rank clusters over all pairs), ``reproduces`` (paper rows
and speed-ups of a run), ``board`` (a task's
board as data), ``svg_plot`` (the quality-vs-speed plot) and ``leaderboard`` (the page); and
``compare_table`` (the rows ``bench compare`` prints).
"""

from bench.papers import RowSpec, parse_table_ref, runnable_rows
from bench.report.build import ReportCheckError, render_all, render_table, table_command
from bench.store.records import RecordError, load_records, validate_record

__all__ = [
    "RecordError",
    "ReportCheckError",
    "RowSpec",
    "parse_table_ref",
    "runnable_rows",
    "load_records",
    "render_all",
    "render_table",
    "table_command",
    "validate_record",
]

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.report.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
