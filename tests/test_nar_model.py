"""§4.11 tests that need the model: cache equivalence (3), source independence (4), decoders, overfit (8)."""

from __future__ import annotations

import random

import pytest
import torch

from systems.backbone import tiny_backbone
from systems.nar.decode import SpecialIds, decode, decode_mask_predict
from systems.nar.layout import joint_inputs
from systems.nar.model import NATModel, SourcePass
from systems.nar.train import Specials, StepConfig, loss_terms

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
IDS = SpecialIds(PAD, CLS, SEP, MASK)
SP = Specials(PAD, CLS, SEP, MASK)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model(seed: int = 0, dropout: float = 0.0) -> NATModel:
    torch.manual_seed(seed)
    return NATModel(
        tiny_backbone(vocab_size=120, hidden=64, layers=2, heads=4, max_position=128, dropout=dropout)
    )


def _batch() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    src_len = torch.tensor([9, 4, 6])
    tgt_len = torch.tensor([5, 3, 7])
    src = torch.randint(10, 120, (3, 9), generator=g)
    tgt = torch.randint(10, 120, (3, 7), generator=g)
    for i in range(3):
        src[i, 0], src[i, src_len[i] - 1], src[i, src_len[i] :] = CLS, SEP, PAD
        tgt[i, tgt_len[i] :] = PAD
    tgt[:, ::2] = torch.where(tgt[:, ::2] != PAD, MASK, PAD)  # mixed [MASK] / tokens, as in Mask-Predict
    return src, src_len, tgt, tgt_len


# ---- 3. cache equivalence ------------------------------------------------------------------------
def test_cached_target_pass_equals_joint_pass() -> None:
    model = _model().eval()
    src, src_len, tgt, tgt_len = _batch()
    with torch.no_grad():
        joint_tok, joint_len = model.joint(src, src_len, tgt, tgt_len)
        source = model.encode_source(src, src_len)
        cached_tok = model.target_logits(source, tgt, tgt_len)
    real = torch.arange(tgt.shape[1])[None, :] < tgt_len[:, None]
    assert real.sum() < real.numel()  # padding present
    torch.testing.assert_close(cached_tok[real], joint_tok[real], atol=1e-4, rtol=0)
    torch.testing.assert_close(source.length_logits, joint_len, atol=1e-4, rtol=0)
    # batch size 1 (mask dropped -> SDPA's unmasked path) agrees with the batched pass
    with torch.no_grad():
        one = model.target_logits(model.encode_source(src[1:2, :4], src_len[1:2]), tgt[1:2, :3], tgt_len[1:2])
    torch.testing.assert_close(one[0], joint_tok[1, :3], atol=1e-4, rtol=0)


# ---- 4. source independence -----------------------------------------------------------------------
def test_source_states_do_not_depend_on_target() -> None:
    model = _model().eval()
    src, src_len, tgt, tgt_len = _batch()
    other = torch.where(tgt != PAD, (tgt * 7) % 100 + 10, tgt)
    s = src.shape[1]
    outs, lens = [], []
    with torch.no_grad():
        for t in (tgt, other):
            inp = joint_inputs(src, src_len, t, tgt_len)
            h = model.backbone(
                inp.input_ids, inp.token_type_ids, inp.position_ids, attention_mask=inp.attention_mask
            ).last_hidden_state
            outs.append(h[:, :s])
            lens.append(model.joint(src, src_len, t, tgt_len)[1])
    real = torch.arange(s)[None, :] < src_len[:, None]
    torch.testing.assert_close(outs[0][real], outs[1][real], atol=1e-6, rtol=0)
    torch.testing.assert_close(lens[0], lens[1], atol=1e-6, rtol=0)
    assert not torch.allclose(
        model.joint(src, src_len, tgt, tgt_len)[0], model.joint(src, src_len, other, tgt_len)[0]
    )


