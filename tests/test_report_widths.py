"""The committed pages in headless Chromium at 1400, 800 and 390 px: nothing is cut off, rows stay sane.

At each width, on every reports/*.html: the page never scrolls sideways (a wide table scrolls in its own
box); every cell of each leaderboard's score and speed-up columns has a size and lies inside its table's
scrollable area, reachable by scrolling that box; a box that scrolls holds its rank and system (index: the
row's name) in view; rows stay under a sane height; a run id in a table is one line box; every page ends in its
build stamp. What must be seen without scrolling is: at 390 px a leaderboard's rank, system, score and CI; from
800 px its speed-up too; plot text keeps its natural size (no 6 px labels on a phone). The same checks run on a
page built here from constructed records, whose first lines must say that a reference beats every ranked run.
Screenshots go to .cache/test-artefacts/ (git-ignored).
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

# Per leaderboard run row: the score and (where the page has the column) speed-up cells, measured against their box.
_CELLS = """
Array.from(document.querySelectorAll('table.board')).map(function(t){
  var box=t.closest('.scroll'), b=box.getBoundingClientRect();
  return Array.from(t.tBodies[0].rows).filter(function(r){return r.classList.contains('run');}).map(function(r){
    return ['td.head','td.speed'].map(function(sel){var cell=r.querySelector(sel); if(!cell){return null;}
      var c=cell.getBoundingClientRect();
      return {w:c.width, h:c.height, left:c.left-b.left+box.scrollLeft, right:c.right-b.left+box.scrollLeft,
              scrollW:box.scrollWidth, clientW:box.clientWidth, style:getComputedStyle(cell).visibility};});
  });
})
"""

# Unscrolled, each run row's named parts against the visible part of its box: [name, left, right, box width].
_VISIBLE = """
(function(sels){return Array.from(document.querySelectorAll('table.board')).map(function(t){
  var box=t.closest('.scroll'); box.scrollLeft=0; var b=box.getBoundingClientRect();
  return Array.from(t.tBodies[0].rows).filter(function(r){return r.classList.contains('run');}).map(function(r){
    return sels.map(function(sel){var el=r.querySelector(sel); if(!el){return [sel, null, null, box.clientWidth];}
      var c=el.getBoundingClientRect(); return [sel, c.left-b.left, c.right-b.left, box.clientWidth];});});
});})
"""

# Every SVG label and tick: its rendered font size (px) and how much the plot is scaled from its natural width.
_PLOT_TEXT = """
Array.from(document.querySelectorAll('svg.plot')).map(function(svg){
  var scale=svg.getBoundingClientRect().width/parseFloat(svg.getAttribute('width'));
  return Array.from(svg.querySelectorAll('text.lbl, text.tick')).map(function(t){
    return parseFloat(getComputedStyle(t).fontSize)*scale;});
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
            for cell in (c for c in (score, speed) if c is not None):
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


#: what must be on screen without scrolling a group's box, from this width up
ON_SCREEN = {390: ("td.rank", "td.sys", "td.head", "td.head .ci"), 800: ("td.rank", "td.sys", "td.head", "td.speed")}


def _assert_on_screen(browser: Browser, name: str) -> None:
    wanted = [sel for w, sels in ON_SCREEN.items() if browser.width >= w for sel in sels]
    for rows in browser.eval(f"({_VISIBLE})({wanted!r})"):
        for parts in rows:
            for sel, left, right, client in parts:
                if left is None:  # the page has no such column (no speed-up measured), or the run no CI
                    assert sel in ("td.speed", "td.head .ci")
                    continue
                assert 0 <= left and right <= client + 1, \
                    f"{name} at {browser.width} px: {sel} ends at {right:.0f} px, past the {client} px on screen"


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("leaderboard-")])
def test_rank_system_score_and_ci_are_on_screen_without_scrolling(browser: Browser, name: str) -> None:
    """390 px: rank, system, score and its CI; 800 px and up: the speed-up too."""
    _open(browser, name)
    _assert_on_screen(browser, name)


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith(("leaderboard-", "index"))])
def test_plot_text_is_readable(browser: Browser, name: str) -> None:
    """No plot is shrunk to fit a phone: SVG labels stay at least 10 px, an index figure at its natural width
    (scrolling in its own box)."""
    _open(browser, name)
    for sizes in browser.eval(_PLOT_TEXT):
        assert sizes and min(sizes) >= 10, f"{name}: plot text {min(sizes):.1f} px at {browser.width} px"
    for img in browser.eval("Array.from(document.querySelectorAll('figure img')).map(function(i){"
                            "return [i.getAttribute('src'), i.getBoundingClientRect().width, i.naturalWidth];})"):
        src, shown, natural = img
        assert natural > 0 and shown >= min(natural, 700) - 1, f"{name}: {src} shrunk to {shown:.0f} px"


@pytest.fixture(scope="module")
def constructed(tmp_path_factory) -> Path:
    """A quora board from constructed records: a reference that beats every ranked run, a degenerate run, a
    submission, long system names with settings, and speed-ups from the committed latency record."""
    from test_leaderboard_page import HEALTHY, Scripted, _rec

    from bench.report.leaderboard import task_page
    from bench.store.latency import load_latency_records

    records = [
        _rec("fairseq_nat", 14.7), _rec("fairseq_transformer", 23.3), _rec("encoder_minilm_l6", 23.1),
        _rec("copy_source", 31.5), _rec("collapsed_model_with_a_long_name", 40.0,
                                          stats=dict(HEALTHY, most_frequent_share=0.5), overrides={"beam": 5}),
        _rec("nqg", 12.0, kind="external"), _rec("mist_minilm_l6", 11.5, overrides={"iterations": 3}, tag="1"),
    ]
    out = tmp_path_factory.mktemp("board") / "leaderboard-quora.html"
    out.write_text(task_page("quora", records, load_latency_records(REPO / "results"), test=Scripted(set())),
                   encoding="utf-8")
    return out


def test_a_constructed_board_fits_and_says_first_that_the_reference_beats_every_run(browser: Browser,
                                                                                      constructed: Path) -> None:
    browser.open(constructed.resolve().as_uri())
    browser.screenshot(ARTEFACTS / f"constructed-board-{browser.width}px.png")
    assert browser.eval("document.documentElement.scrollWidth") <= browser.width
    _assert_on_screen(browser, "constructed board")
    first = browser.eval("(function(p){var b=p.getBoundingClientRect(); return {text:p.innerText, top:b.top, "
                         "bottom:b.bottom};})(document.querySelector('p.first'))")
    assert first["text"].startswith("No ranked run beats the reference copy_source (no training).")
    assert ("31.50 [31.20, 31.80] against the best ranked run, fairseq_transformer, 23.30 [23.00, 23.60]"
            in first["text"])
    assert 0 < first["top"] and first["bottom"] <= browser.height  # on the first screen, at every width
    assert first["bottom"] <= browser.eval("document.querySelector('table.board').getBoundingClientRect().top")
    heads = browser.eval("Array.from(document.querySelectorAll('table.board th')).map(function(t){"
                         "return t.textContent;})")
    assert "Flag" not in heads and "Examples" not in heads and "Speed-up" in heads  # no always-empty column
