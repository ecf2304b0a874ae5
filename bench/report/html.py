"""The static HTML report: reports/index.html (the paper tables and plots) and reports/runs.html (every run).

No JavaScript and no external assets, so the pages render offline and headless Chromium shows exactly the
cells written here (tests compare them with the markdown cell by cell; `code` spans render as ``<code>``).

Read at a glance: under each title comes the table itself; the preamble (paper, scoring, speed source) and
the notes (each run's signatures, orderings, floors) fold under a "How this was measured" toggle. A table
wider than the screen scrolls in its own box with its first column held (:mod:`bench.report.html_page`), so
the page works from 390 px to 1400 px. The every-run tables (each run under every recipe, the run list) are
on their own page: on the index they were most of its height.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.report import html_escape
from bench.report.html_page import head, record_link, scroll
from bench.report.stamp import BuildStamp
from bench.report.views import TableView

_CSS = """
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top;min-width:4.5em}
td.long{min-width:15em}td.longer{min-width:28em}td.rid{min-width:0}
th{background:#f3f3f3;font-weight:600}
tr:nth-child(even) td{background:#fafafa}
li{margin:2px 0;overflow-wrap:anywhere}
details.how{font-size:13px;margin:.3em 0 1em}details.how summary{cursor:pointer;color:#235}
nav ul{columns:2;max-width:70em}
p.first{margin:.2em 0 .4em;padding:.3em .6em;max-width:80em;background:#fff4e0;border-left:4px solid #c77700}
h2.part{font-size:1.6em;margin-top:1.6em;padding-top:.4em;border-top:3px solid #c9d3df}nav small{color:#555}
figure{margin:.5em 0;overflow-x:auto;max-width:100%}img{max-width:100%;height:auto;border:1px solid #ddd}
@media (max-width:700px){nav ul{columns:1;padding-left:1.2em}figure img{max-width:none}}
""".strip()

RUNS_PAGE = "runs.html"
#: a cell longer than these gets room to wrap in a few lines rather than one word a line (sane row heights)
LONG_CELL, LONGER_CELL = 40, 110


def _td(value: str, stick: bool, results: str | None) -> str:
    classes = ["stick"] if stick else []
    if html_escape.RUN_ID.fullmatch(value):  # the run list's id column: the short id, linked to its record
        classes.append("rid")
        body = record_link(value, results, html_escape.run_id(value, short=True))
    else:
        classes += ["longer"] if len(value) > LONGER_CELL else ["long"] if len(value) > LONG_CELL else []
        body = html_escape.inline(value, short_ids=True)
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<td{cls}>{body}</td>"


def view_html(view: TableView, results: str | None = None) -> str:
    """One view: its title, the table (scrolling in its own box), then the preamble and notes under one toggle.

    ``results``: the relative URL of the records folder (:func:`bench.report.html_page.results_href`)."""
    e = html_escape.text
    parts = [f'<section id="{e(view.key)}">', f"<h2>{e(view.title)}</h2>"]
    parts += [f'<p class="first">{html_escape.inline(text)}</p>' for text in view.lead]  # before the table: first
    if view.rows:
        held = view.header.index("Model") if "Model" in view.header else 0  # the row's name, not its section
        heads = "".join(('<th class="stick">' if i == held else "<th>") + f"{html_escape.inline(h)}</th>"
                        for i, h in enumerate(view.header))
        body = "".join("<tr>" + "".join(_td(c, i == held, results) for i, c in enumerate(row)) + "</tr>\n"
                       for row in view.rows)
        table = (f'<table id="table-{e(view.key)}" data-key="{e(view.key)}">'
                 f"<thead><tr>{heads}</tr></thead>\n<tbody>\n{body}</tbody></table>")
        parts.append(scroll(table, view.title))
    if view.preamble or view.notes:
        parts.append('<details class="how"><summary>How this was measured</summary>')
        if view.preamble:
            parts.append("<ul>" + "".join(f"<li>{html_escape.inline(p)}</li>" for p in view.preamble) + "</ul>")
        if view.notes:
            parts.append("<h3>Notes</h3><ul>" + "".join(f"<li>{html_escape.inline(n)}</li>" for n in view.notes)
                         + "</ul>")
        parts.append("</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _stamp(stamp: BuildStamp | None) -> str:
    return stamp.html() if stamp is not None else ""


#: a table needs this many reproduced rows to compare anything (an order, a Δ between rows)
LEAD_ROWS = 2


def lead_order(views: Sequence[TableView]) -> tuple[list[TableView], list[TableView]]:
    """The index's two parts: the tables with at least :data:`LEAD_ROWS` reproduced rows, most first (ties in
    paper order), then the rest in paper order."""
    lead = sorted((v for v in views if v.reproduced >= LEAD_ROWS), key=lambda v: -v.reproduced)
    return lead, [v for v in views if v.reproduced < LEAD_ROWS]


def _toc_item(view: TableView) -> str:
    e = html_escape.text
    n = view.reproduced
    return (f'<li><a href="#{e(view.key)}">{e(view.title)}</a> <small>({n} reproduced row{"" if n == 1 else "s"})'
            "</small></li>")


def page(
    views: Sequence[TableView],
    images: Sequence[tuple[str, str]],
    title: str = "bench leaderboard",
    leaderboards: Sequence[tuple[str, str]] = (),
    stamp: BuildStamp | None = None,
    runs_page: str | None = RUNS_PAGE,
) -> str:
    """The index: links to the per-task leaderboards (``(file name, task)``) and the runs page, then the paper
    tables that have reproduced rows, most first (:func:`lead_order`), then those with at most one, then the plots
    (``(file name, caption)``), and the build stamp. Each part's contents list comes right before it."""
    e = html_escape.text
    lead, rest = lead_order(views)
    boards = "".join(f'<li><a href="{e(src)}">{e(task)}</a></li>' for src, task in leaderboards)
    figs = "".join(
        f'<figure><img src="{e(src)}" alt="{e(cap)}"><figcaption>{e(cap)}</figcaption></figure>'
        for src, cap in images
    )
    runs = (f'<p>Every recorded run, and each run under every recipe it was scored with: '
            f'<a href="{e(runs_page)}">all runs</a>.</p>\n' if runs_page else "")
    parts = []
    if lead:
        parts.append(f'<h2 class="part" id="reproduced">Tables with reproduced rows</h2>\n<nav><ul>'
                     f'{"".join(_toc_item(v) for v in lead)}</ul></nav>\n' + "\n".join(view_html(v) for v in lead))
    if rest:
        parts.append(f'<h2 class="part" id="few-reproduced">Tables with fewer than {LEAD_ROWS} reproduced rows</h2>\n'
                     '<p>Published numbers, and what stops each row from running here (the Status column).</p>\n'
                     f'<nav><ul>{"".join(_toc_item(v) for v in rest)}</ul></nav>\n'
                     + "\n".join(view_html(v) for v in rest))
    return (
        head(title, _CSS)
        + f"<h1>{e(title)}</h1>\n"
        "<p>Generated by <code>bench table</code> from the run records in <code>results/</code> and the "
        "reported numbers in <code>bench/papers/</code>. Cells: reported / reproduced (budget) / Δ; how each "
        "table was measured (paper, recipe signatures, runs) folds out under it.</p>\n"
        + (f"<p>Leaderboards (every run of a task, ranked in significance clusters, grouped by the examples "
           f"scored):</p><ul>{boards}</ul>\n" if boards else "")
        + runs
        + "\n".join(parts) + "\n"
        f'<section id="plots"><h2>Plots</h2>{figs}</section>\n'
        + _stamp(stamp)
        + "</body></html>\n"
    )


def runs_page(views: Sequence[TableView], stamp: BuildStamp | None = None, results: str | None = None,
              title: str = "bench: every run") -> str:
    """The runs page: the run list and each run under every recipe (``results``: as :func:`view_html`)."""
    e = html_escape.text
    toc = "".join(f'<li><a href="#{e(v.key)}">{e(v.title)}</a></li>' for v in views)
    return (
        head(title, _CSS)
        + f"<h1>{e(title)}</h1>\n"
        '<p>Generated by <code>bench table</code> from the run records in <code>results/</code>; the paper tables '
        'and plots are on the <a href="index.html">index</a>. A run id shows as its 8-character spec hash: hover it '
        "for the whole id, or follow it to the record.</p>\n"
        f"<nav><ul>{toc}</ul></nav>\n"
        + "\n".join(view_html(v, results) for v in views) + "\n"
        + _stamp(stamp)
        + "</body></html>\n"
    )
