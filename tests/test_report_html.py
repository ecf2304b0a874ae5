"""The static HTML leaderboard, rendered by headless Chromium, shows the markdown's numbers."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bench.report import render_all
from bench.report.markdown import parse_tables

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "records"
CHROMIUM = Path("/usr/bin/chromium")


class _Tables(HTMLParser):
    """Collects every <table data-key=...> as header + rows of cell texts, read back to the markdown's strings:
    a ``<code>`` span is `code`, and a short run id (``<code class="rid short" title=ID>``) is its whole id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._key: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._short = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("data-key"):
            self._key = a["data-key"]
            self.tables[self._key] = []
        elif tag == "tr" and self._key:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "code" and self._cell is not None:
            self._short = "short" in (a.get("class") or "").split()
            self._cell.append(a.get("title") or "" if self._short else "`")

    def handle_endtag(self, tag):
        if tag == "code" and self._cell is not None:
            self._cell.append("" if self._short else "`")
            self._short = False
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._key:
            self.tables[self._key].append(self._row)
            self._row = None
        elif tag == "table":
            self._key = None

    def handle_data(self, data):
        if self._cell is not None and not self._short:
            self._cell.append(data)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    render_all(FIXTURES, out)
    return out


def _dump_dom(page: Path | str, profile: Path) -> str:
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page if isinstance(page, str) else page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless check needs Debian chromium at /usr/bin/chromium "
    "(apt-get install -y chromium); CI installs it",
)
def test_html_page_shows_the_markdown_numbers(reports, tmp_path):
    dom = _dump_dom(reports / "index.html", tmp_path / "profile")
    parser = _Tables()
    parser.feed(dom)
    parser.feed(_dump_dom(reports / "runs.html", tmp_path / "profile"))  # the every-run tables have their own page
    html_tables = parser.tables

    expected: dict[str, list[list[str]]] = {}
    for md_file in sorted(reports.glob("*-table*.md")):
        [(header, rows)] = parse_tables(md_file.read_text(encoding="utf-8"))
        expected[md_file.stem] = [header] + rows
    proto, runs = parse_tables((reports / "protocol-sensitivity.md").read_text(encoding="utf-8"))
    expected["protocol-sensitivity"] = [proto[0]] + proto[1]
    expected["runs"] = [runs[0]] + runs[1]

    assert sorted(html_tables) == sorted(expected)
    for key, grid in expected.items():
        assert html_tables[key] == grid, f"HTML table {key} differs from its markdown"
    # The reproduced numbers really are on the page (not only the reported ones).
    (mist_minilm,) = [row for row in html_tables["mist-table1"] if row[1] == "MIST(MiniLM) †"]
    assert "43.87(+2.17) / 40.25 (cpu) / −3.62" in mist_minilm
    assert "<img" in dom and "pareto-squad_qg.png" in dom


def test_html_is_self_contained(reports):
    page = (reports / "index.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<link" not in page  # renders offline, exactly as written
    for src in ("pareto-squad_qg.png", "mist-table6-iterations.png"):
        assert f'src="{src}"' in page and (reports / src).is_file()


def _leaderboard_rows(dom: str) -> list[tuple[str, bool, list[str]]]:
    """(budget, shown, cell texts) of every run row, in page order (Chromium writes hidden="")."""
    import re

    rows = re.findall(r'<tr class="run[^"]*" data-budget="([^"]*)"[^>]*?(hidden="")?>(.*?)</tr>', dom, re.S)
    return [(budget, not hidden, [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", body,
                                                                                       re.S)])
            for budget, hidden, body in rows]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="headless check needs /usr/bin/chromium (CI installs it)")
def test_task_leaderboard_sorts_and_filters_in_a_browser(reports, tmp_path):
    """Every record of the task is on its page, best first; the fragment's sort and budget filter are applied."""
    import json

    page = reports / "leaderboard-squad_qg.html"
    assert 'href="leaderboard-squad_qg.html"' in (reports / "index.html").read_text(encoding="utf-8")
    records = [r for r in (json.loads(p.read_text()) for p in FIXTURES.glob("*squad_qg--*.json"))
               if r["status"] == "complete"]
    base = page.resolve().as_uri()
    plain = _leaderboard_rows(_dump_dom(base, tmp_path / "p1"))
    assert len(plain) == len(records) and all(shown for _, shown, _ in plain)
    col = 2  # rank, system (with its flag), headline
    assert [(cells[0], cells[col].split()[0]) for _, _, cells in plain if cells[col]] == [("1", "10.25")]
    assert [cells[0] for _, _, cells in plain if not cells[col]] == ["–"]  # fixture02 has no nqg score: unranked
    ascending = _leaderboard_rows(_dump_dom(base + "#sort=headline&dir=asc", tmp_path / "p2"))
    assert len(ascending) == len(plain)  # each group re-sorts its own rows (the browser test sorts a real group)
    assert not any(shown for _, shown, _ in _leaderboard_rows(_dump_dom(base + "#budget=paper", tmp_path / "p4")))
    cpu = _leaderboard_rows(_dump_dom(base + "#budget=cpu", tmp_path / "p5"))
    assert all(b == "cpu" and shown for b, shown, _ in cpu)


def test_task_leaderboard_is_self_contained_and_flags_degenerate_runs(reports):
    page = (reports / "leaderboard-squad_qg.html").read_text(encoding="utf-8")
    assert "<link" not in page and " src=" not in page  # inline script and style only: works offline
    assert "⚠ degenerate" in page or 'class="degenerate"' not in page
