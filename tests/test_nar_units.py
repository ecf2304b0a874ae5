"""§4.11 unit tests of the NAR/MIST pieces that need no trained model (tests 1, 2, 5, 6, 7, 9)."""

from __future__ import annotations

import random

import pytest
import torch

from systems.nar.data import collate, pad_batch
from systems.nar.glat import GlatConfig, glance, glance_count
from systems.nar.layout import joint_inputs, source_inputs, target_inputs_with_past
from systems.nar.length import clamp_length, length_targets, predict_length
from systems.nar.mist import mist_source
from systems.nar.schedule import remask_schedule

PAD, CLS, SEP, MASK = 0, 2, 3, 4


# ---- 1. mask and positions -------------------------------------------------------------------
def test_mask_pattern_matches_spec() -> None:
    """3 real source + 1 pad + 2 real target + 1 pad (§4.3 checked pattern)."""
    src = torch.tensor([[CLS, 10, SEP, PAD]])
    tgt = torch.tensor([[MASK, MASK, PAD]])
    inp = joint_inputs(src, torch.tensor([3]), tgt, torch.tensor([2]))
    a = inp.attention_mask[0]
    want = torch.zeros(7, 7, dtype=torch.bool)
    want[0:3, 0:3] = True
    for r in (4, 5):
        want[r, [0, 1, 2, 4, 5]] = True
    assert torch.equal(a, want)
    assert inp.token_type_ids[0].tolist() == [0, 0, 0, 0, 1, 1, 1]


