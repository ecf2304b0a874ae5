"""#46 §3: user text is data, never markup; one rule for what a line is; `--meta` within limits.

In-process and fast: the escaping modules (markdown, HTML, terminal) against hostile strings, read back by a
real CommonMark/GFM parser (markdown-it, which rich already needs) and by ``html.parser``; every renderer of
the reports over a record whose every free-text field is hostile; the line rule through every reader.
The command-level probes (table, show, compare, export, submit on copies of committed records) are in
tests/test_probe_escape.py.
"""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from bench.api.text import BIDI_CONTROLS, join_lines, split_lines, visible
from bench.report import html_escape, md_escape, spans

REPO = Path(__file__).resolve().parents[1]

#: every way into markup we know of, in one string (and each alone below)
ATTACKS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[x](javascript:alert(3))",
    "![i](javascript:alert(4))",
    "<https://evil.example>",
    "a\n| forged | row |",
    "a\r\n| forged | row |",
    "a\u2028b\u2029c\x85d\x0be\x0cf\x1cg",
    "pipe | in a cell",
    "`lone backtick",
    "*em* _em_ ~~del~~ $x$",
    "&#x202e;&lt;b&gt;",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    "[ref]: javascript:alert(5)",
    "[red]x",
    "[/bold]",
    "a\\",
    "evil\u202eexe.txt\u2066\u200f",
    "\x1b[2Jclear\x07",
    "x \\`<img src=x onerror=alert(6)>`",  # #57: a backslash before a backtick got past the old escaper
    "``<img src=x onerror=alert(7)>``",
    "* nested list",
]
HOSTILE = "".join(ATTACKS)
SEPARATORS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _markup_tokens(text: str) -> list[str]:
    """Every raw HTML, link, image or autolink a CommonMark parser (raw HTML on) reads in ``text``."""
    from markdown_it import MarkdownIt

    found = []
    stack = list(MarkdownIt("commonmark", {"html": True}).enable("table").parse(text))
    while stack:
        tok = stack.pop()
        if tok.type in ("html_inline", "html_block", "link_open", "image"):
            found.append(f"{tok.type}: {tok.content or tok.attrs}")
        stack.extend(tok.children or [])
    return found


def _md_html(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)


class _Page(HTMLParser):
    """Tags, attributes and text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.rows = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self.rows += tag == "tr"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


def _assert_inert(p: _Page, allowed_scripts: int = 0) -> None:
    """No tag or attribute came from the data: no script beyond the page's own, no handler, no js: link, no
    image but the harness's, and no invisible character left in the text."""
    assert sum(tag == "script" for tag, _ in p.tags) <= allowed_scripts
    for tag, attrs in p.tags:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name, value)
            if name in ("href", "src", "action", "formaction", "xlink:href"):  # a link the data could aim
                assert "javascript:" not in (value or "").lower(), (tag, name, value)
        assert tag not in ("iframe", "object", "embed", "base", "form"), tag
        assert tag != "img" or dict(attrs).get("src") == "x.png", attrs  # only the harness's own figure
    text = "".join(p.text)
    assert not set(text) & set(BIDI_CONTROLS + "\u2028\u2029\x1b\x07\x85"), repr(text[:200])


# --- markdown ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("attack", [*ATTACKS, HOSTILE])
def test_a_markdown_cell_is_one_literal_cell(attack: str) -> None:
    md = "| a | b |\n|---|---|\n| " + md_escape.cell(attack) + " | x |\n"
    page = _page(_md_html(md))
    _assert_inert(page)
    assert page.rows == 2  # the header and one row: no forged row
    assert [t for t, _ in page.tags].count("td") == 2  # no extra cell
    assert not {"a", "em", "strong", "del", "h1", "blockquote", "li"} & {t for t, _ in page.tags}


@pytest.mark.parametrize("attack", [*ATTACKS, HOSTILE])
def test_a_markdown_bullet_is_one_literal_line(attack: str) -> None:
    page = _page(_md_html(f"- {md_escape.line(attack)}\n- next\n\n# {md_escape.line(attack)}\n"))
    _assert_inert(page)
    tags = [t for t, _ in page.tags]
    assert tags.count("li") == 2 and tags.count("h1") == 1, tags
    assert not {"a", "em", "strong", "del", "h2", "blockquote", "ol", "table", "img"} & set(tags), tags


def _shown(text: str) -> str:
    """What a reader sees of report text, a code span marked by one backtick each side (unescape_cell's form)."""
    return "".join(f"`{piece}`" if is_code else piece for is_code, piece in spans.pieces(visible(text)))