# ---- Mask-Predict mechanics with a stub model ------------------------------------------------------
class _StubModel:
    """Returns fixed per-slot confidences so the re-masked slots are known in advance."""

    max_position = 512

    def __init__(self, conf: list[float], vocab: int = 50) -> None:
        self.conf, self.vocab, self.inputs = torch.tensor(conf), vocab, []

    def encode_source(self, src: torch.Tensor, src_len: torch.Tensor) -> SourcePass:
        logits = torch.zeros(src.shape[0], 512)
        logits[:, len(self.conf)] = 1.0
        return SourcePass(torch.zeros(src.shape[0], src.shape[1], 4), None, logits, src_len)

    def target_logits(self, source: SourcePass, tgt: torch.Tensor, tgt_len: torch.Tensor) -> torch.Tensor:
        self.inputs.append(tgt.clone())
        step = len(self.inputs)
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], self.vocab)
        for j in range(tgt.shape[1]):
            c = 0.3 * float(self.conf[j]) + step  # the same order of confidence every pass
            logits[:, j, 10 + step] = c  # token id reveals which pass predicted it
        return logits


def test_mask_predict_remasks_lowest_probability_linear_decay() -> None:
    conf = [5, 1, 9, 2, 8, 3, 7, 4, 6, 0]  # T = 10 (the length head argmax is 10)
    stub = _StubModel(conf)
    src, src_len = torch.tensor([[CLS, 20, SEP]]), torch.tensor([3])
    out = decode_mask_predict(stub, src, src_len, IDS, iterations=3, clamp=(1, 48))  # type: ignore[arg-type]
    assert out.passes == 3 and out.lengths.tolist() == [10]
    masked = [(x[0] == MASK).nonzero().flatten().tolist() for x in stub.inputs]
    assert len(masked[0]) == 10
    order = sorted(range(10), key=lambda j: conf[j])
    assert sorted(masked[1]) == sorted(order[:6])  # 6 lowest
    assert sorted(masked[2]) == sorted(order[:3])  # then 3 lowest (probabilities updated only there)
    toks = out.tokens[0].tolist()
    assert all(toks[j] == 13 for j in order[:3]) and all(toks[j] == 12 for j in order[3:6])
    assert all(toks[j] == 11 for j in order[6:])


# ---- 8. overfit ----------------------------------------------------------------------------------
def _pairs(n: int = 8) -> tuple[torch.Tensor, ...]:
    rng = random.Random(3)
    srcs, tgts = [], []
    for i in range(n):
        srcs.append([CLS] + [rng.randrange(10, 120) for _ in range(4 + i % 3)] + [SEP])
        tgts.append([rng.randrange(10, 120) for _ in range(6 + i % 4)] + [SEP])  # lengths 7..10 incl. [SEP]
    from systems.nar.data import pad_batch

    src, src_len = pad_batch(srcs, PAD)
    tgt, tgt_len = pad_batch(tgts, PAD)
    return src, src_len, tgt, tgt_len


def _overfit(mist: bool, steps: int) -> tuple[NATModel, tuple[torch.Tensor, ...]]:
    model = _model(seed=0, dropout=0.0)
    src, src_len, tgt, tgt_len = _pairs()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    cfg = StepConfig(mist=mist, max_source_len=32)
    g = torch.Generator().manual_seed(0)
    model.train()
    for _ in range(steps):
        batch = {
            "src": src,
            "src_len": src_len,
            "tgt": tgt,
            "tgt_len": tgt_len,
            "glat_scores": torch.rand(tgt.shape, generator=g),
            "seed": torch.tensor(0),
        }
        loss = loss_terms(model, batch, cfg, SP)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval(), (src, src_len, tgt, tgt_len)


