"""ERNIE-GEN §3.9 test 6 (overfit) and an end-to-end smoke run of the System adapter."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from bench.api.types import (  # noqa: E402
    Example,
    TaskInfo,
)
from systems.backbone import WordPieceTokenizer, tiny_backbone, tiny_vocab  # noqa: E402
from systems.erniegen.data import Encoder, collate, scored  # noqa: E402
from systems.erniegen.decode import DecodeIds, infilling_decode  # noqa: E402
from systems.erniegen.model import ErnieGen  # noqa: E402
from systems.training import paddle_smoothed_loss  # noqa: E402

WORDS = ["[ATTN]", "what", "who", "when", "where", "is", "was", "the", "a", "cat", "dog", "king", "city",
         "born", "built", "red", "blue", "old", "new", "river"]
VOCAB = tiny_vocab(WORDS)
PAIRS = [
    ("cat [SEP] the red cat", "what is red"),
    ("dog [SEP] the blue dog", "what is blue"),
    ("king [SEP] the old king was born", "who was born"),
    ("city [SEP] the new city was built", "what was built"),
    ("river [SEP] the river is old", "what is old"),
    ("red [SEP] the cat is red", "what is the cat"),
    ("king [SEP] a king is new", "who is new"),
    ("dog [SEP] the dog was born", "when was the dog born"),
]


def overfit(noise: float, steps: int, seed: int = 0) -> int:
    """Train a tiny model on 8 pairs; return how many greedy decodes match their target exactly.

    One torch thread: on a shared 2-core CI box, 2 threads on tiny matrices are ~6x slower.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _overfit(noise, steps, seed)
    finally:
        torch.set_num_threads(threads)


def _overfit(noise: float, steps: int, seed: int) -> int:
    tok = WordPieceTokenizer(VOCAB, extra_special=["[ATTN]"])
    enc = Encoder(tok, 24, 10, 3)
    pairs = enc.pairs([Example(str(i), s, t) for i, (s, t) in enumerate(PAIRS)])
    bb = tiny_backbone(vocab_size=len(VOCAB), hidden=64, layers=2, heads=4, type_vocab_size=4, seed=seed)
    model = ErnieGen(bb, attn_id=tok.vocab["[ATTN]"], tgt_type_id=3)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    rng = random.Random(seed)
    model.train()
    for _ in range(steps):
        batch = collate(pairs, rng, tok.pad_id, noise, len(VOCAB))
        logits = model(batch["src"], batch["src_types"], batch["src_len"], batch["tgt_in"], batch["tgt_len"])
        mask, labels = scored(batch["labels"], batch["tgt_len"])
        loss = paddle_smoothed_loss(logits[mask], labels[mask], 0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    batch = collate(pairs, rng, tok.pad_id, 0.0, len(VOCAB))
    out = infilling_decode(model, batch["src"], batch["src_types"], batch["src_len"],
                           DecodeIds(tok.cls_id, tok.sep_id), beam_size=1, max_len=10)
    return sum(list(p.tgt[1:-1]) == o for p, o in zip(pairs, out, strict=True))


def test_overfit_noise_0() -> None:
    assert overfit(0.0, 150) == 8


@pytest.mark.slow
def test_overfit_noise_07() -> None:
    assert overfit(0.7, 600) >= 7


def _task(n: int) -> TaskInfo:
    r = random.Random(0)
    nouns = ["cat", "dog", "king", "city", "river"]
    exs = []
    for i in range(n):
        a, b = r.choice(nouns), r.choice(nouns)
        exs.append(Example(str(i), f"{a} [SEP] the {a} saw the {b} near the river", f"what did the {a} see?"))
    return TaskInfo("toy", exs, exs[:8], 64, 24)


def test_system_smoke(tmp_path) -> None:
    from systems import build

    sys_ = build("erniegen_base", "smoke", {"steps": 6, "batch_size": 4, "train_examples": 40})
    info = sys_.describe()
    assert info.name == "erniegen_base" and "[ATTN]" in info.backbone
    sys_.fit(_task(40), tmp_path / "run")
    exs = _task(6).train
    outs = sys_.decode(exs)
    assert len(outs) == 6 and all(isinstance(o, str) for o in outs)
    assert [sys_.decode_one(e) for e in exs] == outs
    assert (tmp_path / "run" / "checkpoints").is_dir()
    # resume: a second fit on a finished workdir loads the last checkpoint and trains no further
    again = build("erniegen_base", "smoke", {"steps": 6, "batch_size": 4, "train_examples": 40})
    again.fit(_task(40), tmp_path / "run")
    assert again.decode(exs) == outs
    # init_from: another system decodes this run's model without training (same outputs, provenance kept)
    loaded = build("erniegen_base", "smoke", {"init_from": str(tmp_path / "run")})
    assert not loaded.needs_training and again.needs_training
    loaded.fit(_task(40), tmp_path / "other")
    assert loaded.decode(exs) == outs
    assert loaded.describe().config["loaded_from"]["workdir"] == str(tmp_path / "run")
    assert "loaded_from" not in again.describe().config
    assert not (tmp_path / "other" / "checkpoints").exists()
    with pytest.raises(ValueError, match="tgt_type_id=3"):
        bad = build("erniegen_base", "smoke", {"init_from": str(tmp_path / "run"), "tgt_type_id": 1})
        bad.fit(_task(4), tmp_path / "x")
    with pytest.raises(FileNotFoundError, match="erniegen_model.json not found"):
        build("erniegen_base", "smoke", {"init_from": str(tmp_path / "other")}).fit(_task(4), tmp_path / "y")
    assert build("erniegen_large", "cpu", {}).describe().backbone.startswith("minilm-l6 + added [ATTN]")
    with pytest.raises(ValueError, match="Unknown override"):
        build("erniegen_base", "smoke", {"nope": 1})


def test_reversed_split_run_decodes_the_squad_qg_model(tmp_path, monkeypatch) -> None:
    """End to end: `bench run` on squad_qg_reversed after squad_qg trains nothing (same training split, and
    ERNIE-GEN's weights do not depend on dev); its record names the squad_qg training run."""
    import os
    from pathlib import Path

    data = Path(os.environ.get("BENCH_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    if not data.is_dir():
        pytest.skip(f"data dir {data} not found")
    from bench.runs import RunSpec
    from bench.runs.pipeline import execute

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    torch.set_num_threads(1)
    tiny = {"steps": 4, "batch_size": 4, "train_examples": 16}
    quiet = lambda _m: None  # noqa: E731
    du = execute(RunSpec("erniegen_base", "squad_qg", budget="smoke", overrides=tiny, limit=4),
                 results_dir=tmp_path / "results", say=quiet)
    rev = execute(RunSpec("erniegen_base", "squad_qg_reversed", budget="smoke", overrides=tiny, limit=4),
                  results_dir=tmp_path / "results", say=quiet)
    assert rev["model"] == du["model"] and "squad_qg--" in rev["model"]["training_run_id"]
    assert len(list((tmp_path / "cache" / "runs").iterdir())) == 1
    assert rev["data"]["split_sha256"] != du["data"]["split_sha256"]  # each decoded its own test split
