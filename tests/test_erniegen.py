"""ERNIE-GEN §3.9 tests 1-5: masks, leak, decode == train, noise statistics, length penalty."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from systems.backbone import WordPieceTokenizer, tiny_backbone, tiny_vocab  # noqa: E402
from systems.decoding import gnmt_penalty, renormalise  # noqa: E402
from systems.erniegen.data import Encoder, add_noise, collate, scored  # noqa: E402
from systems.erniegen.decode import DecodeIds, infilling_decode  # noqa: E402
from systems.erniegen.masks import context_mask, query_mask  # noqa: E402
from systems.erniegen.model import ErnieGen  # noqa: E402

VOCAB = tiny_vocab(["[ATTN]", "what", "is", "the", "who"])


def tiny_model(seed: int = 0) -> ErnieGen:
    bb = tiny_backbone(vocab_size=len(VOCAB), hidden=32, layers=2, heads=2, type_vocab_size=4, seed=seed)
    return ErnieGen(bb, attn_id=VOCAB.index("[ATTN]"), tgt_type_id=3).eval()


def test_masks_match_spec() -> None:
    src_len, tgt_len = torch.tensor([3]), torch.tensor([4])  # target = [CLS] t1 t2 [SEP]
    c = context_mask(src_len, tgt_len, 3, 4)[0]
    assert c.shape == (7, 7)
    assert c[:3, :3].all() and not c[:3, 3:].any()  # source rows: source only
    assert torch.equal(c[3:, 3:], torch.tril(torch.ones(4, 4, dtype=torch.bool)))
    assert c[3:, :3].all()
    q = query_mask(src_len, tgt_len, 3, 4)[0]
    assert q.shape == (4, 11)
    for i in range(4):
        expect = torch.zeros(11, dtype=torch.bool)
        expect[: 3 + i] = True
        expect[7 + i] = True
        assert torch.equal(q[i], expect), i


def test_masks_from_lengths_not_pad_ids() -> None:
    # a batch with padding: row 1 has a shorter source and target; its query rows ignore pads
    q = query_mask(torch.tensor([3, 2]), torch.tensor([4, 2]), 3, 4)
    assert not q[1, 1, 2]  # padded source column
    assert q[1, 1, 3] and not q[1, 1, 4]  # sees BOS, not t'_1
    assert not q[1, 3, 5]  # padded target columns beyond length 2 are never keys


def _batch(tgt: list[int], src: list[int] | None = None) -> dict:
    src = src or [2, 10, 11, 3, 12, 13, 3]
    return {
        "src_ids": torch.tensor([src]),
        "src_types": torch.tensor([[0, 0, 0, 0, 1, 1, 1]]),
        "src_len": torch.tensor([len(src)]),
        "tgt_ids": torch.tensor([tgt]),
        "tgt_len": torch.tensor([len(tgt)]),
    }


def test_leak() -> None:
    model = tiny_model()
    tgt = [2, 20, 21, 22, 23, 3]
    with torch.no_grad():
        base = model(**_batch(tgt))[0]
        for i in range(1, len(tgt)):
            own = list(tgt)
            own[i] = 40  # perturb t'_i: query i (which predicts t_i) must not change
            out = model(**_batch(own))[0]
            assert torch.allclose(out[i], base[i], atol=1e-5), i
            prev = list(tgt)
            prev[i - 1] = 41  # perturb t'_{i-1}: query i must change
            out = model(**_batch(prev))[0]
            assert not torch.allclose(out[i], base[i], atol=1e-4), i
        for j in range(len(tgt)):  # perturb one query: no other query changes
            qids = torch.full((1, len(tgt)), model.attn_id)
            qids[0, j] = 30
            out = model(**_batch(tgt), query_ids=qids)[0]
            others = [k for k in range(len(tgt)) if k != j]
            assert torch.allclose(out[others], base[others], atol=1e-5)
            assert not torch.allclose(out[j], base[j], atol=1e-4)


def test_noised_pad_is_attended() -> None:
    model = tiny_model()
    tgt = [2, 20, 21, 22, 3]
    with torch.no_grad():
        base = model(**_batch(tgt))[0]
        noised = list(tgt)
        noised[2] = 0  # noise produced [PAD] inside the target: it is a real token
        out = model(**_batch(noised))[0]
    assert not torch.allclose(out[3], base[3], atol=1e-4)


def test_decode_equals_train() -> None:
    """Teacher-forced query logits (noise 0) == cached infilling-decoder logits, step by step."""
    model = tiny_model(seed=1)
    tgt = [2, 20, 21, 22, 23, 3]
    b = _batch(tgt)
    with torch.no_grad():
        train = model(**b)[0]
        cache = model.encode_source(b["src_ids"], b["src_types"], b["src_len"])
        s = b["src_ids"].shape[1]
        for t in range(len(tgt) - 1):
            logits, cache = model.step(cache, torch.tensor([tgt[t]]), b["src_len"], s, t)
            assert torch.allclose(logits[0], train[t + 1], atol=1e-4), t
            assert cache.length == s + t + 1  # only pre's K/V are kept


def test_decode_equals_train_padded_batch() -> None:
    """Same check inside a padded batch (padding in both source and target blocks)."""
    model = tiny_model(seed=2)
    src = torch.tensor([[2, 10, 11, 3, 12, 3], [2, 14, 3, 15, 3, 0]])
    types = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0]])
    src_len = torch.tensor([6, 5])
    tgt = torch.tensor([[2, 20, 21, 22, 3], [2, 23, 3, 0, 0]])
    tgt_len = torch.tensor([5, 3])
    with torch.no_grad():
        train = model(src, types, src_len, tgt, tgt_len)
        cache = model.encode_source(src, types, src_len)
        for t in range(2):
            logits, cache = model.step(cache, tgt[:, t], src_len, 6, t)
            assert torch.allclose(logits, train[:, t + 1], atol=1e-4), t


def test_greedy_decoder_follows_argmax() -> None:
    model = tiny_model(seed=3)
    b = _batch([2])
    ids = DecodeIds(bos=2, eos=3)
    out = infilling_decode(model, b["src_ids"], b["src_types"], b["src_len"], ids, beam_size=1, max_len=6)[0]
    # re-run teacher forcing on the produced prefix: each token must be the argmax of its query
    seq = [2, *out]
    with torch.no_grad():
        logits = model(**_batch(seq + [3]))[0]
    for i, tokid in enumerate(out, start=1):
        assert int(logits[i].argmax()) == tokid


def test_beam_keeps_best_normalised_score() -> None:
    model = tiny_model(seed=4)
    b = _batch([2])
    ids = DecodeIds(bos=2, eos=3)
    greedy = infilling_decode(model, b["src_ids"], b["src_types"], b["src_len"], ids, beam_size=1, max_len=5)
    beam = infilling_decode(model, b["src_ids"], b["src_types"], b["src_len"], ids, beam_size=4, max_len=5)

    def score(seq: list[int]) -> float:
        full = [2, *seq]
        ended = len(seq) < 5
        with torch.no_grad():
            lp = model(**_batch(full + [3]))[0].log_softmax(-1)
        total = sum(float(lp[i + 1, full[i + 1]]) for i in range(len(seq)))
        n = len(seq)
        if ended:
            total += float(lp[n + 1, 3])
            n += 1
        return total / float(gnmt_penalty(n, 1.0))

    assert score(beam[0]) >= score(greedy[0]) - 1e-5


def _repeats(seq: list[int], n: int) -> int:
    grams = [tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)]
    return len(grams) - len(set(grams))


@pytest.mark.parametrize("beam", [1, 3])
def test_no_repeat_ngram_blocks_repeats(beam: int) -> None:
    """An untrained model loops; with blocking no n-gram of an output repeats, and off is the plain search."""
    model = tiny_model(seed=5)
    b = _batch([2])
    ids = DecodeIds(bos=2, eos=3)
    args = (model, b["src_ids"], b["src_types"], b["src_len"], ids)
    loose = infilling_decode(*args, beam_size=beam, max_len=16)[0]
    assert _repeats(loose, 2) > 0  # the premise: this model repeats itself
    assert infilling_decode(*args, beam_size=beam, max_len=16, no_repeat_ngram=0)[0] == loose
    for n in (1, 2):
        out = infilling_decode(*args, beam_size=beam, max_len=16, no_repeat_ngram=n)[0]
        assert out and _repeats(out, n) == 0, (n, out)


def test_search_settings_are_decode_only() -> None:
    from bench.runs import training_key
    from systems import build

    plain = build("erniegen_base", "cpu")
    search = {"beam_size": 5, "length_penalty": 0.6, "no_repeat_ngram": 3, "decode_batch_size": 8}
    assert training_key(build("erniegen_base", "cpu", search), "squad_qg") == training_key(plain, "squad_qg")
    # the decode length sizes the training source's room in the position table: not decode-only
    assert training_key(build("erniegen_base", "paper", {"max_decode_len": 100}), "squad_qg") != training_key(
        build("erniegen_base", "paper"), "squad_qg"
    )


def test_noise_statistics() -> None:
    gen = torch.Generator().manual_seed(0)
    n, length, v = 10_000, 12, 50
    tgt = torch.randint(5, v, (n, length))
    tgt[:, 0] = 2
    tgt_len = torch.full((n,), length)
    tgt_len[::2] = 7
    noised = add_noise(tgt, tgt_len, 0.7, v, gen)
    pos = torch.arange(length)[None, :]
    real = (pos >= 1) & (pos < tgt_len[:, None])
    changed_or_redrawn = (noised != tgt) & real
    # a redraw equal to the original is invisible: expected visible rate 0.7 * (1 - 1/V)
    rate = changed_or_redrawn.sum().item() / real.sum().item()
    assert abs(rate - 0.7 * (1 - 1 / v)) < 0.01
    assert torch.equal(noised[:, 0], tgt[:, 0])  # BOS never replaced
    assert torch.equal(noised[~real], tgt[~real])  # padding untouched
    assert int(noised.min()) == 0  # the whole vocab, [PAD] included


def test_collate_labels_are_clean() -> None:
    tok = WordPieceTokenizer(VOCAB, extra_special=["[ATTN]"])
    enc = Encoder(tok, 16, 8, 3)
    from bench.api.types import Example

    pairs = enc.pairs([Example("1", "a b [SEP] c d e", "what is the x"), Example("2", "f [SEP] g", "who")])
    assert pairs[0].src[0] == tok.cls_id and pairs[0].src.count(tok.sep_id) == 2
    assert pairs[0].src_types == (0, 0, 0, 0, 1, 1, 1, 1)
    assert pairs[0].tgt[0] == tok.cls_id and pairs[0].tgt[-1] == tok.sep_id
    batch = collate(pairs, random.Random(0), tok.pad_id, 1.0, len(VOCAB))
    assert torch.equal(batch["labels"][0, : len(pairs[0].tgt)], torch.tensor(pairs[0].tgt))
    mask, _ = scored(batch["labels"], batch["tgt_len"])
    assert not mask[:, 0].any() and int(mask[1].sum()) == len(pairs[1].tgt) - 1


def test_answer_window_source_reaches_an_answer_past_the_head() -> None:
    """cpu SQuAD (#19): ``source_window="answer"`` feeds ``[CLS] answer [SEP] window [SEP]`` (text types 0 and 1,
    as the head layout's two fields) within the same room, so an answer deep in the paragraph is in view."""
    from bench.api.types import Example
    from systems import build
    from systems.erniegen.presets import apply_overrides, preset

    words = [w for w in VOCAB if w.isalpha() and not w.startswith("[")]
    para = " ".join([words[0]] * 30 + [words[1], words[2]] + [words[3]] * 30)
    at = para.index(f"{words[1]} {words[2]}")
    ex = Example("q", f"{words[1]} [SEP] {para}", "who",
                 {"paragraph": para, "answer": words[1], "answer_start": str(at)})
    tok = WordPieceTokenizer(VOCAB, extra_special=["[ATTN]"])
    head = Encoder(tok, 16, 8, 3).pairs([ex])[0]
    window = Encoder(tok, 16, 8, 3, source_window="answer").pairs([ex])[0]
    answer, after = tok.encode(words[1])[0], tok.encode(words[2])[0]
    assert len(head.src) == len(window.src) == 16 and window.src[-1] == tok.sep_id
    assert window.src[:3] == (tok.cls_id, answer, tok.sep_id) and window.src_types[:3] == (0, 0, 0)
    assert set(window.src_types[3:]) == {1} and after in window.src[3:] and after not in head.src
    assert "source_window" not in build("erniegen_base", "smoke", {}).describe().config  # head runs keep their key
    with pytest.raises(ValueError, match="source_window"):
        apply_overrides(preset("erniegen_base", "cpu"), {"source_window": "tail"})


def test_target_truncation_drops_sep() -> None:
    tok = WordPieceTokenizer(VOCAB, extra_special=["[ATTN]"])
    enc = Encoder(tok, 16, 4, 3)
    tgt = enc.target("what is the who what")
    assert len(tgt) == 4 and tgt[-1] != tok.sep_id


def test_length_penalty_renormalisation() -> None:
    logps = [-0.5, -1.25, -0.3]
    for alpha in (0.0, 0.6, 1.0):
        score = torch.tensor(0.0)
        for t, lp in enumerate(logps):
            score = renormalise(score, torch.tensor(lp), t, alpha)
            n = t + 1
            expect = sum(logps[:n]) / ((5 + n) / 6) ** alpha
            assert abs(float(score) - expect) < 1e-6


def _padded_sources() -> tuple:
    src = torch.tensor([[2, 10, 11, 3, 12, 13, 3], [2, 14, 3, 15, 3, 0, 0], [2, 16, 17, 18, 3, 19, 3]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1, 1]])
    return src, types, torch.tensor([7, 5, 7])


