"""`bench compare` and `bench score` on outputs of `--limit N` runs: the first N references, a hint if forgotten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def test_compare_limited_outputs(tmp_path: Path) -> None:
    if not DATA.is_dir():
        pytest.skip(f"data dir {DATA} not found")
    from typer.testing import CliRunner

    from bench.cli import app
    from bench.data import load_split

    first = load_split("quora", "test", data_dir=DATA).examples[:40]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(ex.source.lower() + "\n" for ex in first))
    b.write_text("".join(" ".join(ex.source.lower().split()[:3]) + "\n" for ex in first))
    args = ["compare", str(a), str(b), "--task", "quora", "--data-dir", str(DATA)]

    forgot = CliRunner().invoke(app, args)
    assert forgot.exit_code != 0
    assert "add --limit 40" in " ".join(forgot.output.split())

    ok = CliRunner().invoke(app, [*args, "--limit", "40", "--json"])
    assert ok.exit_code == 0, ok.output
    result = json.loads(ok.output)
    assert result["n_items"] == 40
    bleu = result["metrics"]["bleu4"]
    assert bleu["a"] > bleu["b"] and bleu["delta"] < 0  # the whole source beats its first three words

    assert CliRunner().invoke(app, [*args, "--limit", "0"]).exit_code != 0

    score = ["score", "--hyp", str(a), "--task", "quora", "--recipe", "mist-quora", "--data-dir", str(DATA), "--json"]
    assert "add --limit 40" in " ".join(CliRunner().invoke(app, score).output.split())
    scored = CliRunner().invoke(app, [*score, "--limit", "40"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)[0]["metrics"]["bleu4"] == pytest.approx(bleu["a"])
