"""`bench rescore`: scores added from the stored outputs equal a fresh run's, and edited evidence is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.store.integrity import sealed

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


@pytest.fixture(scope="module")
def record_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from bench.runs import RunSpec, record_path
    from bench.runs.pipeline import execute

    results = tmp_path_factory.mktemp("results")
    spec = RunSpec("copy_source", "quora", budget="smoke", limit=40)
    execute(spec, results_dir=results, say=lambda _m: None)
    return record_path(spec, results)


def _older(rec: dict, **changes: object) -> dict:
    """``rec`` as the harness wrote it before a recipe (or statistic) existed: changed, and sealed as its writer
    seals (a record without a digest is read only when pinned as legacy, docs/integrity.md)."""
    return sealed({k: v for k, v in {**rec, **changes}.items() if k != "digest"})


def test_rescore_restores_a_missing_recipe_exactly(record_path: Path) -> None:
    from bench.runs.rescore import missing_recipes, rescore

    full = json.loads(record_path.read_text())
    assert missing_recipes(full) == []
    assert rescore(record_path) == []  # nothing to do: the record is untouched
    stripped = _older(full, scores={})
    record_path.write_text(json.dumps(stripped))
    assert rescore(record_path, say=lambda _m: None) == ["mist-quora"]
    again = json.loads(record_path.read_text())
    assert again["scores"]["mist-quora"]["metrics"] == full["scores"]["mist-quora"]["metrics"]
    assert again["rescored"][0]["recipes"] == ["mist-quora"]


def test_rescore_refuses_edited_outputs(record_path: Path) -> None:
    from bench.runs import REPO_ROOT
    from bench.runs.rescore import RescoreError, rescore

    rec = json.loads(record_path.read_text())
    record_path.write_text(json.dumps(_older(rec, scores={})))
    out = REPO_ROOT / rec["outputs"]["path"]
    original = out.read_text(encoding="utf-8")
    out.write_text("edited\n" + original.split("\n", 1)[1], encoding="utf-8")
    try:
        with pytest.raises(RescoreError, match="sha256 differs"):
            rescore(record_path)
    finally:
        out.write_text(original, encoding="utf-8")


def test_rescore_adds_output_statistics_equal_to_a_fresh_run_s(record_path: Path) -> None:
    from bench.runs.rescore import rescore

    full = json.loads(record_path.read_text())
    stats = full["output_stats"]  # written by execute: copy_source on Quora copies the question
    assert stats["n"] == 40 and stats["distinct_ratio"] > 0.9 and full["training_curve"] is None
    record_path.write_text(json.dumps(_older({k: v for k, v in full.items() if k != "output_stats"})))
    assert rescore(record_path, say=lambda _m: None)[-1] == "output_stats"  # (after any recipe an earlier test removed)
    assert json.loads(record_path.read_text())["output_stats"] == stats
    record_path.write_text(json.dumps(full))