def test_buffer_steps_equal_concat_steps_bitwise() -> None:
    """The in-place KVBuffer step gives the very same logits as the concatenating KVCache step
    (padded batch), keeps one storage while there is room and drops [ATTN] by the pointer only."""
    from systems.backbone import KVBuffer, KVCache

    model = tiny_model(seed=5)
    src, types, src_len = _padded_sources()
    prev = torch.tensor([[2, 2, 2], [20, 23, 21], [21, 3, 22], [22, 0, 30], [40, 41, 42]])
    with torch.no_grad():
        cache = model.encode_source(src, types, src_len)
        buf = model.encode_source(src, types, src_len, capacity=7 + len(prev) + 1)
        assert isinstance(cache, KVCache) and isinstance(buf, KVBuffer) and buf.length == 7
        ptrs = [t.data_ptr() for t in buf.keys + buf.values]
        for t, p in enumerate(prev):
            ref, cache = model.step(cache, p, src_len, 7, t)
            got, out = model.step(buf, p, src_len, 7, t)
            assert out is buf and buf.length == cache.length == 7 + t + 1
            assert torch.equal(got, ref), t
        assert [t.data_ptr() for t in buf.keys + buf.values] == ptrs
    snap = buf.as_cache()
    assert all(torch.equal(a, b) for a, b in zip(snap.keys + snap.values, cache.keys + cache.values, strict=True))


