"""UniLM (docs/systems.md §2.7): mask, masking statistics, incremental == full, overfit to exact greedy output."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from bench.api.types import (  # noqa: E402
    Example,
    TaskInfo,
)
from systems import build  # noqa: E402
from systems.backbone import tiny_backbone, unilm_mask  # noqa: E402
from systems.unilm import (  # noqa: E402
    LazyParts,
    S2SFTCollator,
    UniLMConfig,
    UniLMDecoder,
    V1Collator,
    make_config,
    s2sft_mask,
)

CLS, SEP, MASK = 2, 3, 4


def test_unilm_mask_for_a3_b2_matches_spec() -> None:
    len_a, len_b, L = 3, 2, 10  # [CLS] a a a [SEP] b b [SEP] pad pad
    m = unilm_mask([len_a], [len_b], L)[0]
    tgt = range(len_a + 2, len_a + len_b + 3)
    for i in range(L):
        for j in range(L):
            expect = j < len_a + 2 or (i in tgt and j in tgt and j <= i)
            assert bool(m[i, j]) == expect, (i, j)


def test_masking_statistics_over_10k_samples() -> None:
    cfg = UniLMConfig(mask_prob=0.7, max_pred=48)
    col = V1Collator(CLS, SEP, MASK, 1000, cfg)
    rng = random.Random(0)
    kinds = {"mask": 0, "random": 0, "same": 0}
    sep_picked = 0
    for _ in range(10_000):
        a = [rng.randrange(10, 1000) for _ in range(rng.randrange(1, 30))]
        b = [rng.randrange(10, 1000) for _ in range(rng.randrange(1, 20))]
        ex = col.example(a, b, rng)
        assert len(ex["pos"]) == col.n_pred(len(b)) == min(48, max(1, round(len(b) * 0.7)))
        assert 0 not in ex["pos"] and min(ex["pos"]) >= len(a) + 2  # never [CLS], never the source
        sep_picked += (len(a) + len(b) + 2) in ex["pos"]
        for p, g in zip(ex["pos"], ex["gold"], strict=True):
            tok = ex["ids"][p]
            kinds["mask" if tok == MASK else "same" if tok == g else "random"] += 1
    total = sum(kinds.values())
    assert abs(kinds["mask"] / total - 0.8) < 0.01
    assert abs(kinds["random"] / total - 0.1) < 0.01 and abs(kinds["same"] / total - 0.1) < 0.01
    assert sep_picked > 100


def test_s2sft_mask_and_layout() -> None:
    m = s2sft_mask(torch.tensor([2]), torch.tensor([2]), 3, 2)[0].int()  # src(3, 1 pad) | t t | p p
    assert m[:, :2].all() and not m[:, 2].any()
    assert m[3, 3:].tolist() == [1, 0, 0, 0] and m[4, 3:].tolist() == [1, 1, 0, 0]
    assert m[5, 3:].tolist() == [0, 0, 1, 0] and m[6, 3:].tolist() == [1, 0, 0, 1]
    assert not m[:3, 3:].any()
    cfg = UniLMConfig(variant="s2sft", max_source_len=10, max_target_len=5)
    batch = S2SFTCollator(CLS, SEP, MASK, 50, cfg)([([10, 11], [20, 21, 22])], random.Random(0))
    assert batch["pred_ids"][0].tolist() == [20, 21, 22, SEP]
    assert batch["position_ids"][0].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7]


def _model(seed: int = 0) -> torch.nn.Module:
    bb = tiny_backbone(vocab_size=40, hidden=32, layers=2, heads=4, seed=seed)
    return LazyParts.model_class()(bb, 0.1).eval()


@pytest.mark.parametrize(("types", "room"), [((0, 1), 64), ((1, 1), 1)])  # room 1: the K/V buffer must grow
def test_incremental_decoding_equals_full_forward(types: tuple[int, int], room: int) -> None:
    model = _model()
    sources = [[CLS, 10, 11, 12, SEP], [CLS, 13, SEP]]
    cached = UniLMDecoder(model, MASK, *types, use_cache=True, max_len=room)
    full = UniLMDecoder(model, MASK, *types, use_cache=False)
    sc, sf = cached.start(sources), full.start(sources)
    prev = None
    ys: list[list[int]] = [[], []]
    with torch.no_grad():
        for _ in range(5):
            lc, sc = cached.step(sc, prev)
            lf, sf = full.step(sf, prev)
            assert torch.allclose(lc, lf, atol=1e-4)
            # an independent reference per example: unpadded [CLS] a [SEP] y<t [MASK], unilm mask
            for b, src in enumerate(sources):
                ids = torch.tensor([src + ys[b] + [MASK]])
                n = ids.shape[1]
                tt = torch.tensor([[types[0]] * len(src) + [types[1]] * (n - len(src))])
                mask = unilm_mask([len(src) - 2], [len(ys[b])], n)
                h = model.bert(ids, tt, torch.arange(n)[None], mask).last_hidden_state
                ref = model.cls(h[:, -1]).log_softmax(-1)
                assert torch.allclose(lc[b : b + 1], ref, atol=1e-4)
            prev = torch.tensor([17 + len(ys[0]), 30 - len(ys[1])])  # teacher-forced tokens
            for b in range(2):
                ys[b].append(int(prev[b]))


def test_beam_search_with_cache_equals_without() -> None:
    """Beam reordering copies the K/V buffer per beam; a shared buffer would corrupt the other beams."""
    from systems.decoding import SearchConfig, beam_search

    model = _model(seed=3)
    sources = [[CLS, 10, 11, 12, 14, SEP], [CLS, 13, SEP]]
    cfg = SearchConfig(beam_size=3, max_len=6, eos_id=SEP)
    outs = []
    with torch.inference_mode():
        for use_cache in (True, False):
            dec = UniLMDecoder(model, MASK, 0, 1, use_cache=use_cache, max_len=2)
            outs.append(beam_search(dec, dec.start(sources), len(sources), cfg))
    assert outs[0] == outs[1] and all(outs[0])


def _pairs() -> list[Example]:
    words = "alpha beta gamma delta river mountain city king paris rome".split()
    rng = random.Random(1)
    out = []
    for i in range(8):
        para = " ".join(rng.choice(words) for _ in range(8))
        ans = words[i]
        q = f"which {ans} {words[(i * 3 + 1) % 10]} ?"
        out.append(Example(str(i), f"{ans} [SEP] {para}", q))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["unilm", "unilm_s2sft"])
def test_overfit_eight_pairs_to_exact_greedy_reproduction(name: str, tmp_path: Path) -> None:
    exs = _pairs()
    sys_ = build(
        name,
        "smoke",
        {
            "steps": 300,
            "batch_size": 8,
            "lr": 3e-3,
            "warmup": 10,
            "train_examples": None,
            "label_smoothing": 0.0,
            "tiny": {"hidden": 64, "layers": 2, "heads": 4, "vocab": 2000, "dropout": 0.0},
        },
    )
    sys_.fit(TaskInfo("toy", exs, exs, 32, 8), tmp_path)
    out = sys_.decode(exs)
    assert out == [e.target for e in exs]
    assert sys_.decode_one(exs[3]) == exs[3].target
    sys_._use_cache = False
    assert sys_.decode(exs) == out  # the uncached decoder agrees


def test_presets_and_overrides() -> None:
    assert make_config("v1", "paper", {}).backbone == "bert-large-cased"
    assert make_config("v1", "paper", {}).type_vocab_size == 6
    cpu = make_config("v1", "cpu", {"steps": 5})
    assert cpu.backbone == "minilm-l6" and cpu.steps == 5
    with pytest.raises(ValueError, match=r"Unknown override\(s\) \['stepz'\] for UniLM v1"):
        make_config("v1", "smoke", {"stepz": 1})
    unknown = r"Unknown override\(s\) .* for UniLM v1; known: .*steps"
    with pytest.raises(ValueError, match=unknown):  # removed: the harness's --limit does it
        make_config("v1", "cpu", {"decode_subset": 100})
    info = build("unilm_s2sft", "smoke", {}).describe()
    assert info.family == "AR" and info.name == "unilm_s2sft"