def test_code_spans_stay_code_and_cells_read_back() -> None:
    page = _page(_md_html("- run `a<b>|c`: " + md_escape.line("x") + "\n"))
    assert ("code", []) in page.tags
    for attack in [*ATTACKS, HOSTILE, "`code` and `lone", "a\\|b", "\\*"]:
        assert md_escape.unescape_cell(md_escape.cell(attack)) == _shown(attack)
    for attack in ("`code` and `lone", "a\\|b", "\\*", "plain text"):  # no grammar escape: as given
        assert _shown(attack) == visible(attack)


# --- one grammar, values escaped as they go in (#57) -------------------------------------------------------------
VALUES = ["plain", "a`b", "`", "``", "a\\", "\\`", "x \\`<img src=x onerror=alert(1)>`", " padded ", "`edge`",
          "|pipe|", "<b>", "&amp;", "$x$", "a\\\\b"]


@pytest.mark.parametrize("value", VALUES)
def test_a_value_escaped_as_it_goes_in_is_shown_exactly(value: str) -> None:
    """spans.lit/code make any value one literal piece, so markdown, HTML and the terminal show it as given."""
    assert spans.pieces(spans.lit(value)) == [(False, value)]
    assert spans.pieces(spans.code(value)) == [(True, value)]
    text = f"system {spans.code(value)}: {spans.lit(value)} and `a` span"
    assert spans.display(text) == f"system {value}: {value} and a span"
    cell = _md_html("| h |\n|---|\n| " + md_escape.cell(text) + " |\n")
    page = _page(cell)
    _assert_inert(page)
    assert "".join(page.text).strip().endswith(f"system {value}: {value} and a span".strip())
    assert [t for t, _ in page.tags].count("code") == 2 and "<img" not in cell
    html_page = _page("<p>" + html_escape.inline(text) + "</p>")
    assert "".join(html_page.text) == spans.display(text) and [t for t, _ in html_page.tags].count("code") == 2


