"""CopyBERT unit tests (docs/systems.md §1.9): mask, offset labels, no leakage, copy distribution, gate,
decode consistency, overfit. Tiny random models (2 layers, hidden 64, ~100-token vocab)."""

from __future__ import annotations

import pytest
import torch

from systems.backbone import WordPieceTokenizer, tiny_backbone, tiny_vocab
from systems.copybert.copy import copy_distribution, copy_distribution_dense
from systems.copybert.data import StepScorer, collate
from systems.copybert.features import Feature
from systems.copybert.layout import answer_types, offset_labels, semi_diagonal_mask
from systems.copybert.model import COPY_MODES, CopyBERT, masked_nll
from systems.decoding import Hypothesis, OpenNMTBeams, PrefixSteps, SearchConfig, run_beams

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "park", "what", "who", "where", "did", "red", "big"]
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4


def beam_search(score, sep: int, blocked=(PAD,), beam_size: int = 5, n_best: int = 20, max_length: int = 20,
                length_penalty: float = 1.0, no_repeat_ngram: int = 0) -> tuple[Hypothesis, list[Hypothesis]]:
    """The shared search under CopyBERT's reference rule (``opennmt``, as CopyBERTSystem.search_config sets it)
    over a prefix scorer: (the picked hypothesis, every hypothesis collected)."""
    cfg = SearchConfig(beam_size=beam_size, max_len=max_length, min_len=0, eos_id=sep, length_penalty=length_penalty,
                       no_repeat_ngram=no_repeat_ngram, forbidden=frozenset(blocked), rule="opennmt", n_best=n_best)
    _, beams = run_beams(PrefixSteps(score), [()], 1, cfg)
    assert isinstance(beams, OpenNMTBeams) and beams.best is not None
    return beams.best, beams.collected


def output_tokens(hyp: Hypothesis, drop: tuple[int, ...]) -> list[int]:
    """The reference's output of a hypothesis: without its last token, and without ``drop``."""
    return [t for t in hyp.tokens[:-1] if t not in drop]


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return WordPieceTokenizer(tiny_vocab(WORDS), lowercase=True)


def make_model(tok: WordPieceTokenizer, copy: str, seed: int = 0, **kw) -> CopyBERT:
    torch.manual_seed(seed)
    bb = tiny_backbone(vocab_size=tok.vocab_size, hidden=64, layers=2, heads=4, seed=seed, dropout=0.1)
    model = CopyBERT(bb, copy=copy, **kw)
    with torch.no_grad():  # larger random copy weights so the copy layer is not near-uniform
        for name in (
            "attentionsquare",
            "attentionsquare_lateral",
            "attention_over_attention2",
            "linear_copy_probs",
        ):
            if hasattr(model, name):
                getattr(model, name).weight.normal_(0, 0.5)
    return model.eval()


def toy_batch(q2: int = 30) -> dict[str, torch.Tensor]:
    """``[CLS] p1 p2 [MASK] q1 q2 [SEP] [PAD]`` with the answer on p1."""
    ids = torch.tensor([[CLS, 20, 21, MASK, 25, q2, SEP, PAD]])
    seg = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 0]])
    lengths = torch.tensor([7])
    types = answer_types(seg, torch.tensor([1]), torch.tensor([1]))
    return {"input_ids": ids, "seg": seg, "types": types, "lengths": lengths}


def rich_batch(
    tok: WordPieceTokenizer, question: str = "what did the cat sit on ?"
) -> dict[str, torch.Tensor]:
    """A paragraph with 'cat' three times, padded next to a shorter example (batch of 2)."""
    para = tok.encode("the cat sat on the mat . the big cat ran . a red cat")
    f1 = Feature((CLS, *para, MASK), (2, 2), (*tok.encode(question), SEP))
    f2 = Feature((CLS, *tok.encode("the dog ran to the park"), MASK), (2, 2), (*tok.encode("who ran ?"), SEP))
    return collate([f1, f2])


