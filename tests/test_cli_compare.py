"""`bench compare` and `bench score` on outputs of `--limit N` runs: the first N references, a hint if forgotten."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_compare_limited_outputs(quora_hypotheses: tuple[Path, Path, Path]) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    data, a, b = quora_hypotheses
    args = ["compare", str(a), str(b), "--task", "quora", "--data-dir", str(data)]

    forgot = CliRunner().invoke(app, args)
    assert forgot.exit_code != 0
    assert "add --limit 40" in " ".join(forgot.output.split())

    ok = CliRunner().invoke(app, [*args, "--limit", "40", "--json"])
    assert ok.exit_code == 0, ok.output
    result = json.loads(ok.output)
    assert result["n_items"] == 40
    bleu = result["metrics"]["bleu4"]
    assert bleu["a"] > bleu["b"] and bleu["delta"] > 0  # a − b: the whole source beats its first three words

    assert CliRunner().invoke(app, [*args, "--limit", "0"]).exit_code != 0

    score = ["score", "--hyp", str(a), "--task", "quora", "--recipe", "mist-quora", "--data-dir", str(data), "--json"]
    assert "add --limit 40" in " ".join(CliRunner().invoke(app, score).output.split())
    scored = CliRunner().invoke(app, [*score, "--limit", "40"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)[0]["metrics"]["bleu4"] == pytest.approx(bleu["a"])
