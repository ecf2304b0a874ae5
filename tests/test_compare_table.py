"""`bench compare` prints a table per recipe (a, b, Δ = a − b, its CI, p_bootstrap, p_AR); `--json` the raw result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report.compare_table import HEADER, caption, compare_rows


def _result() -> dict:
    return {
        "recipe": "nqg", "signature": "qg:nqg|...", "n_items": 946, "a": {}, "b": {},
        "metrics": {
            "bleu4": {"a": 9.891, "b": 8.312, "delta": 9.891 - 8.312, "p_bootstrap": 0.000999, "p_ar": 0.0004,
                      "ci95_a_minus_b": [0.78, 2.48]},
            "rougeL": {"a": 38.85, "b": 38.30, "delta": 38.85 - 38.30, "p_bootstrap": 0.0769, "p_ar": 0.1706},
        },
    }


def test_rows_say_a_minus_b_with_its_interval_and_both_p_values() -> None:
    rows = compare_rows(_result())
    assert HEADER == ("metric", "a", "b", "Δ (a − b)", "95% CI of Δ", "p_bootstrap", "p_AR")
    assert rows[0] == ["BLEU-4", "9.89", "8.31", "+1.58", "[+0.78, +2.48]", "<0.001 *", "<0.001 *"]
    assert rows[1] == ["ROUGE-L", "38.85", "38.30", "+0.55", "–", "0.077", "0.171"]  # no CI asked: a dash
    assert caption(_result(), "run-a", "run-b") == "recipe nqg: a = run-a, b = run-b; 946 paired items"


def test_compare_prints_a_table_per_recipe_and_json_keeps_the_raw_result(
    quora_hypotheses: tuple[Path, Path, Path],
) -> None:
    from typer.testing import CliRunner

    from bench.cli import app

    data, a, b = quora_hypotheses
    args = ["compare", str(a), str(b), "--task", "quora", "--limit", "40", "--data-dir", str(data),
            "--recipe", "sacrebleu"]  # sacreBLEU needs no Java: the test stays fast

    table = CliRunner().invoke(app, args, terminal_width=120)
    assert table.exit_code == 0, table.output
    out = table.output
    squeezed = "".join(out.split())  # a long tmp path wraps anywhere: compare without whitespace
    assert "".join(f"recipe sacrebleu: a = {a}, b = {b}; 40 paired items".split()) in squeezed
    for head in HEADER:
        assert head in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("BLEU-4"))
    cells = line.split()
    assert float(cells[1]) > float(cells[2]) and cells[3].startswith("+")  # Δ = a − b: the whole source wins
    assert "qg:" not in out and "bleu:sacrebleu" in out  # the recipe's signature under its table

    raw = CliRunner().invoke(app, [*args, "--json"])
    assert raw.exit_code == 0, raw.output
    result = json.loads(raw.stdout)
    bleu = result["metrics"]["bleu4"]
    assert set(bleu) >= {"a", "b", "delta", "p_bootstrap", "p_ar"}
    assert result["delta_is"] == "a - b" and bleu["delta"] == pytest.approx(bleu["a"] - bleu["b"])  # as the table
    assert f"{bleu['delta']:+.2f}" == cells[3]
    assert f"{bleu['a'] - bleu['b']:+.2f}" == cells[3]

    two = CliRunner().invoke(app, [*args, "--recipe", "mist-quora", "--json"])
    assert two.exit_code == 0, two.output
    assert [r["recipe"] for r in json.loads(two.stdout)] == ["sacrebleu", "mist-quora"]