# ---------------------------------------------------------------------- 1. mask
def test_semi_diagonal_mask_toy() -> None:
    b = toy_batch()
    expected = torch.tensor(
        [
            [1, 1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 1, 0, 0, 0, 0],
            [1, 1, 1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 1, 1, 0, 0],
            [1, 1, 1, 1, 1, 1, 1, 0],
            [0, 0, 0, 0, 0, 0, 0, 0],
        ],
        dtype=torch.bool,
    )
    mask = semi_diagonal_mask(b["seg"], b["lengths"])[0]
    assert torch.equal(mask, expected)
    # the answer (p1) is fed as type 1 but stays paragraph for the mask
    assert b["types"][0].tolist() == [0, 1, 0, 1, 1, 1, 1, 0]
    assert mask[2, 1] and mask[1, :4].all() and not mask[1, 4:].any()


# ---------------------------------------------------------------------- 2. labels
def test_offset_labels_and_ignored_positions(tok: WordPieceTokenizer) -> None:
    b = toy_batch()
    labels = offset_labels(b["input_ids"], b["seg"], b["lengths"])
    assert labels[0].tolist() == [0, 0, 0, 25, 30, SEP, 0, 0]
    logp = torch.log_softmax(torch.randn(1, 8, 50), -1)
    base = masked_nll(logp, labels)
    noisy = logp.clone()
    ignored = labels[0] == 0
    noisy[0, ignored] = torch.log_softmax(torch.randn(int(ignored.sum()), 50), -1)
    assert torch.allclose(masked_nll(noisy, labels), base)
    noisy[0, 3] = torch.log_softmax(torch.randn(50), -1)  # a labelled position does matter
    assert not torch.allclose(masked_nll(noisy, labels), base)


@pytest.mark.parametrize("copy", COPY_MODES)
def test_loss_equals_nll_of_full_log_probs(tok: WordPieceTokenizer, copy: str) -> None:
    model = make_model(tok, copy)
    b = rich_batch(tok)
    with torch.no_grad():
        full = model.all_log_probs(**b)
        labels = offset_labels(b["input_ids"], b["seg"], b["lengths"])
        assert torch.allclose(model.loss(**b), masked_nll(full, labels), atol=1e-5)


# ---------------------------------------------------------------------- 3. no leakage
@pytest.mark.parametrize("copy", COPY_MODES)
def test_no_leakage(tok: WordPieceTokenizer, copy: str) -> None:
    model = make_model(tok, copy)
    with torch.no_grad():
        a, b = toy_batch(q2=30), toy_batch(q2=31)
        la, lb = model.all_log_probs(**a), model.all_log_probs(**b)
        assert torch.allclose(la[0, :5], lb[0, :5], atol=1e-5)  # [MASK] and q1 rows (and the paragraph)
        assert not torch.allclose(la[0, 5], lb[0, 5], atol=1e-5)  # q2's own row does change
        for pos in (4, 5, 6):  # any question token: paragraph hidden states unchanged
            c = toy_batch()
            c["input_ids"][0, pos] = 40
            ha = model.encode(**toy_batch()).hidden[0, :4]
            hc = model.encode(**c).hidden[0, :4]
            assert torch.allclose(ha, hc, atol=1e-5)


# ---------------------------------------------------------------------- 4. copy distribution
def test_scatter_matches_dense_one_hot() -> None:
    attn = torch.rand(3, 5, 7)
    ids = torch.randint(0, 11, (3, 1, 7))
    assert torch.allclose(copy_distribution(attn, ids, 11), copy_distribution_dense(attn, ids, 11), atol=1e-6)


@pytest.mark.parametrize("copy", ["self", "normal", "twohop", "hop2"])
def test_copy_distribution_properties(tok: WordPieceTokenizer, copy: str) -> None:
    model = make_model(tok, copy)
    b = rich_batch(tok)
    cat = tok.encode("cat")[0]
    with torch.no_grad():
        enc = model.encode(**b)
        labels = offset_labels(b["input_ids"], b["seg"], b["lengths"])
        b_idx, i_idx = labels.nonzero(as_tuple=True)
        weights = model.copy_weights(enc, b_idx, i_idx)
        p_c = model.copy_distribution(enc, b_idx, i_idx)
        assert torch.allclose(p_c.sum(-1), torch.ones(len(b_idx)), atol=1e-5)
        for n, (bi, ii) in enumerate(zip(b_idx.tolist(), i_idx.tolist(), strict=True)):
            ids = b["input_ids"][bi]
            where = ((ids == cat) & enc.mask[bi, ii]).nonzero().flatten()  # visible copies of 'cat'
            if bi == 0:
                assert len(where) >= 3  # 3 in the paragraph (+1 once the question's 'cat' is generated)
            assert torch.allclose(p_c[n, cat], weights[n, where].sum(), atol=1e-6)
            visible = set(ids[enc.mask[bi, ii]].tolist())
            invisible = [v for v in range(model.vocab_size) if v not in visible]
            assert p_c[n, invisible].abs().max() == 0
        mix = model.row_log_probs(enc, b_idx, i_idx).exp().sum(-1)
        assert torch.allclose(mix, torch.ones_like(mix), atol=1e-5)