def test_positions_two_source_lengths_one_batch() -> None:
    src = torch.tensor([[CLS, 10, 11, 12, SEP], [CLS, 10, SEP, PAD, PAD]])
    tgt = torch.tensor([[MASK, MASK, MASK], [MASK, MASK, PAD]])
    src_len, tgt_len = torch.tensor([5, 3]), torch.tensor([3, 2])
    inp = joint_inputs(src, src_len, tgt, tgt_len)
    assert inp.position_ids[0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert inp.position_ids[1].tolist() == [0, 1, 2, 0, 0, 3, 4, 0]  # target = n_s + j, padding 0
    # target row of example 1 sees real source (0..2) and real target (5, 6) only
    assert inp.attention_mask[1, 5].nonzero().flatten().tolist() == [0, 1, 2, 5, 6]
    # cached halves agree with the joint layout
    s = src.shape[1]
    tpast = target_inputs_with_past(tgt, tgt_len, src_len, s)
    assert torch.equal(tpast.attention_mask, inp.attention_mask[:, s:, :])
    assert torch.equal(tpast.position_ids, inp.position_ids[:, s:])
    sin = source_inputs(src, src_len)
    assert torch.equal(sin.attention_mask, inp.attention_mask[:, :s, :s])
    assert not inp.attention_mask[:, :s, s:].any()  # source never sees the target


# ---- 2. length ---------------------------------------------------------------------------------
def test_length_target_counts_sep_and_clamp() -> None:
    class Tok:
        pad_id, cls_id, sep_id, mask_id = PAD, CLS, SEP, MASK

        def encode_batch(self, texts):
            return [[20 + i for i in range(len(t.split()))] for t in texts]

    from bench.api.types import Example
    from systems.nar.data import Encoder

    enc = Encoder(Tok(), max_source_len=10, max_target_len=48)
    pair = enc.pairs([Example("0", "a b", "what is it ?")])[0]
    assert pair.tgt[-1] == SEP and len(pair.tgt) == 4 + 1
    tgt, tgt_len = pad_batch([pair.tgt], PAD)
    assert length_targets(tgt_len).tolist() == [5]
    assert clamp_length(torch.tensor([3, 60, 20])).tolist() == [7, 48, 20]
    logits = torch.full((2, 512), -1.0)
    logits[0, 3], logits[1, 60] = 5.0, 5.0
    assert predict_length(logits).tolist() == [7, 48]
    # test-time source keeps 2 more wordpieces than training (§4.8)
    long = Example("1", " ".join("x" * 1 for _ in range(20)), "q")
    assert len(enc.source_ids(list(range(20)))) == 10
    assert len(enc.sources([long])[0]) == 12


# ---- 5. GLAT -----------------------------------------------------------------------------------
def _stub_pred(gold: torch.Tensor, wrong: list[list[int]]) -> torch.Tensor:
    pred = gold.clone()
    for b, slots in enumerate(wrong):
        for j in slots:
            pred[b, j] = 99
    return pred


@pytest.mark.parametrize("w", [0, 1, 3, 4, 7])
def test_glat_reveals_floor_half_of_wrong(w: int) -> None:
    gold = torch.randint(10, 50, (1, 10))
    tgt_len = torch.tensor([8])
    pred = _stub_pred(gold, [list(range(w))])
    # a mistake beyond the length must not count
    pred[0, 9] = 99
    dec = torch.full_like(gold, MASK)
    new, revealed = glance(pred, dec, gold, tgt_len, 0.5)
    assert int(revealed.sum()) == w // 2
    assert not revealed[0, 8:].any()  # all within the length
    assert torch.equal(new[revealed], gold[revealed])
    assert (new[~revealed] == MASK).all()


def test_glat_perfect_model_reveals_nothing_and_is_seeded() -> None:
    gold = torch.randint(10, 50, (3, 12))
    tgt_len = torch.tensor([12, 9, 5])
    dec = torch.full_like(gold, MASK)
    assert glance_count(gold, gold, tgt_len, 0.5).tolist() == [0, 0, 0]
    pred = torch.full_like(gold, 99)
    assert glance_count(pred, gold, tgt_len, 0.5).tolist() == [6, 4, 2]
    batch_a = collate_scores(3, 12, seed=7)
    batch_b = collate_scores(3, 12, seed=7)
    a = glance(pred, dec, gold, tgt_len, 0.5, batch_a)[1]
    b = glance(pred, dec, gold, tgt_len, 0.5, batch_b)[1]
    c = glance(pred, dec, gold, tgt_len, 0.5, collate_scores(3, 12, seed=8))[1]
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def collate_scores(b: int, t: int, seed: int) -> torch.Tensor:
    from systems.nar.data import Pair

    pairs = [Pair((CLS, 5, SEP), tuple([7] * (t - 1) + [SEP])) for _ in range(b)]
    return collate(pairs, random.Random(seed), PAD)["glat_scores"]


def test_glat_anneal_flag() -> None:
    assert GlatConfig().ratio_at(0.9) == 0.5
    cfg = GlatConfig(anneal=True)
    assert (
        cfg.ratio_at(0.0) == 0.5
        and abs(cfg.ratio_at(1.0) - 0.3) < 1e-9
        and abs(cfg.ratio_at(0.5) - 0.4) < 1e-9
    )


# ---- 6. MIST input builder ---------------------------------------------------------------------
def test_mist_source_builder() -> None:
    src = torch.tensor([[CLS, 10, 11, SEP, PAD], [CLS, 12, SEP, PAD, PAD]])
    src_len = torch.tensor([4, 3])
    # row 0 predicts a [SEP] last (no extra [SEP]); row 1 does not (one appended); slots >= len ignored
    pred = torch.tensor([[20, 21, SEP, 77], [30, PAD, 31, 77]])
    tgt_len = torch.tensor([3, 3])
    ids, lens = mist_source(src, src_len, pred, tgt_len, max_len=16, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    assert ids[0, : lens[0]].tolist() == [CLS, 20, 21, SEP, 10, 11, SEP]
    # a predicted [PAD] stays a real token: the length, not the id, says what is real
    assert ids[1, : lens[1]].tolist() == [CLS, 30, PAD, 31, SEP, 12, SEP]
    assert lens.tolist() == [7, 7]
    # truncation to the given length cuts the tail, X's final [SEP] included
    ids, lens = mist_source(src, src_len, pred, tgt_len, max_len=5, cls_id=CLS, sep_id=SEP, pad_id=PAD)
    assert ids[0].tolist() == [CLS, 20, 21, SEP, 10] and lens.tolist() == [5, 5]
    # positions are recomputed from the new length
    tgt = torch.full((2, 3), MASK)
    inp = joint_inputs(ids, lens, tgt, tgt_len)
    assert inp.position_ids[0, 5:].tolist() == [5, 6, 7]


# ---- 7. remove_repeat quirks ---------------------------------------------------------------------
def test_remove_repeat_quirks() -> None:
    from bench.api.text import remove_repeat
    from systems.nar.system import _remove_repeat

    assert remove_repeat("a a b") == "a a b"
    assert remove_repeat("x a a") == "x a"
    assert remove_repeat("x y y y z z") == "x y z"
    assert _remove_repeat("what is is the the ?") == "what is the ?"


def test_output_text_merges_pieces_and_deletes_every_sep() -> None:
    from systems.backbone import WordPieceTokenizer, tiny_vocab
    from systems.nar.data import Encoder

    tok = WordPieceTokenizer(tiny_vocab(["what", "is", "play"]))
    enc = Encoder(tok, 16, 8)
    ids = tok.convert_tokens_to_ids(["what", "[SEP]", "play", "##s", "?", "[SEP]"]) + [PAD, PAD]
    assert enc.text(ids) == "what plays ?"
    # a literal [SEP] in the source text is the [SEP] token, not word pieces
    assert enc.sources([_ex("is [SEP] what")])[0] == (
        tok.cls_id,
        tok.vocab["is"],
        tok.sep_id,
        tok.vocab["what"],
        tok.sep_id,
    )


def _ex(source: str):
    from bench.api.types import Example

    return Example("x", source, "q")


# ---- 9. Mask-Predict schedule ---------------------------------------------------------------------
def test_mask_predict_schedule() -> None:
    assert remask_schedule(10, 3) == [6, 3]
    assert remask_schedule(10, 1) == []
    assert remask_schedule(12, 6) == [10, 8, 6, 4, 2]
    with pytest.raises(ValueError):
        remask_schedule(10, 0)


def test_cpu_learning_rate_is_per_task_and_an_override_wins() -> None:
    """#18: Quora's cpu lr/updates come from its calibration sweep; SQuAD keeps the earlier 1e-4."""
    from systems.nar.presets import apply_overrides, preset

    cfg = preset("encoder_minilm_l6", "cpu")
    assert cfg.lr is None
    quora, squad = cfg.size_for("quora"), cfg.size_for("squad_qg")
    assert (quora.lr, quora.steps, quora.train_examples) == (5e-4, 600, 38400)
    assert (squad.lr, squad.steps, squad.source_window) == (5e-4, 1000, "answer")
    assert quora.source_window == "head"
    assert apply_overrides(cfg, {"source_window": "head"}).size_for("squad_qg").source_window == "head"
    with pytest.raises(ValueError, match="source_window"):
        apply_overrides(cfg, {"source_window": "paragraph"})
    assert apply_overrides(cfg, {"lr": 5e-4}).size_for("quora").lr == 5e-4
    assert preset("mist_minilm_l6", "cpu").size_for("quora") == quora  # MIST and the encoder: one budget
    assert preset("encoder_bert", "paper").size_for("squad_qg").lr == 3e-5


def test_a_workdir_trained_under_another_sizing_is_refused(tmp_path) -> None:
    import json

    from bench.api.errors import UserError
    from systems.nar.system import _refuse_stale_workdir

    meta = tmp_path / "nar_model.json"
    new = {"size": {"steps": 600, "batch_size": 32, "lr": 1e-3}}
    _refuse_stale_workdir(meta, new)  # no workdir yet: fine
    meta.write_text(json.dumps({"size": {"steps": 300, "batch_size": 32}}))
    with pytest.raises(UserError, match="steps 300 -> 600"):
        _refuse_stale_workdir(meta, new)
    meta.write_text(json.dumps({"size": {"steps": 600, "batch_size": 32}}))  # older meta without lr: same run
    _refuse_stale_workdir(meta, new)


class _SpaceTokenizer:
    """Whitespace "wordpieces" with ids in order of first sight (enough for the source layout)."""

    pad_id, cls_id, sep_id, mask_id = PAD, CLS, SEP, MASK

    def __init__(self) -> None:
        self.ids: dict[str, int] = {"[SEP]": SEP}

    def encode(self, text: str) -> list[int]:
        return [self.ids.setdefault(w, len(self.ids) + 10) for w in text.split()]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]


def test_answer_window_source_keeps_the_answers_sentence_in_a_short_source() -> None:
    """cpu SQuAD (#19): with 12 pieces of room the head of a long paragraph never reaches the answer; the
    window layout is ``answer [SEP]`` + the paragraph around the answer, within the same room."""
    from bench.api.types import Example
    from systems.nar.data import Encoder

    para = " ".join(f"w{i}" for i in range(40)) + " the answer is here . " + " ".join(f"v{i}" for i in range(40))
    start = para.index("answer is")
    ex = Example("q1", "answer is [SEP] " + para, "where ?",
                 {"paragraph": para, "answer": "answer is", "answer_start": start})
    tok = _SpaceTokenizer()
    head = Encoder(tok, 12, 8, test_extra=0).pairs([ex])[0].src
    window = Encoder(tok, 12, 8, test_extra=0, source_window="answer").pairs([ex])[0].src
    ans = tok.encode("answer is")
    assert len(head) == len(window) == 12 and window[0] == CLS and window[-1] == SEP
    assert list(window[1:4]) == [*ans, SEP]  # the answer first, then its context
    assert tok.ids["here"] in window[4:] and tok.ids["here"] not in head[4:]
    test_src = Encoder(tok, 12, 8, test_extra=2, source_window="answer").sources([ex], test=True)[0]
    assert len(test_src) == 14  # the code's +2 at test time holds for the window too
