"""#57 §6 in a browser: fuzzed report text, escaped by the one escaper, rendered to HTML by a CommonMark parser
with raw HTML on (markdown-it, as GitHub-like viewers do) and by the harness's own HTML renderer, then opened in
headless Chromium. Every payload would set ``window.__pwned`` if it ran; none may, and no element the data could
have made (``img``, ``script``, ``svg``, ``iframe``, a ``javascript:`` link) may exist.

A control page holds the same payloads unescaped: the detector must see them run, or the test proves nothing.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from headless import CHROMIUM, Browser

from bench.report import html_escape, md_escape

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (scripts/install-system-deps.sh)"
)

PAYLOADS = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
            "<svg onload=window.__pwned=3>", "[x](javascript:window.__pwned=4)", "<iframe src=javascript:1>",
            "<a href=javascript:window.__pwned=5>a</a>"]
ATOMS = ["\\", "`", "``", "<", ">", "[", "]", "(", ")", "!", "&", "#", ";", "x", " ", "*", "_", "|", "-", "\n",
         "&#x60;", "&lt;", "<http://e.x>", "\"", "'", *PAYLOADS]
FOUND = ("JSON.stringify({pwned: window.__pwned === undefined ? null : window.__pwned, "
         "made: document.querySelectorAll('img, script, svg, iframe, a[href^=\"javascript\"]').length})")


def _strings(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = ["x \\`" + p + "`" for p in PAYLOADS] + ["``" + p + "``" for p in PAYLOADS]
    out += ["".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 10))) for _ in range(n)]
    return out


def _page(body: list[str]) -> str:
    return "<!doctype html><meta charset=utf-8><body>" + "\n".join(body) + "</body>"


def _found(browser: Browser, path: Path) -> dict:
    import json

    browser.open(path.resolve().as_uri())
    time.sleep(0.5)  # an image's onerror fires after the load
    return json.loads(browser.eval(FOUND))


def test_escaped_report_text_runs_nothing_in_a_browser(tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    strings = _strings(300, seed=57)
    table = "| h | i |\n|---|---|\n" + "".join(f"| {md_escape.cell(s)} | z |\n" for s in strings)
    bullets = "".join(f"- {md_escape.line(s)}\n" for s in strings)
    body = [md.render(table), md.render(bullets), *(f"<p>{html_escape.inline(s)}</p>" for s in strings)]
    escaped, control = tmp_path / "escaped.html", tmp_path / "control.html"
    escaped.write_text(_page(body), encoding="utf-8")
    control.write_text(_page([md.render("- " + p + "\n") for p in PAYLOADS]), encoding="utf-8")
    with Browser(800, 600) as browser:
        ran = _found(browser, control)
        assert ran["pwned"] is not None and ran["made"] > 0, "the detector did not see the unescaped payloads run"
        assert _found(browser, escaped) == {"pwned": None, "made": 0}
