"""Output statistics, the degeneracy rule, the training curve reader, and the flag in tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.runs.curves import training_curve
from bench.scoring.output_stats import degeneracy, output_stats, summary


def test_statistics_of_a_healthy_and_a_constant_run() -> None:
    refs = [f"what is question {i} ?" for i in range(100)]
    healthy = output_stats([f"what is item {i} ?" for i in range(100)], refs)
    assert healthy["distinct_ratio"] == 1.0 and healthy["most_frequent_share"] == 0.01
    assert healthy["reference_distinct_ratio"] == 1.0 and healthy["length_ratio"] == 1.0
    assert healthy["repeated_trigram_rate"] == 0.0 and degeneracy(healthy) == []

    constant = output_stats(["what is the to in"] * 60 + [f"q {i}" for i in range(40)], refs)
    assert constant["most_frequent"] == "what is the to in" and constant["most_frequent_share"] == 0.6
    assert constant["distinct_ratio"] == 0.41
    reasons = degeneracy(constant)
    assert len(reasons) == 2 and "60.0%" in reasons[0] and "below half" in reasons[1]
    assert "41.0% distinct" in summary(constant)


def test_thresholds_are_the_issue_s() -> None:
    refs = [f"r{i}" for i in range(1000)]
    at_limit = output_stats(["same"] * 20 + [f"o{i}" for i in range(980)], refs)  # exactly 2 %
    assert degeneracy(at_limit) == []
    over = output_stats(["same"] * 21 + [f"o{i}" for i in range(979)], refs)
    assert len(degeneracy(over)) == 1
    # Quora-like references (72.8 % distinct): 36 % distinct outputs is below half of them
    refs_q = [f"r{i % 728}" for i in range(1000)]
    outs = [f"o{i % 360}" for i in range(1000)]
    assert any("below half" in r for r in degeneracy(output_stats(outs, refs_q)))
    # a handful of distinct outputs: each is > 2 % of them, but none is repeated
    assert degeneracy(output_stats(["a", "b", "c", "d", "e", "f"], ["r1", "r2", "r3", "r4", "r5", "r6"])) == []
    assert degeneracy(output_stats(["a", "a", "c", "d", "e", "f"], ["r1", "r2", "r3", "r4", "r5", "r6"]))


def test_repetition_and_length_cap() -> None:
    stats = output_stats(["why do n't n't n't n't n't"] + ["a b"] * 3, ["why is it", "a b", "c d", "e f"])
    # 7 tokens -> 5 trigrams, 3 of them new: 40 % repeated in that output, 0 in the others
    assert stats["repeated_trigram_rate"] == pytest.approx(0.4 / 4)
    assert stats["at_max_len"] == 0.25 and stats["length_ratio"] == pytest.approx(3.25 / 2.25, abs=1e-6)
    with pytest.raises(ValueError, match="3 outputs for 2 references"):
        output_stats(["a", "b", "c"], ["a", "b"])


def test_training_curve_from_the_shared_trainer(tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 10 / s, "lr": 1e-4, "elapsed_s": s} for s in (10, 20, 30)]
    rows.append({"step": 20, "loss": 0.7, "lr": 1e-4, "elapsed_s": 99})  # a resumed run logs step 20 again
    (tmp_path / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "dev_log.jsonl").write_text(json.dumps({"step": 30, "dev_loss": 1.5}) + "\n")
    curve = training_curve(tmp_path)
    assert curve == {"train_loss": [[10, 1.0], [20, 0.7], [30, 0.33333]], "dev_loss": [[30, 1.5]]}
    assert training_curve(tmp_path / "nothing") is None


def test_training_curve_from_a_fairseq_log(tmp_path: Path) -> None:
    log = tmp_path / "checkpoints" / "train.log"
    log.parent.mkdir()
    log.write_text(
        "2026-11-25 | INFO | train_inner | epoch 001:     10 / 157 loss=12.5, nll_loss=12.1, ppl=4400, wps=900, "
        "num_updates=10, lr=1e-05, gnorm=3.1, train_wall=9, wall=12\n"
        "2026-11-25 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 11.2 | nll_loss 10.9 | ppl 1900 | "
        "wps 3000 | wpb 500 | bsz 64 | num_updates 20\n"
        "2026-11-25 | INFO | train_inner | epoch 001:     20 / 157 loss=11.0, nll_loss=10.6, ppl=1500, wps=900, "
        "num_updates=20, lr=2e-05, gnorm=2.5, train_wall=9, wall=21\n"
    )
    assert training_curve(tmp_path) == {"train_loss": [[10, 12.5], [20, 11.0]], "dev_loss": [[20, 11.2]]}


def test_table_flags_a_degenerate_run() -> None:
    from bench.report.cells import DEGENERATE_MARK, distinct_cell, quality_cell

    class M:  # the view's match: a record and its budget
        budget = "cpu"
        record = {
            "scores": {"mist-quora": {"metrics": {"bleu4": 1.0}}},
            "data": {},
            "output_stats": output_stats(["what is the to in"] * 5 + ["a", "b"], [f"r{i}" for i in range(7)]),
        }

    assert DEGENERATE_MARK in quality_cell("30.14", M, "mist-quora", "bleu4")  # type: ignore[arg-type]
    assert DEGENERATE_MARK in distinct_cell(M.record)
    M.record = {**M.record, "output_stats": output_stats([f"o{i}" for i in range(100)], [f"r{i}" for i in range(100)])}
    assert DEGENERATE_MARK not in quality_cell("30.14", M, "mist-quora", "bleu4")  # type: ignore[arg-type]