def test_normal_copy_scatter_bug_flag(tok: WordPieceTokenizer) -> None:
    model = make_model(tok, "normal", scatter_segment_bug=True)
    b = rich_batch(tok)
    with torch.no_grad():
        enc = model.encode(**b)
        p_c = model.copy_distribution(enc, torch.tensor([0, 0]), torch.tensor([15, 16]))
    assert torch.allclose(p_c[:, :2].sum(-1), torch.ones(2), atol=1e-5)  # all mass on ids 0/1


def test_pre_and_post_dropout_maps(tok: WordPieceTokenizer) -> None:
    b = rich_batch(tok)
    labels = offset_labels(b["input_ids"], b["seg"], b["lengths"])
    b_idx, i_idx = labels.nonzero(as_tuple=True)
    sums = {}
    for mode in ("post", "pre"):
        model = make_model(tok, "self", copy_attention=mode).train()
        with torch.no_grad():
            sums[mode] = model.copy_weights(model.encode(**b), b_idx, i_idx).sum(-1)
    assert torch.allclose(sums["pre"], torch.ones_like(sums["pre"]), atol=1e-5)
    assert not torch.allclose(sums["post"], torch.ones_like(sums["post"]), atol=1e-3)  # dropout-rescaled rows


# ---------------------------------------------------------------------- 5. gate extremes
@pytest.mark.parametrize("copy", ["self", "normal", "twohop"])
def test_gate_extremes(tok: WordPieceTokenizer, copy: str) -> None:
    model = make_model(tok, copy)
    b = rich_batch(tok)
    labels = offset_labels(b["input_ids"], b["seg"], b["lengths"])
    b_idx, i_idx = labels.nonzero(as_tuple=True)
    with torch.no_grad():
        enc = model.encode(**b)
        nocopy = torch.log_softmax(model.head(enc.hidden[b_idx, i_idx]), -1)
        p_c = model.copy_distribution(enc, b_idx, i_idx)
        model.p_value.bias.fill_(30.0)
        assert torch.allclose(model.row_log_probs(enc, b_idx, i_idx), nocopy, atol=1e-5)
        model.p_value.bias.fill_(-30.0)
        logp = model.row_log_probs(enc, b_idx, i_idx)
        seen = p_c > 1e-6
        assert torch.allclose(logp[seen], p_c[seen].log(), atol=1e-4)
        assert (logp[p_c == 0] < -25).all()


# ---------------------------------------------------------------------- 6. decode consistency
@pytest.mark.parametrize(("copy", "beam"), [("self", 1), ("twohop", 1), ("normal", 1), ("self", 5)])
def test_decode_consistency(tok: WordPieceTokenizer, copy: str, beam: int) -> None:
    model = make_model(tok, copy, seed=3)
    para = tok.encode("the cat sat on the mat . the big cat ran")
    feat = Feature((CLS, *para, MASK), (2, 2))
    steps: list[torch.Tensor] = []
    scorer = StepScorer(model, feat)

    def step(prefixes):
        out = scorer(prefixes)
        steps.append(out)
        return out

    with torch.inference_mode():
        best, hyps = beam_search(step, SEP, beam_size=beam, n_best=1 if beam == 1 else 20, max_length=8)
        if beam == 1:
            greedy = sum(float(s[0].max()) for s in steps)  # pad is never the argmax here or it is blocked
            assert abs(greedy - best.score) < 1e-4 or PAD in [int(s[0].argmax()) for s in steps]
        for hyp in hyps[:5]:
            tf = Feature(feat.context, feat.answer, hyp.tokens)
            batch = collate([tf])
            full = model.all_log_probs(**batch)
            n = len(feat.context) - 1
            ll = sum(float(full[0, n + k, t]) for k, t in enumerate(hyp.tokens))
            assert abs(ll - hyp.score) < 1e-3, (hyp, ll)


