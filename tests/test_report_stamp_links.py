"""The build stamp (what --check skips), record links from any --reports-dir, and code spans on a page."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from bench.report import html_escape
from bench.report.html_page import record_link, results_href
from bench.report.stamp import BuildStamp, build_stamp, same, strip

RID = "unilm--squad_qg--test--cpu--s42--0123abcd"


def test_the_stamp_is_one_line_that_check_skips() -> None:
    when = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    a = BuildStamp(when, "a" * 40, dirty=True).html()
    b = BuildStamp(when.replace(hour=13), "b" * 40).html()
    assert a.count("\n") == 1 and "2024-05-01 12:00 UTC" in a and "aaaaaaaaaaaa" in a and "uncommitted" in a
    page = "<p>x</p>\n{}</body>\n"
    assert strip(page.format(a)) == strip(page.format(b)) == "<p>x</p>\n</body>\n"
    assert same(page.format(a), page.format(b))
    assert not same(page.format(""), page.format(a))  # a page without its stamp is out of date
    assert not same(page.format(a), page.format(a).replace("x", "y"))


def test_the_stamp_outside_git_and_with_source_date_epoch(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    s = build_stamp(tmp_path)
    assert s.commit is None and s.time == datetime(1970, 1, 2, tzinfo=timezone.utc)
    assert "no commit" in s.html()


def test_record_links_are_relative_or_absent(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert results_href(repo / "results", repo / "reports") == "../results/"
    assert results_href(repo / "results", repo / "site" / "pages") == "../../results/"
    assert results_href(Path("/results-a"), Path("/reports-b")) is None  # only through the filesystem root
    assert record_link(RID, None, "x") == "x"
    assert record_link(RID, "../results/", "x") == f'<a href="../results/{RID}.json">x</a>'


def test_code_spans_render_after_escaping_and_run_ids_break_only_between_fields() -> None:
    out = html_escape.inline("run `<b>` then `" + RID + "` & <i>")
    assert out.startswith("run <code>&lt;b&gt;</code> then <code class=\"rid\"")
    assert "&amp; &lt;i&gt;" in out and "<b>" not in out and "<i>" not in out
    assert "unilm--<wbr>squad_qg--<wbr>test" in out
    short = html_escape.run_id(RID, short=True)
    assert ">0123abcd</code>" in short and f'title="{RID}"' in short
    assert html_escape.breakable("a_b-c<") == "a_<wbr>b-<wbr>c&lt;"
