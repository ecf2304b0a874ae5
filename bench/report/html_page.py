"""What every HTML page shares: the responsive base style, the head, the wide-table wrapper, record links.

Why one module: the index, the runs page and each leaderboard must behave alike from a phone (390 px) to a
desktop (1400 px). A table wider than the screen scrolls inside its own box (``div.scroll``) with its first
column (a leaderboard: the rank and the system) held in view, so the page itself never scrolls sideways and
no score or speed column is cut off; run ids in tables are their 8-character spec hash on one line, the whole
id in the title and the link.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench.api.paths import resolved
from bench.report import html_escape

BASE_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:1.5em 2em;color:#222;max-width:1320px;line-height:1.35}
h1{margin:0 0 .3em;overflow-wrap:anywhere}h2{margin:1.4em 0 .3em}
code{background:#f3f3f3;padding:0 2px;overflow-wrap:anywhere}
code.rid{overflow-wrap:normal;word-break:normal}code.rid.short{white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%;margin:.4em 0;-webkit-overflow-scrolling:touch}
.scroll:focus{outline:1px dotted #888}
.scroll>table{margin:0}
.scroll .stick{position:sticky;left:0;z-index:1;background:#fff;box-shadow:inset -1px 0 #bbb}
.scroll th.stick{background:#f3f3f3}
footer.stamp{margin:2em 0 .5em;padding-top:.5em;border-top:1px solid #ddd;color:#555;font-size:12px}
@media (max-width:700px){body{margin:.8em .75em}h1{font-size:1.4em}h2{font-size:1.15em}}
""".strip()


def head(title: str, css: str) -> str:
    """``<!DOCTYPE html>`` through ``<body>``: the charset, the phone viewport, the title and one inline style."""
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{html_escape.text(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{BASE_CSS}\n{css}</style></head><body>\n")


def scroll(table: str, label: str) -> str:
    """A wide table in its own horizontally scrolling box (focusable, so a keyboard can scroll it)."""
    return f'<div class="scroll" tabindex="0" role="region" aria-label="{html_escape.attr(label)}">{table}</div>'


def results_href(results_dir: Path | str | None, reports_dir: Path | str | None) -> str | None:
    """The relative URL from the pages to the records, or ``None`` when no relative link reaches them.

    A link is written only when both folders lie in one tree below the filesystem root (a checkout, a
    published site): a path climbing to ``/`` would work from this disk alone, never where the pages are served.
    """
    if results_dir is None or reports_dir is None:
        return None
    res, out = resolved(results_dir, "--results-dir"), resolved(reports_dir, "--reports-dir")
    try:
        common = Path(os.path.commonpath([res, out]))
        rel = os.path.relpath(res, out)
    except ValueError:  # two drives
        return None
    if common == Path(common.anchor):
        return None
    return Path(rel).as_posix().rstrip("/") + "/"


def record_link(rid: str, base: str | None, inner: str) -> str:
    """``inner`` linked to the run's record JSON when ``base`` (from :func:`results_href`) reaches it."""
    if base is None:
        return inner
    return f'<a href="{html_escape.attr(base + rid + ".json")}">{inner}</a>'
