"""UniLM seq2seq fine-tuning: the unilm-v1 QG recipe (``unilm``) and s2s-ft pseudo-masking (``unilm_s2sft``).

SYSTEMS.md §2. Both train a BERT-layout backbone with an MLM head on ``[CLS] src [SEP] tgt [SEP]``
under a seq2seq mask and decode left to right with a ``[MASK]`` query per step; the source K/V
is computed once and cached (unilm-v1 caches hidden states, which gives the same numbers).
Registry factories: ``systems.unilm:unilm`` and ``systems.unilm:unilm_s2sft``.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.data.types import Example
from systems.base import System, SystemInfo, TaskInfo, check_budget
from systems.presets import replace_fields

CITATION = "Dong et al., Unified Language Model Pre-training for NLU and NLG, NeurIPS 2019"


@dataclass
class UniLMConfig:
    """Everything a run needs; a budget preset fills it and ``overrides`` may change any field."""

    variant: str = "v1"  # v1 (masked seq2seq LM, §2.3) | s2sft (pseudo masking, §2.6)
    backbone: str = "tiny"  # tiny | minilm-l6 | a checkpoint name/dir (see systems.backbone.load_backbone)
    weights: str | None = None  # weight file overriding the backbone's (unilm1-large-cased.bin)
    # tiny random model; its vocab is built from the training texts (``vocab`` most frequent pieces)
    tiny: dict = field(default_factory=lambda: {"hidden": 64, "layers": 2, "heads": 4, "vocab": 2000, "dropout": 0.1})
    source_type: int = 0
    target_type: int = 1
    type_vocab_size: int | None = None  # grow the type embeddings (6 for --new_segment_ids)
    max_seq_len: int = 512
    max_source_len: int = 464  # incl. [CLS] and [SEP]
    max_target_len: int = 48  # incl. the final [SEP]
    # "head": keep the head of the source (unilm-v1); "answer": for "answer [SEP] paragraph" sources
    # with ``answer_start``, crop the paragraph to a window around the answer (short cpu inputs)
    source_window: str = "head"
    mask_prob: float = 0.7
    max_pred: int = 48
    target_mask_prob: float = 0.5  # s2s-ft: target input tokens replaced by their pseudo token
    label_smoothing: float = 0.1
    train_subset: int | None = None  # first N training examples after a seeded shuffle (None: all)
    epochs: float | None = None  # if set, steps = ceil(epochs * n_train / batch_size)
    steps: int = 1000
    batch_size: int = 32
    grad_accum: int = 1
    lr: float = 2e-5
    warmup: float = 0.1
    optimizer: str = "bertadam"
    schedule: str = "bert"
    weight_decay: float = 0.01
    # speed policy (bench.precision)
    precision: str = "fp32"  # auto | fp32 | bf16 | fp16
    compile: bool = False
    bucket_pool: int = 0  # > 1: length-bucketed training batches
    pad_multiple: int = 1  # training batches padded to a multiple of this
    save_every: int = 0
    seed: int = 42
    beam_size: int = 1
    length_penalty: float = 0.0
    no_repeat_ngram: int = 0
    ngram_ignore: tuple[str, ...] = ()
    decode_max_len: int = 48
    decode_min_len: int = 1
    decode_batch_size: int = 16
    threads: int | None = None  # torch intra-op threads during fit/decode (None: leave as is)
    progress: bool = True


#: the cpu budget's speed policy (benchmarks/bench_training.py measures it; README "Training speed")
CPU_SPEED: dict[str, Any] = {"precision": "auto", "compile": True, "bucket_pool": 32, "pad_multiple": 8}


def presets(variant: str) -> dict[str, UniLMConfig]:
    """The three budgets. Numbers here are what the run record shows next to every score."""
    v1 = variant == "v1"
    smoke = UniLMConfig(
        variant=variant,
        backbone="tiny",
        max_source_len=64,
        max_target_len=16,
        train_subset=256,
        steps=40,
        batch_size=16,
        lr=1e-3,
        warmup=0.1,
        optimizer="adamw",
        schedule="linear",
        decode_max_len=16,
        decode_batch_size=128,
        progress=False,
        threads=1,
    )
    # cpu: MiniLM-L6 from the offline package, 2 cores, ~30 min for train + decode + score.
    # Training: 6,400 examples (a fixed seeded subset of the 75,722 train pairs), one pass:
    # 400 updates x batch 16; source = answer [SEP] a 94-piece paragraph window around the answer
    # (96 with [CLS]/[SEP]), target <= 23 pieces + [SEP]. Decoding: the full squad_qg test
    # (11,877), greedy, <= 20 pieces, batches of 64. Sized from FLOP counts (~8.5 GFLOP per
    # training example, ~3.3 GFLOP per decoded example) against benchmarks/bench_backbone.py.
    cpu = UniLMConfig(
        variant=variant,
        backbone="minilm-l6",
        max_source_len=96,
        max_target_len=24,
        source_window="answer",
        train_subset=6400,
        steps=400,
        batch_size=16,
        lr=1.5e-4,
        warmup=0.1,
        optimizer="bertadam" if v1 else "adamw",
        schedule="bert" if v1 else "linear",
        decode_max_len=20,
        decode_batch_size=64,
        save_every=100,  # a checkpoint (and a dev-loss point on the curve) every 100 updates
        **CPU_SPEED,
    )
    if v1:  # unilm-v1 README QG command (§2.4/§2.5); source is the task's "answer [SEP] paragraph"
        paper = UniLMConfig(
            variant="v1",
            backbone="bert-large-cased",
            weights="unilm1-large-cased.bin",
            source_type=4,
            target_type=5,
            type_vocab_size=6,
            max_seq_len=512,
            max_source_len=464 + 48,
            max_target_len=48 + 1,
            mask_prob=0.7,
            max_pred=48,
            label_smoothing=0.1,
            epochs=10,
            batch_size=32,
            grad_accum=2,
            lr=2e-5,
            warmup=0.1,
            optimizer="bertadam",
            schedule="bert",
            beam_size=1,
            length_penalty=0.0,
            decode_max_len=48,
            decode_batch_size=16,
        )
    else:  # s2s-ft README (XSum command; QG uses the same code path) with unilm1.2-base-uncased
        paper = UniLMConfig(
            variant="s2sft",
            backbone="unilm1.2-base-uncased",
            max_source_len=464,
            max_target_len=48,
            target_mask_prob=0.5,
            label_smoothing=0.1,
            steps=32000,
            batch_size=64,
            lr=7e-5,
            warmup=500,
            optimizer="adamw",
            schedule="linear",
            precision="fp16",
            beam_size=5,
            length_penalty=0.0,
            no_repeat_ngram=3,
            ngram_ignore=(".",),
            decode_max_len=48,
            decode_batch_size=16,
        )
    return {"smoke": smoke, "cpu": cpu, "paper": paper}


def make_config(variant: str, budget: str, overrides: Mapping[str, Any]) -> UniLMConfig:
    """The preset of ``variant`` at ``budget`` with ``overrides`` (an unknown key lists the known ones)."""
    return replace_fields(presets(variant)[check_budget(budget)], dict(overrides), f"UniLM {variant}")


# --------------------------------------------------------------------------- model
def _torch():
    import torch

    return torch


class _Parts:
    """Built lazily so ``import systems.unilm`` stays light."""

    @staticmethod
    def model_class():
        torch = _torch()
        from systems.backbone import Backbone, MLMHead
        from systems.training import unilm_smoothed_loss

        class UniLMModel(torch.nn.Module):
            """Backbone + tied MLM head; ``forward(batch)`` returns the training loss."""

            def __init__(self, backbone: Backbone, smoothing: float) -> None:
                super().__init__()
                self.bert = backbone
                self.cls = MLMHead(backbone.config, backbone.embeddings.word_embeddings)
                self.smoothing = smoothing

            def forward(self, batch: dict) -> Any:
                h = self.bert(
                    batch["input_ids"], batch["token_type_ids"], batch["position_ids"], batch["attention_mask"]
                ).last_hidden_state
                pos = batch["pred_pos"]
                picked = h.gather(1, pos[..., None].expand(-1, -1, h.shape[-1]))
                logits = self.cls(picked)
                return unilm_smoothed_loss(
                    logits.view(-1, logits.shape[-1]), batch["pred_ids"].view(-1), self.smoothing, pad_id=0
                )

        return UniLMModel


def _pad(rows: Sequence[Sequence[int]], width: int, value: int = 0) -> Any:
    torch = _torch()
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(list(r), dtype=torch.long)
    return out


def _corrupt(tok: int, rng: random.Random, mask_id: int, vocab: int) -> int:
    """BERT's 80 % [MASK] / 10 % random word / 10 % unchanged."""
    r = rng.random()
    if r < 0.8:
        return mask_id
    if r < 0.9:
        return rng.randrange(vocab)
    return tok


