"""UniLM training batches: the unilm-v1 masked-LM collator and the s2s-ft pseudo-masking collator."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from systems.unilm.presets import UniLMConfig


# --------------------------------------------------------------------------- model
def lazy_torch():
    import torch

    return torch


class LazyParts:
    """Built lazily so ``import systems.unilm`` stays light."""

    @staticmethod
    def model_class():
        torch = lazy_torch()
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


def pad_rows(rows: Sequence[Sequence[int]], width: int, value: int = 0) -> Any:
    torch = lazy_torch()
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
        torch = lazy_torch()
        from systems.backbone import unilm_mask
        from systems.training.batching import pad_length

        exs = [self.example(a, b, rng) for a, b in items]
        width = pad_length(max(len(e["ids"]) for e in exs), self.cfg.pad_multiple)
        npred = max(len(e["pos"]) for e in exs)
        return {
            "input_ids": pad_rows([e["ids"] for e in exs], width),
            "token_type_ids": pad_rows([e["types"] for e in exs], width),
            "position_ids": torch.arange(width).expand(len(exs), width).clone(),
            "attention_mask": unilm_mask([e["len_a"] for e in exs], [e["len_b"] for e in exs], width),
            "pred_pos": pad_rows([e["pos"] for e in exs], npred),
            "pred_ids": pad_rows([e["gold"] for e in exs], npred),
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
        torch = lazy_torch()
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
        ids = torch.cat([pad_rows(srcs, s_max), pad_rows(tgt_in, t_max), pad_rows(pseudo, t_max)], 1)
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
            "pred_ids": pad_rows(tgts, t_max),  # pad (0) slots are ignored by the loss
        }


def s2sft_mask(s_len: Any, t_len: Any, s_max: int, t_max: int) -> Any:
    """Keys ``[source | target | pseudo]``: target j sees source + target <= j; pseudo j sees
    source + target < j + itself; source sees the real source; every row sees the real source."""
    torch = lazy_torch()
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
