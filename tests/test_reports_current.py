"""Reproduction check: the committed reports/ are exactly what the committed results/ produce."""

from pathlib import Path

from bench.report import render_all

REPO = Path(__file__).resolve().parents[1]


def test_committed_reports_match_committed_records():
    problems = render_all(REPO / "results", REPO / "reports", check=True)
    assert problems == [], "reports/ is stale; run `bench table` and commit:\n" + "\n".join(map(str, problems))
