"""Submissions (#21): outputs made elsewhere, scored, stored as `external` records, shown as submitted rows."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.store.records import RunRecord, load_records

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "examples" / "bench_example_plugin" / "bench_include.py"


def bench(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BENCH_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "bench", "--include", str(INCLUDE), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=300)


def test_submit_scores_every_default_recipe_and_claims_nothing_it_did_not_do(tmp_path: Path) -> None:
    hyp = tmp_path / "outputs.txt"
    hyp.write_text("\n".join(["the orchestra played three new pieces", "the hikers reached the top", "x", "y",
                              "the teacher read a short story", "the farmers sold apples"]) + "\n")
    results = tmp_path / "results"
    out = bench("submit", "--name", "my_model", "--task", "toy_pairs", "--hyp", str(hyp), "--results-dir",
                str(results), "--meta", "source=https://example.org/outputs.txt", "--meta", "by=someone",
                tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    (path,) = results.glob("my_model--toy_pairs--test--external--*.json")
    rec = json.loads(path.read_text())
    RunRecord.from_json(rec)  # a valid record
    assert rec["kind"] == "external" and rec["spec"]["budget"] == "external"
    assert rec["environment"] == {} and rec["model"] == {} and rec["training_curve"] is None
    assert rec["submission"] == {"name": "my_model", "paper": None, "row": None,
                                 "meta": {"source": "https://example.org/outputs.txt", "by": "someone"}}
    assert set(rec["scores"]) == {"exact_match", "sacrebleu"}
    # rows 1 and 5 match their references exactly
    assert rec["scores"]["exact_match"]["metrics"]["exact_match"] == pytest.approx(200 / 6)
    stored = (ROOT / rec["outputs"]["path"]) if not Path(rec["outputs"]["path"]).is_absolute() \
        else Path(rec["outputs"]["path"])
    assert stored.read_text() == hyp.read_text() and rec["outputs"]["copied"] is True
    # the same outputs again: the record is kept, not re-scored
    again = bench("submit", "--name", "my_model", "--task", "toy_pairs", "--hyp", str(hyp), "--results-dir",
                  str(results), tmp_path=tmp_path)
    assert again.returncode == 0 and len(list(results.glob("*.json"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--name", "bad name"), "use letters, digits"),
        (("--name", "ok", "--row", "BART"), "--row needs --paper"),
        (("--name", "ok", "--paper", "mist:1", "--row", "Bart"), "is not a row of mist:1"),
        (("--name", "ok", "--meta", "novalue"), "expected key=value"),
    ],
)
def test_bad_submissions_are_one_line_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    hyp = tmp_path / "h.txt"
    hyp.write_text("a\n" * 6)
    out = bench("submit", "--task", "toy_pairs", "--hyp", str(hyp), "--results-dir", str(tmp_path), *args,
                tmp_path=tmp_path)
    assert out.returncode == 2 and message in " ".join(out.stderr.split()) and "Traceback" not in out.stderr


def test_a_short_file_names_both_counts(tmp_path: Path) -> None:
    hyp = tmp_path / "h.txt"
    hyp.write_text("a\n" * 5)
    out = bench("submit", "--name", "short", "--task", "toy_pairs", "--hyp", str(hyp), "--results-dir",
                str(tmp_path), tmp_path=tmp_path)
    assert out.returncode == 2 and "5" in out.stderr and "6" in out.stderr


def _external(task: str, split: str, scores: dict, paper: str | None, row: str | None) -> dict:
    return RunRecord(
        run_id=f"sub--{task}--{split}--external--00000000", created="2026-11-25T00:00:00+00:00", kind="external",
        spec={"system": "sub", "task": task, "split": split, "budget": "external", "overrides": {}},
        harness={}, environment={}, system={"name": "sub", "family": "submitted"},
        data={"split_sha256": "0" * 64, "n_examples": 11877, "partial": False, "note": ""},
        outputs={"path": "x", "sha256": "ab" * 32, "n": 11877}, model={}, output_stats={}, training_curve=None,
        scores={name: {"signature": f"qg:{name}|test", "metrics": m, "ci": {}, "n_items": 6652, "notes": []}
                for name, m in scores.items()},
        latency=None, timings={}, submission={"name": "sub", "paper": paper, "row": row, "meta": {"by": "x"}},
    ).to_json()


def test_a_submission_tied_to_a_paper_row_stands_beside_it_never_in_it() -> None:
    from bench.papers import get_table
    from bench.report.views import build_table_view

    table = get_table("mist", "1")
    records = [copy.deepcopy(r) for r in load_records(ROOT / "results")]
    sub = _external("squad_qg", "test", {"unilm": {"bleu4": 17.5, "meteor": 23.0, "rougeL": 42.0}}, "mist:1", "bart")
    view = build_table_view(table, [*records, sub], None)
    bart = [r for r in view.rows if r[1].startswith("BART(Lewis et al. 2020)")]
    assert len(bart) == 2  # the paper's row, unchanged, and the submitted row below the table
    paper_row, submitted = bart
    assert "submitted" not in " ".join(paper_row)
    assert submitted[1] == "BART(Lewis et al. 2020) — submitted outputs" and submitted[2] == "submitted"
    bleu = view.header.index(next(h for h in view.header if "BLEU" in h))
    assert submitted[bleu] == "17.08 / 17.50 (submitted) / +0.42"
    assert any("submitted outputs `sub`" in n and "by: x" in n for n in view.notes)


def test_an_untied_submission_shows_under_tables_with_its_task_and_split_only() -> None:
    from bench.papers import get_table
    from bench.report.views import build_table_view

    sub = _external("squad_qg", "test", {"unilm": {"bleu4": 12.04, "meteor": 16.35, "rougeL": 39.5}}, None, None)
    copybert = build_table_view(get_table("copybert", "1"), [sub], None)  # task squad_qg, recipe unilm
    (row,) = [r for r in copybert.rows if "`sub` (submitted outputs, not a reproduction)" in " ".join(r)]
    assert "– / 12.04 (submitted)" in row
    quora = build_table_view(get_table("mist", "3"), [sub], None)
    assert not any("submitted" in " ".join(r) for r in quora.rows)


def test_the_published_outputs_are_on_the_leaderboard() -> None:
    """The shared data's released outputs are committed submissions with the published scores."""
    subs = {r["submission"]["name"]: r for r in load_records(ROOT / "results") if r.get("kind") == "external"}
    assert {"nqg_du2017", "ptgen_xsum", "convs2s_xsum"} <= set(subs)
    nqg = subs["nqg_du2017"]["scores"]["nqg"]["metrics"]
    assert (round(nqg["bleu4"], 3), round(nqg["meteor"], 3), round(nqg["rougeL"], 3)) == (12.056, 16.355, 39.501)
    for name in ("ptgen_xsum", "convs2s_xsum"):
        assert subs[name]["spec"]["split"] == "test-refs" and "rouge155" in subs[name]["scores"]
    ptgen = subs["ptgen_xsum"]["scores"]["rouge155"]["metrics"]  # Narayan et al. 2018, Table 4: 29.70 / 9.21 / 23.24
    assert (round(ptgen["rouge1"], 2), round(ptgen["rouge2"], 2), round(ptgen["rougeL"], 2)) == (29.70, 9.21, 23.24)
    for rec in subs.values():  # third-party releases are referenced by path and hash, never copied in
        assert rec["outputs"]["copied"] is False
        assert not (ROOT / "results" / "outputs" / f"{rec['run_id']}.txt").exists()