def answer_window(tok: Any, ex: Example, budget: int) -> list[int]:
    """``answer [SEP] window``: the paragraph cropped to ``budget`` pieces with the answer inside
    (about a third of the room before it). Falls back to the head of ``ex.source`` when the example
    has no ``paragraph``/``answer``/``answer_start`` fields."""
    f = ex.fields
    if not all(k in f for k in ("paragraph", "answer", "answer_start")):
        return tok.encode(ex.source)[:budget]
    ans = tok.encode(f["answer"])[: budget // 4]
    start = int(f["answer_start"])
    before = tok.encode(f["paragraph"][:start])
    after = tok.encode(f["paragraph"][start:])
    room = budget - len(ans) - 1
    n_before = min(len(before), max(room // 3, room - len(after)))
    window = before[len(before) - n_before :] + after[: room - n_before]
    return [*ans, tok.sep_id, *window]


def truncate_pair(a: list[int], b: list[int], budget: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """unilm-v1: trim the longer segment until |a|+|b| <= budget, each trim at head or tail (p=0.5)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        seg = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del seg[0]
        else:
            seg.pop()
    return a, b


@dataclass
class V1Collator:
    """§2.1–2.3: ``[CLS] a [SEP] b [SEP]``, unilm mask, n_pred masked target positions."""

    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    cfg: UniLMConfig

    def n_pred(self, len_b: int) -> int:
        return min(self.cfg.max_pred, max(1, round(len_b * self.cfg.mask_prob)))

    def example(self, a: list[int], b: list[int], rng: random.Random) -> dict[str, Any]:
        a, b = truncate_pair(a, b, self.cfg.max_seq_len - 3, rng)
        ids = [self.cls_id, *a, self.sep_id, *b, self.sep_id]
        start = len(a) + 2
        cands = list(range(start, len(ids)))  # target tokens and the final [SEP], never [CLS]
        n = min(self.n_pred(len(b)), len(cands))
        pos = sorted(rng.sample(cands, n))
        gold = [ids[p] for p in pos]
        for p in pos:
            ids[p] = _corrupt(ids[p], rng, self.mask_id, self.vocab_size)
        types = [self.cfg.source_type] * start + [self.cfg.target_type] * (len(b) + 1)
        return {"ids": ids, "types": types, "len_a": len(a), "len_b": len(b), "pos": pos, "gold": gold}

    def __call__(self, items: list[tuple[list[int], list[int]]], rng: random.Random) -> dict[str, Any]:
        torch = _torch()
        from systems.backbone import unilm_mask
        from systems.training.batching import pad_length

        exs = [self.example(a, b, rng) for a, b in items]
        width = pad_length(max(len(e["ids"]) for e in exs), self.cfg.pad_multiple)
        npred = max(len(e["pos"]) for e in exs)
        return {
            "input_ids": _pad([e["ids"] for e in exs], width),
            "token_type_ids": _pad([e["types"] for e in exs], width),
            "position_ids": torch.arange(width).expand(len(exs), width).clone(),
            "attention_mask": unilm_mask([e["len_a"] for e in exs], [e["len_b"] for e in exs], width),
            "pred_pos": _pad([e["pos"] for e in exs], npred),
            "pred_ids": _pad([e["gold"] for e in exs], npred),
        }


@dataclass
class S2SFTCollator:
    """§2.6: ``[CLS] src [SEP] | tgt [SEP] | pseudo`` with mask_way v2 and per-position loss."""

    cls_id: int
    sep_id: int
    mask_id: int
    vocab_size: int
    cfg: UniLMConfig

    def __call__(self, items: list[tuple[list[int], list[int]]], rng: random.Random) -> dict[str, Any]:
        torch = _torch()
        from systems.training.batching import pad_length

        cfg = self.cfg
        srcs, tgts, tgt_in, pseudo = [], [], [], []
        for a, b in items:
            src = [self.cls_id, *a[: cfg.max_source_len - 2], self.sep_id]
            tgt = [*b[: cfg.max_target_len - 1], self.sep_id]
            ps = [_corrupt(t, rng, self.mask_id, self.vocab_size) for t in tgt]
            tin = [p if rng.random() < cfg.target_mask_prob else t for t, p in zip(tgt, ps, strict=True)]
            srcs.append(src)
            tgts.append(tgt)
            tgt_in.append(tin)
            pseudo.append(ps)
        bsz = len(items)
        s_max = pad_length(max(map(len, srcs)), cfg.pad_multiple)
        t_max = pad_length(max(map(len, tgts)), cfg.pad_multiple)
        s_len = torch.tensor([len(s) for s in srcs])
        t_len = torch.tensor([len(t) for t in tgts])
        ids = torch.cat([_pad(srcs, s_max), _pad(tgt_in, t_max), _pad(pseudo, t_max)], 1)
        types = torch.cat(
            [
                torch.full((bsz, s_max), cfg.source_type),
                torch.full((bsz, 2 * t_max), cfg.target_type),
            ],
            1,
        )
        j = torch.arange(t_max)
        tpos = s_len[:, None] + j[None]
        spos = torch.arange(s_max).expand(bsz, s_max) * (torch.arange(s_max)[None] < s_len[:, None])
        positions = torch.cat([spos, tpos, tpos], 1)
        return {
            "input_ids": ids,
            "token_type_ids": types,
            "position_ids": positions,
            "attention_mask": s2sft_mask(s_len, t_len, s_max, t_max),
            "pred_pos": (s_max + t_max + j).expand(bsz, t_max).clone(),
            "pred_ids": _pad(tgts, t_max),  # pad (0) slots are ignored by the loss
        }


def s2sft_mask(s_len: Any, t_len: Any, s_max: int, t_max: int) -> Any:
    """Keys ``[source | target | pseudo]``: target j sees source + target <= j; pseudo j sees
    source + target < j + itself; source sees the real source; every row sees the real source."""
    torch = _torch()
    total = s_max + 2 * t_max
    col = torch.arange(total)
    src_key = col[None, :] < s_len[:, None]  # [B,K]
    mask = src_key[:, None, :].expand(-1, total, -1).clone()
    row = torch.arange(total)
    is_t_row, is_p_row = (row >= s_max) & (row < s_max + t_max), row >= s_max + t_max
    rj = torch.where(is_t_row, row - s_max, row - s_max - t_max)
    is_t_col, is_p_col = (col >= s_max) & (col < s_max + t_max), col >= s_max + t_max
    cj = torch.where(is_t_col, col - s_max, col - s_max - t_max)
    t_to_t = is_t_row[:, None] & is_t_col[None, :] & (cj[None, :] <= rj[:, None])
    p_to_t = is_p_row[:, None] & is_t_col[None, :] & (cj[None, :] < rj[:, None])
    p_to_p = is_p_row[:, None] & is_p_col[None, :] & (cj[None, :] == rj[:, None])
    real_row = rj[None, :] < t_len[:, None]  # [B,Q]
    real_col = cj[None, :] < t_len[:, None]  # [B,K]
    tgt_part = (t_to_t | p_to_t | p_to_p)[None] & real_row[:, :, None] & real_col[:, None, :]
    return mask | tgt_part


# --------------------------------------------------------------------------- decoding
class UniLMDecoder:
    """Incremental decoder: step input ``[prev, [MASK]]``; the [MASK] row predicts the next token.

    With ``use_cache`` the K/V of the source and of decoded tokens are kept in a preallocated
    :class:`~systems.backbone.KVBuffer` (room for ``max_len`` steps; it grows if needed): a step
    writes its 2 new positions in place and the trailing [MASK] slot is overwritten by the next
    step, so the per-step cost does not grow with the source length beyond the attention itself.
    Without the cache every step re-runs ``[CLS] a [SEP] y<t [MASK]``.

    The buffer is updated in place, so a state is consumed by ``step``: keep only the returned one
    (as :mod:`systems.decoding` does); ``reorder`` copies into a fresh buffer.
    """

    def __init__(
        self,
        model: Any,
        mask_id: int,
        source_type: int,
        target_type: int,
        use_cache: bool = True,
        max_len: int = 64,
    ) -> None:
        self.model, self.mask_id, self.use_cache = model, mask_id, use_cache
        self.source_type, self.target_type, self.max_len = source_type, target_type, max_len

    def start(self, sources: list[list[int]]) -> dict[str, Any]:
        """Encode padded sources (``[CLS] a [SEP]`` already included) once."""
        torch = _torch()
        from systems.backbone import KVBuffer, seq2seq_mask

        param = next(self.model.parameters())
        dev = param.device
        s_len = torch.tensor([len(s) for s in sources], device=dev)
        s_max = int(s_len.max())
        ids = _pad(sources, s_max).to(dev)
        pos = torch.arange(s_max, device=dev)[None] * (torch.arange(s_max, device=dev)[None] < s_len[:, None])
        state = {"s_len": s_len, "s_max": s_max, "src": ids, "src_pos": pos, "done": [], "t": 0}
        if self.use_cache:
            c = self.model.bert.config
            # source + max_len decoded tokens + the trailing [MASK] slot
            buf = KVBuffer.empty(c.num_layers, len(sources), c.num_heads, c.head_dim, s_max + self.max_len + 1, param)
            mask = seq2seq_mask(s_len, torch.zeros_like(s_len), s_max, 0)
            out = self.model.bert(ids, torch.full_like(ids, self.source_type), pos, mask, past=buf, use_cache=True)
            state["cache"] = out.cache
        return state

    def step(self, state: dict[str, Any], prev: Any) -> tuple[Any, dict[str, Any]]:
        torch = _torch()
        from systems.backbone import decode_step_mask, seq2seq_mask

        dev = state["src"].device
        b = state["src"].shape[0]
        t = state["t"]
        if prev is not None:
            state = {**state, "done": [*state["done"], prev.to(dev)]}
        mask_tok = torch.full((b, 1), self.mask_id, device=dev, dtype=torch.long)
        s_len, s_max = state["s_len"], state["s_max"]
        if self.use_cache:
            new = mask_tok if prev is None else torch.cat([prev.to(dev)[:, None], mask_tok], 1)
            q = new.shape[1]
            pos = s_len[:, None] + torch.arange(t - q + 1, t + 1, device=dev)[None]
            mask = decode_step_mask(s_len, s_max, t - q + 1, q)
            out = self.model.bert(
                new, torch.full_like(new, self.target_type), pos, mask, past=state["cache"], use_cache=True
            )
            state = {**state, "cache": out.cache.truncate(s_max + t)}
        else:
            tgt = torch.stack(state["done"], 1) if state["done"] else mask_tok[:, :0]
            tgt = torch.cat([tgt, mask_tok], 1)
            ids = torch.cat([state["src"], tgt], 1)
            types = torch.cat(
                [torch.full_like(state["src"], self.source_type), torch.full_like(tgt, self.target_type)], 1
            )
            pos = torch.cat([state["src_pos"], s_len[:, None] + torch.arange(t + 1, device=dev)[None]], 1)
            mask = seq2seq_mask(s_len, torch.full_like(s_len, t + 1), s_max, t + 1)
            out = self.model.bert(ids, types, pos, mask)
        logits = self.model.cls(out.last_hidden_state[:, -1])
        return logits.float().log_softmax(-1), {**state, "t": t + 1}

    def reorder(self, state: dict[str, Any], index: Any) -> dict[str, Any]:
        idx = index.to(state["src"].device)
        new = {
            **state,
            "s_len": state["s_len"].index_select(0, idx),
            "src": state["src"].index_select(0, idx),
            "src_pos": state["src_pos"].index_select(0, idx),
            "done": [d.index_select(0, idx) for d in state["done"]],
        }
        if "cache" in state:
            new["cache"] = state["cache"].select(idx)
        return new


# --------------------------------------------------------------------------- system
class UniLMSystem(System):
    """The ``System`` adapter (systems/base.py) for both UniLM variants."""

    def __init__(self, name: str, budget: str, cfg: UniLMConfig) -> None:
        self.name, self.budget, self.cfg = name, budget, cfg
        self.model: Any = None
        self.tok: Any = None
        self.fit_result: dict[str, Any] = {}
        self._use_cache = True

    def describe(self) -> SystemInfo:
        config = _jsonable(asdict(self.cfg))
        if self.fit_result:  # what training ran with (effective precision, compile, threads, buckets)
            config["train"] = {k: v for k, v in self.fit_result.items() if k != "losses"}
        return SystemInfo(
            name=self.name,
            family="AR",
            iterations="n",
            citation=CITATION,
            backbone=self.cfg.backbone,
            budget=self.budget,
            config=config,
        )

    # ---- model construction
    def _build(self, train: Sequence[Example]) -> None:
        torch = _torch()
        from systems.backbone import WordPieceTokenizer, build_tokenizer, load_backbone, tiny_backbone
        from systems.backbone.tokenizer import corpus_vocab

        if self.cfg.backbone == "tiny":
            t = self.cfg.tiny
            texts = [x for e in train for x in (e.source, e.target)]
            self.tok = WordPieceTokenizer(corpus_vocab(texts, build_tokenizer(), t.get("vocab", 2000)))
            bb = tiny_backbone(
                vocab_size=self.tok.vocab_size,
                hidden=t["hidden"],
                layers=t["layers"],
                heads=t["heads"],
                max_position=max(
                    self.cfg.max_source_len + max(self.cfg.max_target_len, self.cfg.decode_max_len) + 2, 64
                ),
                type_vocab_size=max(self.cfg.source_type, self.cfg.target_type) + 1,
                dropout=t.get("dropout", 0.1),
                seed=self.cfg.seed,
            )
            head_state: dict = {}
        else:
            bb, self.tok, info = load_backbone(
                self.cfg.backbone, weights=self.cfg.weights, type_vocab_size=self.cfg.type_vocab_size
            )
            head_state = info["head_state"]
            need = max(self.cfg.source_type, self.cfg.target_type) + 1
            if bb.config.type_vocab_size < need:
                raise ValueError(
                    f"backbone {self.cfg.backbone} has {bb.config.type_vocab_size} token types but the preset "
                    f"uses type id {need - 1}; set type_vocab_size={need}"
                )
        torch.manual_seed(self.cfg.seed)
        self.model = _Parts.model_class()(bb, self.cfg.label_smoothing)
        self.model.cls.load_hf(head_state)

    def _collator(self) -> Any:
        c = V1Collator if self.cfg.variant == "v1" else S2SFTCollator
        return c(self.tok.cls_id, self.tok.sep_id, self.tok.mask_id, self.tok.vocab_size, self.cfg)

    def _encode_sources(self, examples: Sequence[Example]) -> list[list[int]]:
        """Source ids without [CLS]/[SEP]; at most ``max_source_len - 2`` of them."""
        keep = self.cfg.max_source_len - 2
        if self.cfg.source_window == "answer":
            return [answer_window(self.tok, e, keep) for e in examples]
        if self.cfg.source_window != "head":
            raise ValueError(f"source_window must be 'head' or 'answer', got {self.cfg.source_window!r}")
        return [s[:keep] for s in self.tok.encode_batch([e.source for e in examples])]

    def _encode_pairs(self, examples: Sequence[Example]) -> list[tuple[list[int], list[int]]]:
        cfg = self.cfg
        srcs = self._encode_sources(examples)
        tgts = self.tok.encode_batch([e.target for e in examples])
        return [(s[: cfg.max_source_len - 2], t[: cfg.max_target_len - 1]) for s, t in zip(srcs, tgts, strict=True)]

    # ---- System protocol
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with _threads(self.cfg.threads):
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        from systems.training import DEV_CURVE_EXAMPLES, TrainConfig, Trainer

        cfg = self.cfg
        workdir = Path(workdir)
        train = list(task.train)
        if not train:
            raise ValueError(f"task {task.name} has no training examples")
        if cfg.train_subset is not None and cfg.train_subset < len(train):
            random.Random(cfg.seed).shuffle(train)
            train = train[: cfg.train_subset]
        self._build(train)
        pairs = self._encode_pairs(train)
        steps = math.ceil(cfg.epochs * len(pairs) / cfg.batch_size) if cfg.epochs else cfg.steps
        tcfg = TrainConfig(
            steps=steps,
            batch_size=cfg.batch_size,
            grad_accum=cfg.grad_accum,
            lr=cfg.lr,
            warmup=cfg.warmup,
            schedule=cfg.schedule,
            optimizer=cfg.optimizer,
            weight_decay=cfg.weight_decay,
            precision=cfg.precision,
            compile=cfg.compile,
            bucket_pool=cfg.bucket_pool,
            save_every=cfg.save_every,
            seed=cfg.seed,
            progress=cfg.progress,
            log_every=max(1, steps // 20),
        )
        result = Trainer(tcfg, workdir).fit(
            self.model,
            pairs,
            self._collator(),
            lambda m, b: m(b),
            lengths=[len(a) + len(b) for a, b in pairs],
            dev=self._encode_pairs(list(task.dev)[:DEV_CURVE_EXAMPLES]) if task.dev else None,
        )
        self.fit_result = {**result.to_json(), "n_train": len(pairs), "train_steps": steps}
        (workdir / "fit.json").write_text(json.dumps(self.fit_result, indent=1))

    def _search_config(self) -> Any:
        from systems.decoding import SearchConfig

        cfg = self.cfg
        ignore = frozenset(self.tok.convert_tokens_to_ids(list(cfg.ngram_ignore)))
        return SearchConfig(
            beam_size=cfg.beam_size,
            max_len=cfg.decode_max_len,
            min_len=cfg.decode_min_len,
            eos_id=self.tok.sep_id,
            length_penalty=cfg.length_penalty,
            no_repeat_ngram=cfg.no_repeat_ngram,
            ngram_ignore=ignore,
        )

    def decode_ids(self, sources: list[list[int]], use_cache: bool = True) -> list[list[int]]:
        """Decode token-id sources (``[CLS] a [SEP]`` included) into target ids (no EOS)."""
        torch = _torch()
        from systems.decoding import search

        if self.model is None:
            raise RuntimeError(f"{self.name}: call fit() before decode()")
        self.model.eval()
        cfg = self.cfg
        dec = UniLMDecoder(
            self.model, self.tok.mask_id, cfg.source_type, cfg.target_type, use_cache, max_len=cfg.decode_max_len
        )
        with torch.inference_mode(), _threads(cfg.threads):
            return search(dec, dec.start(sources), len(sources), self._search_config())

    def _sources(self, examples: Sequence[Example]) -> list[list[int]]:
        keep = min(self.cfg.max_source_len, self.cfg.max_seq_len - self.cfg.decode_max_len) - 2
        return [[self.tok.cls_id, *s[:keep], self.tok.sep_id] for s in self._encode_sources(examples)]

    def decode(self, examples: Sequence[Example]) -> list[str]:
        srcs = self._sources(examples)
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))  # length buckets: less padding
        out: list[str] = [""] * len(srcs)
        bs = self.cfg.decode_batch_size
        for k in range(0, len(order), bs):
            chunk = order[k : k + bs]
            for i, ids in zip(chunk, self.decode_ids([srcs[i] for i in chunk], self._use_cache), strict=True):
                out[i] = self.tok.decode(ids)
        return out

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        return self.tok.decode(self.decode_ids(self._sources([example]), self._use_cache)[0])


@contextlib.contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Run with ``n`` torch threads, then restore: tiny models are fastest (and immune to a busy
    machine's OpenMP stalls) on one thread, while the cpu budget uses both cores."""
    if not n:
        yield
        return
    torch = _torch()
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(d, default=list))


def unilm(budget: str, overrides: Mapping[str, Any]) -> UniLMSystem:
    """Registry factory for ``unilm`` (unilm-v1 QG recipe)."""
    return UniLMSystem("unilm", budget, make_config("v1", budget, overrides))


def unilm_s2sft(budget: str, overrides: Mapping[str, Any]) -> UniLMSystem:
    """Registry factory for ``unilm_s2sft`` (s2s-ft pseudo-masking)."""
    return UniLMSystem("unilm_s2sft", budget, make_config("s2sft", budget, overrides))