@pytest.mark.parametrize("mist", [False, True])
def test_overfit_eight_pairs(mist: bool) -> None:
    model, (src, src_len, tgt, tgt_len) = _overfit(mist, steps=250)
    out = decode(model, src, src_len, IDS)  # default clamp [7, 48]; targets are 7..10 long
    assert torch.equal(out.lengths, tgt_len), "length accuracy must be 100 %"
    assert torch.equal(out.tokens[:, : tgt.shape[1]], tgt), "single-pass exact match 8/8"
    if mist:
        second = decode(model, src, src_len, IDS, method="mist_iter", iterations=2, max_source_len=32)
        assert second.passes == 2
        assert torch.equal(second.tokens[:, : tgt.shape[1]], tgt), "the MIST second pass is also exact"
        mp = decode(model, src, src_len, IDS, method="mask_predict", iterations=3)
        assert mp.passes == 3


def test_loss_terms_glat_flags_change_the_loss() -> None:
    model = _model(seed=0, dropout=0.1).train()
    src, src_len, tgt, tgt_len = _pairs()
    batch = {
        "src": src,
        "src_len": src_len,
        "tgt": tgt,
        "tgt_len": tgt_len,
        "glat_scores": torch.rand(tgt.shape),
        "seed": torch.tensor(5),
    }
    base = loss_terms(model, batch, StepConfig(), SP)
    assert base["revealed"] > 0  # an untrained model is wrong almost everywhere
    assert set(base) == {"tok", "len", "revealed", "loss"}
    torch.testing.assert_close(base["loss"], base["tok"] + base["len"])
    mist = loss_terms(model, batch, StepConfig(mist=True, max_source_len=32), SP)
    torch.testing.assert_close(mist["loss"], mist["tok"] + mist["len"] + mist["mist"])
    from systems.nar.glat import GlatConfig

    shared = StepConfig(glat=GlatConfig(share_dropout_seed=True))
    a, b = loss_terms(model, batch, shared, SP), loss_terms(model, batch, shared, SP)
    torch.testing.assert_close(a["loss"], b["loss"])  # same seed -> same dropout in both passes
    off = loss_terms(model, batch, StepConfig(glat=GlatConfig(enabled=False)), SP)
    assert off["revealed"] == 0


# ---- 5. GLAT through the training step, with a stub model ----------------------------------------
class _WrongAt(torch.nn.Module):
    """Argmax = gold except at the first ``w_plain`` slots (original source) or the first ``w_mist``
    slots (a MIST source, recognised by its length), so the glance pass that was used is visible."""

    def __init__(
        self, gold: torch.Tensor, src_width: int, w_plain: int, w_mist: int, vocab: int = 130
    ) -> None:
        super().__init__()
        self.gold, self.src_width, self.w_plain, self.w_mist, self.vocab = (
            gold,
            src_width,
            w_plain,
            w_mist,
            vocab,
        )
        self.p = torch.nn.Parameter(torch.zeros(()))

    def joint(self, src, src_len, tgt, tgt_len):
        w = self.w_mist if src.shape[1] != self.src_width else self.w_plain
        pred = self.gold.clone()
        pred[:, :w] = (pred[:, :w] + 1) % self.vocab
        logits = torch.nn.functional.one_hot(pred, self.vocab).float() * 10 + self.p
        return logits, torch.zeros(src.shape[0], 512) + self.p


@pytest.mark.parametrize("mist", [False, True])
def test_glat_counts_with_a_stub_model(mist: bool) -> None:
    src, src_len, tgt, tgt_len = _pairs()
    stub = _WrongAt(tgt, src.shape[1], w_plain=5, w_mist=3)
    batch = {
        "src": src,
        "src_len": src_len,
        "tgt": tgt,
        "tgt_len": tgt_len,
        "glat_scores": torch.rand(tgt.shape),
        "seed": torch.tensor(0),
    }
    out = loss_terms(stub, batch, StepConfig(mist=mist, max_source_len=32), SP)  # type: ignore[arg-type]
    per_row = (5 if not mist else 3) // 2
    assert int(out["revealed"]) == per_row * tgt.shape[0]
    perfect = _WrongAt(tgt, src.shape[1], w_plain=0, w_mist=0)
    assert int(loss_terms(perfect, batch, StepConfig(mist=mist, max_source_len=32), SP)["revealed"]) == 0  # type: ignore[arg-type]
