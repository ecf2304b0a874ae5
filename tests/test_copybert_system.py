"""CopyBERT adapter: presets, registry factories, fit -> decode on a tiny task, resume, init_from."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.api.system import System
from bench.api.types import Example, TaskInfo
from systems import build
from systems.copybert.features import Layout, doc_spans, parse
from systems.copybert.presets import VARIANTS, apply_overrides, preset

TRIPLES = [
    ("Paris is the capital of France.", "Paris", "What is the capital of France?"),
    ("The cat sat on the mat in Berlin.", "mat", "Where did the cat sit?"),
    ("Water boils at 100 degrees.", "100 degrees", "At what temperature does water boil?"),
    ("Mozart was born in Salzburg in 1756.", "1756", "When was Mozart born?"),
]


def _examples(n: int) -> list[Example]:
    out = []
    for k in range(n):
        para, ans, q = TRIPLES[k % len(TRIPLES)]
        out.append(
            Example(
                f"e{k}",
                f"{ans} [SEP] {para}",
                q,
                {"paragraph": para, "answer": ans, "answer_start": str(para.index(ans)), "question": q},
            )
        )
    return out


def test_presets_and_factories() -> None:
    for variant in VARIANTS:
        paper = preset(variant, "paper")
        assert (paper.batch_size, paper.lr, paper.epochs) == (6, 3e-5, 3.0)
        assert (paper.max_seq_length, paper.doc_stride, paper.max_query_length) == (384, 128, 64)
        assert (paper.beam_size, paper.n_best, paper.max_decode_len) == (5, 20, 20)
        assert preset(variant, "cpu").backbone == "minilm-l6"
        assert isinstance(build(variant, "smoke", {}), System)
    assert preset("copybert_spanbert_selfcopy", "paper").backbone == "spanbert-large-cased"
    assert preset("copybert_twohop", "paper").copy == "twohop"
    assert "stands in for spanbert" in build("copybert_spanbert_selfcopy", "cpu", {}).describe().backbone
    with pytest.raises(ValueError, match="Unknown override"):
        apply_overrides(preset("copybert_selfcopy", "cpu"), {"bogus": 1})


def test_windows_and_answer_span() -> None:
    from systems.backbone import build_tokenizer

    tok = build_tokenizer()
    assert doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert doc_spans(10, 4, 1390) == [(0, 4), (4, 4), (8, 2)]
    para = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    parsed = parse(tok, para, "theta iota", para.index("theta"))
    assert tok.decode(parsed.pieces[parsed.span[0] : parsed.span[1] + 1]) == "theta iota"
    layout = Layout(
        tok.cls_id,
        tok.mask_id,
        tok.sep_id,
        max_seq_length=12,
        doc_stride=3,
        max_query_length=4,
        max_decode_length=4,
    )
    ex = Example(
        "x",
        "",
        "what is it ?",
        {
            "paragraph": para,
            "answer": "theta iota",
            "answer_start": str(para.index("theta")),
            "question": "what is it ?",
        },
    )
    feats = layout.train_features(tok, ex)
    assert len(feats) > 1 and any(f.answer == (0, 0) for f in feats)  # out-of-span windows kept
    for f in feats:
        assert len(f.ids) <= 12 and f.question[-1] == tok.sep_id
        if f.answer != (0, 0):
            assert tok.decode(f.context[f.answer[0] : f.answer[1] + 1]) == "theta iota"
    dec = layout.decode_feature(tok, ex)
    assert dec.question == () and len(dec.context) <= 12 - 4  # room for 4 decoded tokens
    assert dec.context[-1] == tok.mask_id and dec.context[-2] == parse(tok, para, "", None).pieces[-1]  # last
    with pytest.raises(ValueError, match="max_seq_length"):
        Layout(tok.cls_id, tok.mask_id, tok.sep_id, max_seq_length=12).decode_feature(tok, ex)


def test_answer_window_holds_the_answer_in_one_window() -> None:
    """source_window="answer": one window per example, the answer inside with about a third of the room
    before it (training and decoding alike); a paragraph that fits is fed whole; the key of a head run stays."""
    from systems.backbone import build_tokenizer
    from systems.copybert.features import answer_span

    tok = build_tokenizer()
    words = [f"w{i}" for i in range(40)]
    para = " ".join(words)
    layout = Layout(tok.cls_id, tok.mask_id, tok.sep_id, max_seq_length=24, doc_stride=3, max_query_length=4,
                    max_decode_length=4, source_window="answer")
    for k in (0, 3, 20, 39):  # answer at the head, early, in the middle and at the very end
        answer, at = words[k], len(" ".join(words[:k])) + (1 if k else 0)
        assert para[at:].startswith(answer)
        ex = Example("x", "", "what is it ?",
                     {"paragraph": para, "answer": answer, "answer_start": str(at), "question": "what is it ?"})
        feats = layout.train_features(tok, ex)
        dec = layout.decode_feature(tok, ex)
        for f in (*feats, dec):
            assert f.answer != (0, 0) and tok.decode(f.context[f.answer[0] : f.answer[1] + 1]) == answer
        assert len(feats) == 1 and len(feats[0].ids) <= 24 and len(dec.context) == 24 - 5  # room for 4 + [SEP]
        # the window does not depend on the question: its length cannot tell the model where to stop
        short = layout.train_features(tok, Example("x", "", "it ?", {**ex.fields, "question": "it ?"}))
        assert feats[0].context == short[0].context == dec.context
    parsed = parse(tok, para, "w20", para.index("w20"))
    start, n = answer_span(parsed, 12)
    first = parsed.span[0]
    assert n == 12 and 0 < first - start <= 12 // 3 + 1  # about a third of the room before the answer
    assert answer_span(parse(tok, "w1 w2 w3", "w2", 3), 12) == (0, len(parse(tok, "w1 w2 w3", "w2", 3).pieces))
    assert "source_window" not in build("copybert_selfcopy", "smoke", {}).describe().config
    assert build("copybert_selfcopy", "cpu", {"source_window": "answer"}).describe().config["source_window"] == "answer"
    with pytest.raises(ValueError, match="source_window"):
        apply_overrides(preset("copybert_selfcopy", "cpu"), {"source_window": "tail"})


@pytest.mark.slow
def test_fit_decode_resume(tmp_path: Path) -> None:
    task = TaskInfo("squad_qg", tuple(_examples(32)), tuple(_examples(8)), 384, 64)
    over = {
        "steps": 4,
        "train_examples": 16,
        "dev_examples": 4,
        "eval_every": 2,
        "save_every": 2,
        "max_decode_len": 5,
        "n_best": 3,
    }
    sys_a = build("copybert_selfcopy", "smoke", over)
    sys_a.fit(task, tmp_path / "run")
    tests = _examples(2)
    out = sys_a.decode(tests)
    assert len(out) == 2 and out == [sys_a.decode_one(ex) for ex in tests]
    slow = build("copybert_selfcopy", "smoke", {**over, "init_from": str(tmp_path / "run"), "decode_cache": False})
    slow.fit(task, tmp_path / "slow")
    assert slow.decode(tests) == out  # the cached decoder (smoke default) = the reference recompute
    assert (tmp_path / "run" / "best" / "best.json").is_file()
    info = sys_a.describe()
    assert info.family == "AR" and info.config["train"]["steps"] == 4
    again = build("copybert_selfcopy", "smoke", over)
    again.fit(task, tmp_path / "run")  # finished run: resumes at the last step, no retraining
    assert again.train_result["resumed_from"] == 4
    assert again.decode(tests) == out
    loaded = build("copybert_selfcopy", "smoke", {**over, "init_from": str(tmp_path / "run")})
    assert not loaded.needs_training and again.needs_training
    loaded.fit(task, tmp_path / "other")
    assert loaded.decode(tests) == out
    assert loaded.describe().config["loaded_from"]["workdir"] == str(tmp_path / "run")
    assert "loaded_from" not in again.describe().config