@pytest.mark.parametrize("copy", COPY_MODES)
def test_cached_decoding_matches_full_recompute(tok: WordPieceTokenizer, copy: str) -> None:
    from systems.copybert.data import CachedStepScorer

    model = make_model(tok, copy, seed=5)
    para = tok.encode("the cat sat on the mat . the big cat ran . a red cat")
    feat = Feature((CLS, *para, MASK), (2, 2))
    with torch.inference_mode():
        full, full_hyps = beam_search(StepScorer(model, feat), SEP, beam_size=5, n_best=20, max_length=10)
        fast, fast_hyps = beam_search(
            CachedStepScorer(model, feat), SEP, beam_size=5, n_best=20, max_length=10
        )
    assert fast.tokens == full.tokens
    assert [h.tokens for h in fast_hyps] == [h.tokens for h in full_hyps]
    assert all(abs(a.score - b.score) < 1e-3 for a, b in zip(fast_hyps, full_hyps, strict=True))


@pytest.mark.parametrize("copy", COPY_MODES)
def test_buffer_decoding_equals_concat_cache_bitwise(tok: WordPieceTokenizer, copy: str) -> None:
    """The in-place KVBuffer scorer gives bit-identical log-probs (hence identical hypotheses) to the
    concatenating KVCache scorer at every step of a beam-5 search, through beam reordering (parents
    permuted and repeated, the row count changing 1 -> U) and a buffer growth (``room`` too small).
    A search scores one feature, so its rows never carry padding (all prefixes share one length)."""
    from systems.backbone import KVBuffer, KVCache
    from systems.copybert.data import CachedStepScorer

    model = make_model(tok, copy, seed=6)
    para = tok.encode("the cat sat on the mat . the big cat ran . a red cat")
    feat = Feature((CLS, *para, MASK), (2, 2))
    old, new = CachedStepScorer(model, feat, in_place=False), CachedStepScorer(model, feat, room=2)
    logs: list[tuple[torch.Tensor, torch.Tensor]] = []
    permuted = []

    def step(prefixes):
        keys = list(dict.fromkeys(tuple(p) for p in prefixes))
        if new.index and all(keys):
            permuted.append([new.index[k[:-1]] for k in keys] != list(range(len(keys))))
        a, b = old(prefixes), new(prefixes)
        logs.append((a, b))
        return b

    with torch.inference_mode():
        best, hyps = beam_search(step, SEP, beam_size=5, n_best=20, max_length=12)
        again = CachedStepScorer(model, feat, in_place=False)
        ref, ref_hyps = beam_search(again, SEP, beam_size=5, n_best=20, max_length=12)
    assert isinstance(new.cache, KVBuffer) and isinstance(old.cache, KVCache)
    assert len(logs) >= 6 and any(permuted)
    assert all(torch.equal(a, b) for a, b in logs)
    assert new.cache.capacity > len(feat.context) + 2  # grew past the initial room
    assert best == ref and hyps == ref_hyps


def test_beam_search_rules() -> None:
    """A scripted model: [SEP] ends hypotheses, n_best collected, length-normalised pick with +1."""
    vocab = 6

    def step(prefixes):
        out = torch.full((len(prefixes), vocab), -9.0)
        for r, p in enumerate(prefixes):
            out[r, 5] = -0.1  # keep going with token 5
            out[r, SEP] = -1.0 if len(p) < 3 else -0.05
        return out

    best, hyps = beam_search(step, SEP, blocked=(PAD,), beam_size=2, n_best=3, max_length=10)
    assert all(h.finished for h in hyps[:3]) and len(hyps) >= 3
    assert best == max(hyps, key=lambda h: h.score / (1 + len(h.tokens)))
    assert best.tokens[-1] == SEP


def looping_step(prefixes):
    """A scripted model that prefers the loop 5 6 5 6 … over ending; ending costs the same at any length."""
    out = torch.full((len(prefixes), 8), -9.0)
    for r, p in enumerate(prefixes):
        nxt = 6 if p and p[-1] == 5 else 5
        out[r, nxt] = -0.05
        out[r, 7] = -0.5  # a fresh word
        out[r, SEP] = -0.3 if p else -5.0
    return out


