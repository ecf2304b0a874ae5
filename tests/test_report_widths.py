"""The committed pages in headless Chromium at 1400, 800 and 390 px: nothing is cut off, rows stay sane.

At each width, on every reports/*.html: the page never scrolls sideways (a wide table scrolls in its own
box); every cell of each leaderboard's score and speed-up columns has a size and lies inside its table's
scrollable area, reachable by scrolling that box; a box that scrolls holds its rank and system (index: the
row's name) in view; rows stay under a sane height; a run id in a table is one line box; every page ends in its
build stamp. Screenshots go to .cache/test-artefacts/ (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from headless import CHROMIUM, Browser

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
ARTEFACTS = REPO / ".cache" / "test-artefacts"
WIDTHS = (1400, 800, 390)
PAGES = sorted(p.name for p in REPORTS.glob("*.html"))
#: the tallest a table row may be (a leaderboard row: a few lines; a paper table's longest status cell)
MAX_ROW = {"board": 120, "table": 300}

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (scripts/install-system-deps.sh)"
)

# Per leaderboard run row: the score (column 3) and speed-up (column 6) cells, measured against their box.
_CELLS = """
Array.from(document.querySelectorAll('table.board')).map(function(t){
  var box=t.closest('.scroll'), b=box.getBoundingClientRect();
  return Array.from(t.tBodies[0].rows).filter(function(r){return r.classList.contains('run');}).map(function(r){
    return [3,6].map(function(i){var c=r.cells[i].getBoundingClientRect();
      return {w:c.width, h:c.height, left:c.left-b.left+box.scrollLeft, right:c.right-b.left+box.scrollLeft,
              scrollW:box.scrollWidth, clientW:box.clientWidth, style:getComputedStyle(r.cells[i]).visibility};});
  });
})
"""

_ROWS = """
Array.from(document.querySelectorAll('.scroll > table')).map(function(t){
  return {kind: t.classList.contains('board') ? 'board' : 'table',
          key: t.getAttribute('data-key')||t.getAttribute('data-group'),
          tallest: Math.max.apply(null, Array.from(t.tBodies[0].rows).filter(function(r){return !r.hidden;})
                                  .map(function(r){return r.getBoundingClientRect().height;}))};
})
"""

# Scroll each box to its end: the held cells (.stick) of its first row stay at the box's left edge.
_HELD = """
Array.from(document.querySelectorAll('.scroll')).filter(function(s){return s.scrollWidth>s.clientWidth;})
  .map(function(s){s.scrollLeft=s.scrollWidth; var b=s.getBoundingClientRect();
    var held=s.querySelector('tbody tr .stick'); var c=held.getBoundingClientRect();
    var r={left:c.left-b.left, right:c.right-b.left, clientW:s.clientWidth}; s.scrollLeft=0; return r;})
"""

_RIDS = """
Array.from(document.querySelectorAll('.scroll code.rid')).filter(function(c){return c.offsetParent!==null;})
  .map(function(c){
  return {text: c.textContent, boxes: c.getClientRects().length};})
"""


@pytest.fixture(scope="module", params=WIDTHS)
def browser(request):
    with Browser(request.param, 1000) as b:
        yield b


def _open(browser: Browser, name: str) -> None:
    browser.open((REPORTS / name).resolve().as_uri())


@pytest.mark.parametrize("name", PAGES)
def test_pages_fit_and_keep_every_column_reachable(browser: Browser, name: str) -> None:
    width = browser.width
    _open(browser, name)
    assert browser.eval("window.innerWidth") == width
    browser.screenshot(ARTEFACTS / f"{Path(name).stem}-{width}px.png")
    assert browser.eval("document.documentElement.scrollWidth") <= width, f"{name} scrolls sideways at {width} px"
    for row in browser.eval(_ROWS):
        assert row["tallest"] <= MAX_ROW[row["kind"]], f"{name} {row['key']}: a {row['tallest']:.0f} px row at {width}"
    for held in browser.eval(_HELD):  # a scrolled box keeps the row's name in view
        assert 0 <= held["left"] and held["right"] <= held["clientW"] and held["right"] - held["left"] > 20
    for rid in browser.eval(_RIDS):
        assert rid["boxes"] == 1, f"{name}: {rid['text']!r} breaks over {rid['boxes']} lines at {width} px"
    assert browser.eval("document.getElementById('build-stamp').textContent").startswith("Built ")


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("leaderboard-")])
def test_score_and_speed_cells_are_on_the_page(browser: Browser, name: str) -> None:
    _open(browser, name)
    groups = browser.eval(_CELLS)
    assert groups
    for rows in groups:
        for score, speed in rows:
            for cell in (score, speed):
                assert cell["w"] > 20 and cell["h"] > 0 and cell["style"] == "visible"
                assert 0 <= cell["left"] and cell["right"] <= cell["scrollW"] + 1  # inside the scrollable area
                if cell["right"] > cell["clientW"]:
                    assert cell["scrollW"] > cell["clientW"]  # past the edge only where the box scrolls to it


def test_index_keeps_the_every_run_tables_on_their_own_page(browser: Browser) -> None:
    _open(browser, "index.html")
    assert browser.eval("document.querySelector('a[href=\"runs.html\"]') !== null")
    assert browser.eval("document.getElementById('protocol-sensitivity')") is None
    assert browser.eval("document.documentElement.scrollHeight") < 30000
    _open(browser, "runs.html")
    assert browser.eval("document.querySelectorAll('#protocol-sensitivity tbody tr').length") > 50
