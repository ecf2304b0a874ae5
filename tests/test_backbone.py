"""Backbone: HF BertModel equivalence (masks included), K/V cache, attention maps, loading, tokenizer."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from systems.backbone import (  # noqa: E402
    Backbone,
    KVBuffer,
    KVCache,
    backbone_from_state,
    build_tokenizer,
    decode_step_mask,
    load_backbone,
    minilm_dir,
    seq2seq_mask,
    tiny_backbone,
    tiny_vocab,
    unilm_mask,
)
from systems.backbone.tokenizer import WordPieceTokenizer  # noqa: E402

ATOL = 1e-5


def _hf_pair(type_vocab: int = 2) -> tuple[object, Backbone]:
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=120,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=64,
        type_vocab_size=type_vocab,
        attn_implementation="eager",
    )
    hf = transformers.BertModel(cfg).eval()
    ours, _ = backbone_from_state(cfg.to_dict(), {f"bert.{k}": v for k, v in hf.state_dict().items()})
    return hf, ours.eval()


def _hf_bias(mask: torch.Tensor) -> torch.Tensor:
    """HF v5 reads a 4-D mask as an additive float bias."""
    return torch.zeros(mask.shape, dtype=torch.float32).masked_fill(~mask, torch.finfo(torch.float32).min)[:, None]


def test_equals_hf_without_and_with_padding_mask() -> None:
    hf, ours = _hf_pair(type_vocab=3)
    ids = torch.randint(1, 120, (3, 9))
    types = torch.randint(0, 3, (3, 9))
    lengths = torch.tensor([9, 5, 2])
    pad = torch.arange(9)[None] < lengths[:, None]
    with torch.no_grad():
        ref = hf(ids, token_type_ids=types).last_hidden_state
        assert torch.allclose(ours(ids, types).last_hidden_state, ref, atol=ATOL)
        ref = hf(ids, attention_mask=pad.long(), token_type_ids=types).last_hidden_state
        out = ours(ids, types, attention_mask=pad).last_hidden_state  # 2-D key padding form
        assert torch.allclose(out, ref, atol=ATOL)


def test_equals_hf_with_seq2seq_mask_positions_and_maps() -> None:
    hf, ours = _hf_pair()
    ids = torch.randint(1, 120, (2, 8))
    pos = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 0, 3, 4, 5, 6]])
    mask = seq2seq_mask([3, 2], [5, 3], 3, 5)
    with torch.no_grad():
        ref = hf(ids, attention_mask=_hf_bias(mask), position_ids=pos, output_attentions=True)
        fused = ours(ids, position_ids=pos, attention_mask=mask)
        eager = ours(ids, position_ids=pos, attention_mask=mask, output_attentions="pre")
    assert torch.allclose(fused.last_hidden_state, ref.last_hidden_state, atol=ATOL)
    assert torch.allclose(eager.last_hidden_state, ref.last_hidden_state, atol=ATOL)
    for a, b in zip(eager.attentions, ref.attentions, strict=True):
        assert torch.allclose(a, b, atol=ATOL)


def test_minilm_l6_matches_hf_from_pretrained() -> None:
    model, tok, info = load_backbone("minilm-l6")
    hf = transformers.BertModel.from_pretrained(str(minilm_dir())).eval()
    ids = torch.tensor([tok.encode("which city [SEP] paris is the capital of france .")])
    assert ids[0].tolist().count(tok.sep_id) == 1
    with torch.no_grad():
        assert torch.allclose(model.eval()(ids).last_hidden_state, hf(ids).last_hidden_state, atol=ATOL)
    assert info["lowercase"] and model.config.num_layers == 6


def test_row_without_keys_is_finite_in_both_paths() -> None:
    model = tiny_backbone(vocab_size=50, hidden=32).eval()
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    mask[0, 2] = False  # a query that may attend nothing
    ids = torch.randint(0, 50, (1, 4))
    for mode in (False, "pre"):
        out = model(ids, attention_mask=mask, output_attentions=mode)
        assert torch.isfinite(out.last_hidden_state).all()
    assert torch.isfinite(model(ids, attention_mask=torch.zeros(1, 4, 4, dtype=torch.bool)).last_hidden_state).all()
    bf16 = tiny_backbone(vocab_size=50, hidden=32).eval().to(torch.bfloat16)
    assert torch.isfinite(bf16(ids, attention_mask=mask).last_hidden_state).all()


def test_post_dropout_maps_differ_from_pre_in_training() -> None:
    model = tiny_backbone(vocab_size=50, hidden=32, dropout=0.5).train()
    ids = torch.randint(0, 50, (2, 6))
    torch.manual_seed(1)
    pre = model(ids, output_attentions="pre").attentions[0]
    torch.manual_seed(1)
    post = model(ids, output_attentions="post").attentions[0]
    assert torch.allclose(pre.sum(-1), torch.ones_like(pre.sum(-1)), atol=1e-5)
    assert not torch.allclose(pre, post)
    assert ((post == 0) | torch.isclose(post, pre * 2, atol=1e-6)).all()  # inverted dropout, p = 0.5


def test_incremental_decoding_with_cache_equals_full_forward() -> None:
    model = tiny_backbone(vocab_size=60, hidden=32, layers=3).eval()
    src_len = torch.tensor([5, 3])
    src_max, tgt = 5, 4
    ids = torch.randint(5, 60, (2, src_max + tgt))
    pos = torch.cat([torch.arange(src_max).expand(2, -1), src_len[:, None] + torch.arange(tgt)], 1)
    full = model(ids, position_ids=pos, attention_mask=seq2seq_mask(src_len, [tgt, tgt], src_max, tgt))
    src_mask = seq2seq_mask(src_len, [0, 0], src_max, 0)
    out = model(ids[:, :src_max], position_ids=pos[:, :src_max], attention_mask=src_mask, use_cache=True)
    cache = out.cache
    assert isinstance(cache, KVCache) and cache.length == src_max
    for t in range(tgt):
        step = model(
            ids[:, src_max + t : src_max + t + 1],
            position_ids=pos[:, src_max + t : src_max + t + 1],
            attention_mask=decode_step_mask(src_len, src_max, t, 1),
            past=cache,
            use_cache=True,
        )
        cache = step.cache
        assert torch.allclose(step.last_hidden_state[:, 0], full.last_hidden_state[:, src_max + t], atol=1e-5)
    # real source rows of the full pass match the cached source pass
    assert torch.allclose(out.last_hidden_state[0], full.last_hidden_state[0, :src_max], atol=1e-5)


def test_kv_buffer_steps_equal_kv_cache_steps_bitwise_and_write_in_place() -> None:
    """The preallocated buffer gives the very same numbers as the concatenating cache, grows when
    full, and does not reallocate while there is room (a step must not copy the whole cache)."""
    model = tiny_backbone(vocab_size=60, hidden=32, layers=3).eval()
    src_len, src_max, tgt = torch.tensor([5, 3]), 5, 7
    ids = torch.randint(5, 60, (2, src_max + tgt))
    pos = torch.cat([torch.arange(src_max).expand(2, -1), src_len[:, None] + torch.arange(tgt)], 1)
    src_mask = seq2seq_mask(src_len, [0, 0], src_max, 0)
    cfg = model.config
    buf = KVBuffer.empty(cfg.num_layers, 2, cfg.num_heads, cfg.head_dim, src_max + 3, like=ids.float())
    with torch.no_grad():
        cache = model(ids[:, :src_max], position_ids=pos[:, :src_max], attention_mask=src_mask, use_cache=True).cache
        out = model(ids[:, :src_max], position_ids=pos[:, :src_max], attention_mask=src_mask, past=buf, use_cache=True)
        assert out.cache is buf and buf.length == src_max
        ptrs = [k.data_ptr() for k in buf.keys]
        for t in range(tgt):
            sl = slice(src_max + t, src_max + t + 1)
            mask = decode_step_mask(src_len, src_max, t, 1)
            ref = model(ids[:, sl], position_ids=pos[:, sl], attention_mask=mask, past=cache, use_cache=True)
            got = model(ids[:, sl], position_ids=pos[:, sl], attention_mask=mask, past=buf, use_cache=True)
            cache = ref.cache
            assert torch.equal(got.last_hidden_state, ref.last_hidden_state)
            assert buf.length == cache.length
            if t < 3:  # room left: written in place
                assert [k.data_ptr() for k in buf.keys] == ptrs
    assert buf.capacity >= src_max + tgt
    snap = buf.as_cache()
    assert all(torch.equal(a, b) for a, b in zip(snap.keys + snap.values, cache.keys + cache.values, strict=True))


def test_kv_buffer_truncate_select_and_errors() -> None:
    k = torch.arange(24.0).view(2, 1, 3, 4)
    buf = KVBuffer.from_cache(KVCache((k,), (k + 1,)), capacity=4)
    assert (buf.length, buf.capacity, buf.batch_size) == (3, 4, 2)
    assert buf.truncate(2) is buf and buf.length == 2
    sel = buf.select(torch.tensor([1, 1, 0]))
    assert sel.length == 2 and sel.keys[0].data_ptr() != buf.keys[0].data_ptr()
    assert torch.equal(sel.as_cache().keys[0], k[[1, 1, 0], :, :2])
    sel.write(0, torch.zeros(3, 1, 1, 4), torch.zeros(3, 1, 1, 4))
    assert torch.equal(buf.as_cache().keys[0], k[:, :, :2])  # a selected buffer shares no storage
    with pytest.raises(ValueError, match="truncate"):
        buf.truncate(3)
    with pytest.raises(ValueError, match="capacity"):
        buf.advance(3)


def test_kv_buffer_reorder_in_place() -> None:
    """reorder_ equals select (repeats, permutations, a changing row count), reuses its spare store
    while the row count stays, and a later write/grow still sees the reordered rows."""
    k = torch.arange(48.0).view(3, 2, 2, 4)
    buf = KVBuffer.from_cache(KVCache((k, k * 2), (k + 1, k - 1)), capacity=3)
    ref = buf.select(torch.tensor([2, 0, 0, 1]))
    assert buf.reorder_(torch.tensor([2, 0, 0, 1])) is buf and buf.batch_size == 4 and buf.length == 2
    both = zip(buf.as_cache().keys + buf.as_cache().values, ref.as_cache().keys + ref.as_cache().values, strict=True)
    assert all(torch.equal(a, b) for a, b in both)
    first = [t.data_ptr() for t in buf.keys]
    idx = torch.tensor([3, 1, 2, 0])
    expect = buf.as_cache().select(idx)
    buf.reorder_(idx)  # same row count: gathered into a fresh spare, the old store becomes the spare
    second = [t.data_ptr() for t in buf.keys]
    assert second != first
    assert all(torch.equal(a, b) for a, b in zip(buf.as_cache().keys, expect.keys, strict=True))
    expect = buf.as_cache().select(torch.tensor([1, 1, 0, 2]))
    buf.reorder_(torch.tensor([1, 1, 0, 2]))
    assert [t.data_ptr() for t in buf.keys] == first  # the two stores alternate: no allocation
    assert all(torch.equal(a, b) for a, b in zip(buf.as_cache().values, expect.values, strict=True))
    new = torch.full((4, 2, 2, 4), -5.0)
    for i in range(2):
        buf.write(i, new, new)  # past capacity 3: grows, keeps the reordered rows
    buf.advance(2)
    assert buf.capacity >= 4 and buf.length == 4
    snap = buf.as_cache()
    assert torch.equal(snap.keys[0][:, :, :2], expect.keys[0]) and (snap.keys[1][:, :, 2:] == -5).all()
    buf.reorder_(torch.tensor([0, 3]))
    assert buf.batch_size == 2 and torch.equal(buf.as_cache().keys[0][:, :, :2], expect.keys[0][[0, 3]])


def test_cache_helpers() -> None:
    k = [torch.arange(24.0).view(2, 1, 3, 4)]
    cache = KVCache(tuple(k), tuple(x + 1 for x in k))
    both = cache.concat(cache)
    assert both.length == 6 and both.truncate(3).keys[0].equal(k[0])
    assert both.slice(3).values[0].equal(k[0] + 1)
    sel = cache.select(torch.tensor([1, 1, 0]))
    assert sel.batch_size == 3 and sel.keys[0][0].equal(k[0][1]) and sel.keys[0][2].equal(k[0][0])
    with pytest.raises(ValueError):
        cache.concat(KVCache((), ()))


def test_unilm_mask_layout() -> None:
    m = unilm_mask([3], [2], 8)[0].int()  # [CLS] a a a [SEP] b b [SEP]
    assert m[:, :5].all()  # every row sees [CLS] a [SEP]
    assert not m[:5, 5:].any()  # source never sees the target
    assert m[5:8, 5:8].tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


def test_bin_checkpoint_with_old_names_and_type_resize(tmp_path) -> None:
    hf, ours = _hf_pair()
    state = {}
    for k, v in hf.state_dict().items():
        state[
            "bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        ] = v
    state["cls.predictions.bias"] = torch.zeros(120)
    torch.save(state, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(json.dumps(hf.config.to_dict()))
    (tmp_path / "vocab.txt").write_text("\n".join(tiny_vocab()))
    model, tok, info = load_backbone(str(tmp_path), type_vocab_size=6)
    assert model.config.type_vocab_size == 6 and "cls.predictions.bias" in info["head_state"]
    emb = model.embeddings.token_type_embeddings.weight
    assert torch.equal(emb[4], emb[0]) and torch.equal(emb[5], emb[1])
    ids = torch.randint(1, 120, (1, 5))
    with torch.no_grad():
        assert torch.allclose(model.eval()(ids).last_hidden_state, ours(ids).last_hidden_state, atol=ATOL)


def test_missing_checkpoint_error_is_clear() -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_backbone("no-such-backbone-xyz")


def test_tokenizer_literal_sep_lowercase_and_decode() -> None:
    tok = WordPieceTokenizer(tiny_vocab(["the", "cat", "sat"]))
    ids = tok.encode("The CAT [SEP] sat")
    assert ids[2] == tok.sep_id and tok.decode(ids) == "the cat sat"
    assert tok.decode(tok.encode("cats")) == "cats"  # via ##s
    real = build_tokenizer()
    assert real.vocab_size == 30522 and real.tokenize("Hello [SEP] World") == ["hello", "[SEP]", "world"]