def test_length_penalty_zero_picks_the_raw_best_and_one_is_the_reference() -> None:
    ref, hyps = beam_search(looping_step, SEP, blocked=(PAD,), beam_size=3, n_best=5, max_length=12)
    assert ref == max(hyps, key=lambda h: h.score / (1 + len(h.tokens)))  # default: the reference's pick
    assert ref == beam_search(looping_step, SEP, beam_size=3, n_best=5, max_length=12, length_penalty=1.0)[0]
    raw, raw_hyps = beam_search(looping_step, SEP, beam_size=3, n_best=5, max_length=12, length_penalty=0.0)
    assert raw == max(raw_hyps, key=lambda h: h.score)
    assert len(raw.tokens) < len(ref.tokens)  # the average favours the long loop; the raw score does not


def test_no_repeat_ngram_blocks_loops_in_every_slot() -> None:
    _, loose = beam_search(looping_step, SEP, beam_size=3, n_best=5, max_length=12)
    assert any(h.tokens[:4] == (5, 6, 5, 6) for h in loose)  # the loop is there without blocking
    for n in (2, 3):
        _, hyps = beam_search(looping_step, SEP, beam_size=3, n_best=5, max_length=12, no_repeat_ngram=n)
        for h in hyps:
            words = [t for t in h.tokens if t != SEP]
            grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
            assert len(grams) == len(set(grams)), (n, h.tokens)


def test_search_settings_are_decode_only() -> None:
    """`--set no_repeat_ngram=3` (or any search setting) decodes the plain run's model; lr trains anew."""
    from bench.runs import training_key
    from systems import build

    plain = build("copybert_selfcopy", "cpu")
    search = {"beam_size": 3, "n_best": 5, "length_penalty": 0.0, "no_repeat_ngram": 3, "max_decode_len": 24}
    assert training_key(build("copybert_selfcopy", "cpu", search), "squad_qg") == training_key(plain, "squad_qg")
    assert training_key(build("copybert_selfcopy", "cpu", {"lr": 3e-4}), "squad_qg") != training_key(
        plain, "squad_qg"
    )
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        build("copybert_selfcopy", "cpu", {"no_repeat_ngram": -1})


# ---------------------------------------------------------------------- 7. overfit
TRIPLES = [
    ("the cat sat on the mat", "mat", "where did the cat sit ?"),
    ("the dog ran to the park", "park", "where did the dog run ?"),
    ("a red cat sat on a big mat", "red", "what cat sat ?"),
    ("the big dog ran", "big", "what dog ran ?"),
    ("the cat ran to the dog", "cat", "who ran to the dog ?"),
    ("the dog sat on the cat", "dog", "who sat on the cat ?"),
    ("a big red dog sat", "sat", "what did the dog do ?"),
    ("the mat is red", "red", "what is the mat ?"),
]


@pytest.mark.slow
def test_overfit_selfcopy(tok: WordPieceTokenizer) -> None:
    from bench.api.types import Example
    from systems.copybert.data import CachedStepScorer
    from systems.copybert.features import Layout

    layout = Layout(CLS, MASK, SEP, max_seq_length=64)
    feats = []
    for para, ans, q in TRIPLES:
        ex = Example(
            "x",
            f"{ans} [SEP] {para}",
            q,
            {"paragraph": para, "answer": ans, "question": q, "answer_start": str(para.index(ans))},
        )
        feats += layout.train_features(tok, ex)
    assert len(feats) == 8
    model = make_model(tok, "self", seed=1).train()
    batch = collate(feats)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(300):
        loss = model(**batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        assert float(model.loss(**batch)) < 0.05
        for f, (_, _, q) in zip(feats, TRIPLES, strict=True):
            ctx = Feature(f.context, f.answer)
            for beam in (1, 5):
                with torch.inference_mode():
                    best, _ = beam_search(CachedStepScorer(model, ctx), SEP, beam_size=beam, n_best=beam * 4)
                assert tok.decode(output_tokens(best, (SEP, PAD))) == q.replace(" ?", "?").replace("?", " ?")
