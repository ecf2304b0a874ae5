"""The committed leaderboards and report index, opened in headless Chromium at 1400 px as a reader would.

For every reports/leaderboard-<task>.html and reports/index.html: nothing scrolls sideways
(``document.documentElement.scrollWidth <= 1400``, also with every toggle open); the first ranked row of each
group has the group's best ranked headline number, and each reference baseline's marked line stands at its
score's place among the ranked runs; every degeneracy flag sits beside the system, on screen without sideways
scrolling; where a reference beats every ranked run, the page's first lines say so. Each page's screenshot is
kept in .cache/test-artefacts/ (git-ignored).
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

# Per group: the headline value of each run row in page order, whether it is ranked (a twin "=" counts: it stands
# right under its ranked owner), whether it is a reference's marked line, and where its flag is.
_GROUPS = """
Array.from(document.querySelectorAll('table.board')).map(function(t){
  return Array.from(t.tBodies[0].rows).filter(function(r){return r.classList.contains('run') && !r.hidden;})
    .map(function(r){
      var v=r.querySelector('td.head').getAttribute('data-v'), flag=r.querySelector('.badge.deg');
      var box=flag&&flag.getBoundingClientRect();
      return {run: r.getAttribute('data-run'), value: v===''?null:parseFloat(v),
              ranked: ['–', 'ref'].indexOf(r.cells[0].textContent)<0, rank: r.cells[0].textContent,
              reference: r.classList.contains('reference'),
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
        runs = [r for r in rows if not r["reference"]]
        ranked = [r for r in runs if r["ranked"]]
        if ranked:
            assert runs[0] is ranked[0] and runs[0]["value"] == max(r["value"] for r in ranked), \
                f"{name}: the first ranked row {runs[0]['run']} is not its group's best"
            assert all(r["ranked"] for r in runs[: len(ranked)])  # the unranked (degenerate) runs come last
        for i, r in enumerate(rows):  # a reference's marked line stands at its score's place among the ranked
            if r["reference"] and r["value"] is not None:
                assert r["rank"] == "ref"
                assert all(x["value"] >= r["value"] for x in rows[:i] if x["ranked"])
                assert all(x["value"] <= r["value"] for x in rows[i + 1:] if x["ranked"])
        for r in rows:
            assert bool(r["flag"]) == r["degenerate"]
            if r["flag"]:
                box = r["flagBox"]
                assert r["flag"] == "⚠ degenerate" and r["flagColumn"] == 1  # beside the system, after the rank
                assert box["width"] > 0 and box["height"] > 0 and 0 <= box["left"] and box["right"] <= WIDTH


def test_the_first_lines_say_that_nothing_ranked_beats_copying_the_input(browser: Browser) -> None:
    """Quora: copying the input (31.50 BLEU-4) beats every trained run (best 23.31); said before any table."""
    _open(browser, "leaderboard-quora.html")
    first = browser.eval("(function(p){return p && {text: p.innerText, top: p.getBoundingClientRect().top,"
                         "bottom: p.getBoundingClientRect().bottom};})(document.querySelector('p.first'))")
    assert first is not None, "leaderboard-quora.html does not say that no ranked run beats copy_source"
    assert first["text"].startswith("No ranked run beats the reference copy_source (no training).")
    assert "31.50" in first["text"] and "fairseq_transformer, 23.31" in first["text"]
    table_top = browser.eval("document.querySelector('table.board').getBoundingClientRect().top")
    lede_top = browser.eval("document.querySelector('p.lede').getBoundingClientRect().top")
    assert 0 < first["top"] < lede_top < table_top and first["bottom"] <= HEIGHT
    # and the marked line of copy_source heads the group's table, at its score's place
    assert browser.eval("document.querySelector('table.board tbody tr.run').classList.contains('reference')")


def test_a_reference_mark_is_on_the_first_screen(browser: Browser) -> None:
    """squad_qg's reference run (unranked in every group) is marked where the eye is: no scrolling either way."""
    _open(browser, "leaderboard-squad_qg.html")
    top = browser.eval("document.querySelector('tr.reference .badge.ref').getBoundingClientRect().bottom")
    assert 0 < top <= HEIGHT


def test_index_shows_each_table_before_its_notes(browser: Browser) -> None:
    _open(browser, "index.html")
    gaps = browser.eval(  # from the title, or the first-lines note right under it (a reference beats every row)
        "Array.from(document.querySelectorAll('section[id] > .scroll > table')).map(function(t){"
        "var above=t.closest('.scroll').previousElementSibling;"
        "return t.getBoundingClientRect().top - above.getBoundingClientRect().bottom;})"
    )
    assert gaps and max(gaps) < 40  # the table follows its title (and its first-lines note) at once
    assert browser.eval("Array.from(document.querySelectorAll('section[id] > .scroll')).every(function(s){"
                        "var a=s.previousElementSibling; return a.tagName==='H2' || a.classList.contains('first');})")
    assert browser.eval("Array.from(document.querySelectorAll('details.how')).every(function(d){return !d.open;})")
    assert browser.eval("document.querySelectorAll('section[id] > details.how').length") >= 15


def test_a_group_re_sorts_by_speed_up_from_the_fragment(browser: Browser) -> None:
    _open(browser, "leaderboard-quora.html", "#sort=speedup&dir=desc")
    speeds = browser.eval(
        "Array.from(document.querySelector('table.board').tBodies[0].rows).filter(function(r){"
        "return r.classList.contains('run');}).map(function(r){"
        "var v=r.querySelector('td.speed').getAttribute('data-v');"
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
