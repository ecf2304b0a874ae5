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
    result = json.loads(ok.stdout)  # stderr says "computing ..." first: the comparison was not cached yet
    assert result["n_items"] == 40
    bleu = result["metrics"]["bleu4"]
    assert bleu["a"] > bleu["b"] and bleu["delta"] > 0  # a − b: the whole source beats its first three words
    lines_a, lines_b = a.read_text().splitlines(), b.read_text().splitlines()
    same = sum(x == y for x, y in zip(lines_a, lines_b, strict=True))
    assert result["identical"]["n"] == 40 and result["identical"]["same"] == same
    assert result["identical"]["first"]["n"] == 40  # --agree-first 200 over 40 items: all of them
    shown = CliRunner().invoke(app, [*args, "--limit", "40", "--agree-first", "10"])
    assert f"identical outputs: {same}/40" in shown.output and "first 10:" in shown.output

    assert CliRunner().invoke(app, [*args, "--limit", "0"]).exit_code != 0

    score = ["score", "--hyp", str(a), "--task", "quora", "--recipe", "mist-quora", "--data-dir", str(data), "--json"]
    assert "add --limit 40" in " ".join(CliRunner().invoke(app, score).output.split())
    scored = CliRunner().invoke(app, [*score, "--limit", "40"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)[0]["metrics"]["bleu4"] == pytest.approx(bleu["a"])


def test_identical_outputs_counts_all_and_the_first_n() -> None:
    from bench.scoring.agreement import identical_line, identical_outputs

    agree = identical_outputs(["a", "b", "c", "d"], ["a", "x", "c", "d"], first=2)
    assert (agree["same"], agree["n"], agree["first"]["same"], agree["first"]["n"]) == (3, 4, 1, 2)
    assert agree["first_difference"] == {"index": 1, "a": "b", "b": "x"}
    assert identical_line(agree) == "identical outputs: 3/4 (75.0 %); first 2: 1/2 (50.0 %)"
    with pytest.raises(ValueError, match="same items"):
        identical_outputs(["a"], ["a", "b"])
