"""Results as data: the DataFrame of the committed records, exports, `bench show`, `bench compare` by run id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from bench.report import frame as results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
DATA = Path(os.environ.get("BENCH_DATA", REPO / ".." / "shared" / "data"))
SELF = "copybert_selfcopy--squad_qg--test--cpu--s42--9b7c5e3b"
NOCOPY = "copybert_nocopy--squad_qg--test--cpu--s42--c9a5a4a2"
UNILM_FULL = "unilm--squad_qg--test--cpu--s42--0492db91"


@pytest.fixture(scope="module")
def frame():
    return results.load(RESULTS)


def test_one_row_per_record_and_recipe(frame) -> None:
    from bench.store.records import load_records

    records = load_records(RESULTS)
    assert len(frame) == sum(len(r["scores"]) for r in records)
    assert frame.groupby(["run_id", "recipe"]).size().max() == 1
    for rec in records:
        for recipe, sc in rec["scores"].items():
            row = frame[(frame.run_id == rec["run_id"]) & (frame.recipe == recipe)].iloc[0]
            assert row["bleu4" if "bleu4" in sc["metrics"] else "rougeL"] == sc["metrics"].get(
                "bleu4", sc["metrics"].get("rougeL")
            )
            assert row["out_distinct_ratio"] == rec["output_stats"]["distinct_ratio"]
            assert json.loads(row["overrides"]) == rec["spec"]["overrides"]


def test_bleu4_values_equal_the_tables(frame) -> None:
    """Every table cell that shows a run shows the DataFrame's value (two readers, one number)."""
    from bench.papers import all_tables
    from bench.papers.matching import group_matches
    from bench.report.cells import fmt_num
    from bench.store.records import load_records

    records = load_records(RESULTS)
    checked = 0
    for table in all_tables():
        for group in table.quality_groups():
            if not any(c.metric == "bleu4" for c in group.columns):
                continue
            for row_id, m in group_matches(records, table, group, ("cpu",)).items():
                recipe = table.reported_recipe(table.row(row_id), group)
                cell = fmt_num(m.record["scores"][recipe]["metrics"]["bleu4"])
                df_value = frame[(frame.run_id == m.record["run_id"]) & (frame.recipe == recipe)]["bleu4"].iloc[0]
                assert fmt_num(df_value) == cell
                checked += 1
    assert checked >= 10


def test_wide_has_one_row_per_record(frame) -> None:
    wide = results.wide(frame)
    assert len(wide) == frame.run_id.nunique()
    row = wide[wide.run_id == SELF].iloc[0]
    assert row["unilm/bleu4"] == frame[(frame.run_id == SELF) & (frame.recipe == "unilm")]["bleu4"].iloc[0]
    assert "unilm/bleu4_ci_low" not in wide.columns


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_export_round_trip(frame, tmp_path: Path, fmt: str) -> None:
    path = results.export(frame, tmp_path / f"r.{fmt}", fmt)
    back = {"csv": pd.read_csv, "parquet": pd.read_parquet, "jsonl": lambda p: pd.read_json(p, lines=True)}[fmt](path)
    assert list(back.columns) == list(frame.columns) and len(back) == len(frame)
    pd.testing.assert_series_equal(back["bleu4"], frame["bleu4"], check_dtype=False)
    pd.testing.assert_series_equal(back["run_id"], frame["run_id"])
    assert len(results.wide(back)) == len(results.wide(frame))  # CI columns mark metrics after a round trip


def test_compare_by_id_equals_compare_on_files(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from typer.testing import CliRunner

    from bench.cli import app

    runner = CliRunner()
    by_id = runner.invoke(app, ["compare", SELF, NOCOPY, "--recipe", "unilm", "--json"])
    assert by_id.exit_code == 0, by_id.output
    files = [str(RESULTS / "outputs" / f"{r}.txt") for r in (SELF, NOCOPY)]
    by_file = runner.invoke(app, ["compare", *files, "--task", "squad_qg", "--limit", "2000", "--recipe", "unilm",
                                  "--json"])
    assert by_file.exit_code == 0, by_file.output
    assert json.loads(by_id.stdout) == json.loads(by_file.stdout)  # stderr may say "computing ..."
    refused = runner.invoke(app, ["compare", SELF, UNILM_FULL])
    assert refused.exit_code == 2 and "different examples" in refused.output


def test_show_prints_the_record(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from typer.testing import CliRunner

    from bench.cli import app

    out = CliRunner().invoke(app, ["show", SELF, "--n", "2"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for text in ("budget: cpu", "distinct", "To whom did the Virgin Mary", f"results/{SELF}.json", "bleu4"):
        assert text in out.output
    missing = CliRunner().invoke(app, ["show", "copybert_selfcopy--nope"])
    assert missing.exit_code == 2 and "no record" in missing.output