def _fuzz_strings(n: int, seed: int) -> list[str]:
    import random

    atoms = ["\\", "`", "``", "<", ">", "<img src=x onerror=alert(1)>", "[", "]", "(", ")", "javascript:alert(1)",
             "!", "&", "#", ";", "x", " ", "*", "_", "~", "$", "|", "-", "=", "+", "1.", "\n", "&#x60;", "<script>",
             "</script>", "a_b", "<http://e.x>", ":", "\"", "'", "/", "{", "}", "@", "\u202e", "\t"]
    rng = random.Random(seed)
    return ["".join(rng.choice(atoms) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def test_fuzzed_text_renders_inert_and_exact_under_commonmark_with_html() -> None:
    """markdown-it with raw HTML on, 3,000 random strings of markup pieces in a cell, a bullet and a title: no tag
    but the table's, the list's and code; the text a reader sees is the text given; and the HTML renderer agrees."""
    import html as html_lib

    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
    for s in _fuzz_strings(3000, seed=57):
        want = spans.display(visible(s))
        out = md.render("| h | i |\n|---|---|\n| " + md_escape.cell(s) + " | z |\n")
        tags = {t for t, _ in _page(out).tags}
        cells = re.findall(r"<td>(.*?)</td>", out, re.S)
        assert tags <= {"table", "thead", "tbody", "tr", "th", "td", "code"}, (s, out)
        assert len(cells) == 2 and html_lib.unescape(re.sub(r"<[^>]+>", "", cells[0])).strip() == want.strip(), s
        out = md.render("- " + md_escape.line(s) + "\n- next\n\n# " + md_escape.line(s) + "\n")
        items = re.findall(r"<li>(.*?)</li>", out, re.S)
        assert {t for t, _ in _page(out).tags} <= {"ul", "li", "code", "h1"}, (s, out)
        assert len(items) == 2 and html_lib.unescape(re.sub(r"<[^>]+>", "", items[0])).strip() == want.strip(), s
        inline = html_escape.inline(s)
        assert {t for t, _ in _page(f"<p>{inline}</p>").tags} <= {"p", "code", "wbr"}, s
        assert html_lib.unescape(re.sub(r"<[^>]+>", "", inline)) == want, s


def test_plain_report_text_is_unchanged() -> None:
    """What the harness writes (snake_case names, [1] note marks, a * between spaces) is not escaped: the
    committed reports did not change. (A bullet that starts with ``* `` is escaped: ``- * x`` is a nested list.)"""
    for text in ("copy_source", "[1] run `x`", "a * / not measured", "p < 0.05", "UNILM [Dong et al., 2019]: x"):
        assert md_escape.line(text) == text
    assert md_escape.cell("* / not measured") == "* / not measured"
    assert md_escape.line("* / not measured") == "\\* / not measured"


# --- HTML --------------------------------------------------------------------------------------------
def test_html_text_and_attributes_are_inert() -> None:
    for attack in [*ATTACKS, HOSTILE]:
        page = _page(f'<p title="{html_escape.attr(attack)}">{html_escape.text(attack)}</p>'
                     f"<li>{html_escape.inline(attack)}</li>")
        _assert_inert(page)
        tags = [t for t, _ in page.tags]
        assert tags[:2] == ["p", "li"] and set(tags[2:]) <= {"code"}, tags


# --- terminal ------------------------------------------------------------------------------------------
def test_terminal_prints_markup_literally() -> None:
    from rich.console import Console

    from bench.env.term_escape import markup, plain

    for attack in [*ATTACKS, HOSTILE]:
        console = Console(record=True, width=400, color_system=None)
        console.print(f"[bold]{markup(attack, one_line=True)}[/]")
        console.print(plain(attack))
        out = console.export_text()
        assert "[red]x" in out if "[red]x" in attack else True
        assert "[/bold]" in out if "[/bold]" in attack else True
        assert not set(out) & set(BIDI_CONTROLS + "\u2028\u2029\x1b\x07\x85"), repr(out)


def test_an_error_message_with_markup_is_one_line_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    from bench.cli import common

    with pytest.raises(typer.Exit):
        common.fail("no record results/[/x]/[red]y.json")
    assert "[/x]/[red]y.json" in capsys.readouterr().err


# --- every renderer over a hostile record -------------------------------------------------------------------
FREE_TEXT_SKIP = {"run_id", "task", "split", "path", "sha256", "split_sha256", "kind", "status", "created",
                  "schema", "submitted_file"}


def hostile(value: Any, key: str = "") -> Any:
    """``value`` with every free-text string (not a lookup key the record needs) followed by :data:`HOSTILE`,
    every override and ``--meta`` key too."""
    if isinstance(value, dict):
        return {(k + HOSTILE if key in ("overrides", "meta") else k): hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [hostile(v, key) for v in value]
    if isinstance(value, str) and key not in FREE_TEXT_SKIP:
        return value + HOSTILE
    return value


def _hostile_records() -> list[dict[str, Any]]:
    from bench.report import load_records

    records = load_records(REPO / "results")
    out = []
    for rec in records:
        if rec["run_id"].startswith(("copy_source--quora", "convs2s_xsum", "unilm--squad_qg")):
            bad = hostile(copy.deepcopy(rec))
            bad["scores"] = {name: dict(sc, signature=sc["signature"] + HOSTILE)
                             for name, sc in rec["scores"].items()}
            out.append(bad)
    assert len(out) >= 3
    return [*records, *out]


class _NoTest:
    """A pair test that never runs: the renderers are what is checked here, not the bootstrap."""

    def check_recipe(self) -> None:
        from bench.report.significance import Untestable

        raise Untestable("not tested here " + HOSTILE)


def test_every_report_renderer_escapes_a_hostile_record() -> None:
    from bench.papers import all_tables
    from bench.report.html import page
    from bench.report.leaderboard import leaderboard_tasks, task_page
    from bench.report.markdown import document
    from bench.report.run_views import build_protocol_view, build_runs_view
    from bench.report.views import build_table_view

    records = _hostile_records()
    views = [build_protocol_view(records), build_runs_view(records)]
    views += [build_table_view(t, records, None) for t in all_tables()]
    md = document(views, title="t " + HOSTILE)
    rendered = _page(_md_html(md))
    _assert_inert(rendered)
    from bench.report.markdown import GENERATED

    assert _markup_tokens(md.replace(GENERATED, "")) == []  # the harness's own comment is the one HTML block
    shown = "".join(rendered.text)
    assert shown.count("<script>alert(1)</script>") >= 20 and "[x](javascript:alert(3))" in shown  # data, shown
    for line in md.splitlines():  # no line of the file starts a forged row or block
        assert not line.startswith(("| forged", "# heading", "> quote")), line
    index = _page(page(views, [("x.png", "cap " + HOSTILE)], title="t " + HOSTILE,
                       leaderboards=[("leaderboard-x.html", "x " + HOSTILE)]))
    _assert_inert(index)
    assert "".join(index.text).count("<script>alert(1)</script>") >= 20
    for task in leaderboard_tasks(records):
        board = _page(task_page(task, records, test=_NoTest()))  # type: ignore[arg-type]
        _assert_inert(board, allowed_scripts=1)  # the page's own
        assert "<script>alert(1)</script>" in "".join(board.text), task


def test_latency_and_launch_views_print_names_as_text() -> None:
    from rich.console import Console

    from bench.launch.view import state_view

    class Spec:
        overrides = {"k[/x]": "[red]v"}
        limit = None

    class Job:
        run_id, label, depends_on, spec = "r[/bold]", "job[red]x", (), Spec()

    console = Console(record=True, width=200, color_system=None)
    console.print(state_view([Job()], {Job.run_id: ("failed", "[/bold] log \u202e")},  # type: ignore[list-item]
                             title="t"))
    out = console.export_text()
    assert "[/bold] log \\u202e" in out and "job[red]x" in out and "k[/x]=[red]v" in out


# --- one line rule -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("sep", SEPARATORS)
def test_every_reader_agrees_on_what_a_line_is(sep: str, tmp_path: Path) -> None:
    """A Unicode line separator is a character inside a line for every reader: the scorer's (score, submit,
    compare of files), the task data's, and the stored outputs' (show, compare of runs, rescore)."""
    from bench.api.tasks import read_lines as data_lines
    from bench.runs.lookup import outputs_of
    from bench.scoring.inputs import read_hypotheses

    lines = ["first", f"a{sep}b", "last"]
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(join_lines(lines).encode("utf-8"))
    assert split_lines(join_lines(lines)) == lines
    assert read_hypotheses(hyp, expected=3, ref_label="x") == lines
    assert data_lines(hyp) == lines
    from bench.runs.outputs import sha256_text
    from bench.store.outputs import StoredRecord

    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "r.txt").write_bytes(hyp.read_bytes())
    rec = StoredRecord({"run_id": "r", "outputs": {"path": "outputs/r.txt", "sha256": sha256_text(join_lines(lines))}},
                       tmp_path / "r.json")
    assert outputs_of(rec) == lines


def test_crlf_is_refused_alike_by_score_and_submit(tmp_path: Path) -> None:
    from bench.scoring import ScoringError
    from bench.scoring.inputs import read_hypotheses

    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"a\r\nb\r\n")
    with pytest.raises(ScoringError, match="hyp.txt: hypothesis 1 contains a newline"):
        read_hypotheses(hyp, expected=2, ref_label="x")


def test_no_reader_of_outputs_splits_on_unicode_separators() -> None:
    """A new ``.splitlines()`` over outputs, references or submissions would disagree with the scorer."""
    readers = ["bench/runs/lookup.py", "bench/runs/rescore.py", "bench/scoring/inputs.py", "bench/api/tasks.py",
               "bench/workflows/submit.py", "bench/cli/score.py", "bench/cli/show.py", "bench/runs/rederive.py"]
    for rel in readers:
        assert ".splitlines()" not in (REPO / rel).read_text(encoding="utf-8"), rel


# --- --meta ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("item", "names"), [
    ("a b=c", "--meta key 'a b'"),
    ("k" * 65 + "=v", "--meta key"),
    ("<script>=v", "--meta key '<script>'"),
    ("note=x\ny", "--meta note"),
    ("note=x\u2028y", "--meta note"),
    ("note=x\u202ey", "--meta note"),
    ("note=\x1b[2J", "--meta note"),
    ("note=" + "x" * 501, "--meta note"),
    ("=v", "--meta '=v'"),
])
def test_meta_limits_name_the_field(item: str, names: str) -> None:
    from bench.workflows.submit import SubmissionError, parse_meta

    with pytest.raises(SubmissionError) as err:
        parse_meta([item])
    assert names in str(err.value)
    assert "\n" not in str(err.value)


def test_meta_within_limits_is_kept_as_given() -> None:
    from bench.workflows.submit import parse_meta

    got = parse_meta(["source=https://x.example/a?b=c", "what=<b>ConvS2S</b> [x](y)", "n.o-t_e=" + "x" * 500])
    assert got["what"] == "<b>ConvS2S</b> [x](y)" and len(got["n.o-t_e"]) == 500
    with pytest.raises(ValueError, match="given twice"):
        parse_meta(["a=1", "a=2"])


def test_committed_records_hold_no_hidden_characters() -> None:
    """The committed results render unchanged under the new escaping (the reports did not move)."""
    for path in sorted((REPO / "results").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert not re.search("[" + BIDI_CONTROLS + "\u2028\u2029]", json.loads(json.dumps(text))), path
