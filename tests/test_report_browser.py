"""The committed leaderboards and report index, opened in headless Chromium at 1400 px as a reader would.

For every reports/leaderboard-<task>.html and reports/index.html: nothing scrolls sideways
(``document.documentElement.scrollWidth <= 1400``, also with every toggle open); the first row of each
group has the group's best headline number; every degeneracy flag sits in the first columns, on screen
without sideways scrolling. Each page's screenshot is kept in .cache/test-artefacts/ (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from headless import CHROMIUM, Browser

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "reports"
ARTEFACTS = REPO / ".cache" / "test-artefacts"
WIDTH, HEIGHT = 1400, 2000
PAGES = sorted(p.name for p in REPORTS.glob("leaderboard-*.html")) + ["index.html"]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (scripts/install-system-deps.sh)"
)

# Per group: the headline value of each run row in page order, whether it is ranked, and where its flag is.
_GROUPS = """
Array.from(document.querySelectorAll('table.board')).map(function(t){
  return Array.from(t.tBodies[0].rows).filter(function(r){return r.classList.contains('run') && !r.hidden;})
    .map(function(r){
      var v=r.cells[3].getAttribute('data-v'), flag=r.cells[1].querySelector('.deg');
      var box=flag&&flag.getBoundingClientRect();
      return {run: r.getAttribute('data-run'), value: v===''?null:parseFloat(v), ranked: r.cells[0].textContent!=='–',
              degenerate: r.classList.contains('degenerate'), flag: flag ? flag.textContent : null,
              flagBox: box ? {left: box.left, right: box.right, width: box.width, height: box.height} : null,
              flagColumn: flag ? Array.prototype.indexOf.call(r.cells, flag.closest('td')) : null};});
})
"""


@pytest.fixture(scope="module")
def browser():
    with Browser(WIDTH, HEIGHT) as b:
        yield b


def _open(browser: Browser, name: str, fragment: str = "") -> None:
    browser.open((REPORTS / name).resolve().as_uri() + fragment)


def _open_everything(browser: Browser) -> None:
    browser.eval("document.querySelectorAll('details').forEach(function(d){d.open=true;});"
                 "document.querySelectorAll('tr.details').forEach(function(r){r.hidden=false;}); 0")


@pytest.mark.parametrize("name", PAGES)
def test_nothing_scrolls_sideways_at_1400px(browser: Browser, name: str) -> None:
    _open(browser, name)
    assert browser.eval("window.innerWidth") == WIDTH
    width = browser.eval("document.documentElement.scrollWidth")
    browser.screenshot(ARTEFACTS / f"{Path(name).stem}-{WIDTH}px.png")
    assert width <= WIDTH, f"{name} is {width} px wide at a {WIDTH} px window"
    _open_everything(browser)  # every details toggle and folded note open: still no sideways scroll
    opened = browser.eval("document.documentElement.scrollWidth")
    assert opened <= WIDTH, f"{name} with its details open is {opened} px wide"


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("leaderboard-")])
def test_each_group_starts_with_its_best_run_and_flags_are_on_screen(browser: Browser, name: str) -> None:
    _open(browser, name)
    groups = browser.eval(_GROUPS)
    assert groups, f"{name} has no group"
    for rows in groups:
        ranked = [r for r in rows if r["ranked"]]
        best = max(r["value"] for r in (ranked or rows) if r["value"] is not None)
        assert rows[0]["value"] == best, f"{name}: the first row {rows[0]['run']} is not its group's best"
        assert not ranked or rows[0]["ranked"]
        assert all(r["ranked"] for r in rows[: len(ranked)])  # the unranked (degenerate) runs come last
        for r in rows:
            assert bool(r["flag"]) == r["degenerate"]
            if r["flag"]:
                box = r["flagBox"]
                assert r["flag"] == "⚠ degenerate" and r["flagColumn"] == 1  # the column after the rank
                assert box["width"] > 0 and box["height"] > 0 and 0 <= box["left"] and box["right"] <= WIDTH


def test_a_reference_mark_is_on_the_first_screen(browser: Browser) -> None:
    """squad_qg's reference run (unranked in every group) is marked where the eye is: no scrolling either way."""
    _open(browser, "leaderboard-squad_qg.html")
    top = browser.eval("document.querySelector('tr.reference .badge.ref').getBoundingClientRect().bottom")
    assert 0 < top <= HEIGHT


def test_index_shows_each_table_before_its_notes(browser: Browser) -> None:
    _open(browser, "index.html")
    gaps = browser.eval(
        "Array.from(document.querySelectorAll('section[id] > .scroll > table')).map(function(t){"
        "var h=t.closest('section').querySelector('h2').getBoundingClientRect().bottom;"
        "return t.getBoundingClientRect().top - h;})"
    )
    assert gaps and max(gaps) < 40  # the table follows its title at once
    assert browser.eval("Array.from(document.querySelectorAll('details.how')).every(function(d){return !d.open;})")
    assert browser.eval("document.querySelectorAll('section[id] > details.how').length") >= 15


def test_a_group_re_sorts_by_speed_up_from_the_fragment(browser: Browser) -> None:
    _open(browser, "leaderboard-quora.html", "#sort=speedup&dir=desc")
    speeds = browser.eval(
        "Array.from(document.querySelector('table.board').tBodies[0].rows).filter(function(r){"
        "return r.classList.contains('run');}).map(function(r){var v=r.cells[6].getAttribute('data-v');"
        "return v===''?null:parseFloat(v);})"
    )
    measured = [s for s in speeds if s is not None]
    assert len(measured) >= 3 and measured == sorted(measured, reverse=True)
    assert speeds[: len(measured)] == measured  # runs without a speed-up go last


def test_details_toggle_shows_every_recipe(browser: Browser) -> None:
    _open(browser, "leaderboard-squad_qg.html")
    assert browser.eval("document.querySelector('tr.details').hidden")
    browser.eval("document.querySelector('button.more').click(); 0")
    text = browser.eval("(function(d){return d.hidden ? '' : d.innerText;})(document.querySelector('tr.details'))")
    for recipe in ("nqg", "unilm", "mist", "unilm-tok"):
        assert recipe in text.split()