@pytest.mark.parametrize("beam", [1, 3])
def test_buffer_decode_equals_concat_decode(beam: int) -> None:
    """Token-for-token identical decodes, buffer vs concatenating cache: padded batch of 3, greedy and
    beam search (beams reordered in place), one storage growth on the way (capacity too small)."""
    from systems.backbone import KVBuffer

    src, types, src_len = _padded_sources()
    ids = DecodeIds(bos=2, eos=3)
    for seed in (6, 7):
        model = tiny_model(seed=seed)
        old = infilling_decode(model, src, types, src_len, ids, beam_size=beam, max_len=9, in_place=False)
        new = infilling_decode(model, src, types, src_len, ids, beam_size=beam, max_len=9)
        assert new == old, seed
        assert any(len(x) >= 3 for x in old)  # the decodes really ran several steps
    grow = model.encode_source(src, types, src_len, capacity=8)
    assert isinstance(grow, KVBuffer) and grow.capacity == 8
    with torch.no_grad():
        ref = model.encode_source(src, types, src_len)
        for t in range(4):  # past capacity 8: the buffer doubles mid-decode and stays exact
            a, ref = model.step(ref, torch.full((3,), 20 + t), src_len, 7, t)
            b, grow = model.step(grow, torch.full((3,), 20 + t), src_len, 7, t)
            assert torch.equal(a, b), t
    assert grow.capacity >= 7 + 4 + 1
