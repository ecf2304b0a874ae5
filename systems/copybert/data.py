"""Tensors from :class:`~systems.copybert.features.Feature`: training batches, dev loss, decode steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from systems.copybert.features import Feature
from systems.training.batching import pad_length


def collate(
    feats: Sequence[Feature], prefixes: Sequence[Sequence[int]] | None = None, multiple: int = 1
) -> dict[str, Tensor]:
    """Pad to the longest sequence (rounded up to ``multiple``): ``input_ids``, stored ``seg``, fed
    ``types`` and ``lengths``. ``prefixes`` (decoding) replaces each feature's question with generated tokens.
    """
    from systems.copybert.layout import answer_types

    seqs, segs = [], []
    for n, f in enumerate(feats):
        q = tuple(prefixes[n]) if prefixes is not None else f.question
        seqs.append(f.context + q)
        segs.append([0] * (len(f.context) - 1) + [1] * (1 + len(q)))
    width = pad_length(max(len(s) for s in seqs), multiple)
    ids = torch.zeros(len(seqs), width, dtype=torch.long)
    seg = torch.zeros(len(seqs), width, dtype=torch.long)
    for n, (s, g) in enumerate(zip(seqs, segs, strict=True)):
        ids[n, : len(s)] = torch.tensor(s)
        seg[n, : len(g)] = torch.tensor(g)
    lengths = torch.tensor([len(s) for s in seqs])
    start = torch.tensor([f.answer[0] for f in feats])
    end = torch.tensor([f.answer[1] for f in feats])
    return {"input_ids": ids, "seg": seg, "types": answer_types(seg, start, end), "lengths": lengths}


@torch.no_grad()
def dev_loss(model: Any, feats: Sequence[Feature], batch_size: int) -> float:
    """Token-level mean NLL over ``feats`` in eval mode (the reference's ``evaluate_by_loss``)."""
    from systems.copybert.layout import offset_labels

    model.eval()
    total, count = 0.0, 0
    order = sorted(range(len(feats)), key=lambda i: len(feats[i].ids))
    device = next(model.parameters()).device
    for s in range(0, len(order), batch_size):
        batch = {k: v.to(device) for k, v in collate([feats[i] for i in order[s : s + batch_size]]).items()}
        n = int((offset_labels(batch["input_ids"], batch["seg"], batch["lengths"]) != 0).sum())
        total += float(model.loss(**batch)) * n
        count += n
    return total / max(count, 1)


class StepScorer:
    """Next-token log-probs for beam prefixes: the whole sequence is re-encoded at every step (no cache),
    as the reference decoder does; identical prefixes (the first step's beams) are encoded once."""

    def __init__(self, model: Any, feat: Feature) -> None:
        self.model, self.feat = model, feat
        self.device = next(model.parameters()).device

    def __call__(self, prefixes: Sequence[Sequence[int]]) -> Tensor:
        uniq: dict[tuple[int, ...], int] = {}
        for p in prefixes:
            uniq.setdefault(tuple(p), len(uniq))
        keys = list(uniq)
        batch = {k: v.to(self.device) for k, v in collate([self.feat] * len(keys), keys).items()}
        enc = self.model.encode(**batch)
        rows = torch.arange(len(keys), device=self.device)
        logp = self.model.row_log_probs(enc, rows, batch["lengths"] - 1)
        return logp[torch.tensor([uniq[tuple(p)] for p in prefixes], device=self.device)]


class CachedStepScorer:
    """The same log-probs as :class:`StepScorer`, with the paragraph and the decoded prefix encoded once.

    Exact under the semi-diagonal mask: paragraph rows never see question tokens, and a question
    row sees only earlier positions, so keys/values, attention rows, hidden states and two-hop's
    mixed rows of earlier positions never change when a token is appended. Each call feeds one new
    token per distinct prefix, with the parents' state gathered row by row.

    ``in_place``: the K/V live in a preallocated :class:`~systems.backbone.KVBuffer` (``room`` decode
    steps past the context; it doubles if a search runs longer): a step writes its position in place
    and the parents' rows are gathered in place (``reorder_``), so no layer's cache is concatenated.
    False: the concatenating ``KVCache`` (``select`` + ``torch.cat`` every step), kept as the
    reference the buffer is tested against.
    """

    def __init__(self, model: Any, feat: Feature, in_place: bool = True, room: int = 32) -> None:
        self.model, self.feat = model, feat
        self.in_place, self.room = in_place, room
        self.device = next(model.parameters()).device
        self.index: dict[tuple[int, ...], int] = {}

    def _start(self) -> Tensor:
        from systems.backbone import KVBuffer
        from systems.copybert.layout import regions, semi_diagonal_mask
        from systems.copybert.model import MAP_MODES, Encoded

        m = self.model
        batch = {k: v.to(self.device) for k, v in collate([self.feat], [()]).items()}
        attn = m.copy_attention if m.copy in MAP_MODES else False
        mask = semi_diagonal_mask(batch["seg"], batch["lengths"])
        past = None
        if self.in_place:
            c, width = m.backbone.config, batch["input_ids"].shape[1]
            like = next(m.parameters())
            past = KVBuffer.empty(c.num_layers, 1, c.num_heads, c.head_dim, width + self.room, like)
        out = m.backbone(
            batch["input_ids"],
            token_type_ids=batch["types"],
            attention_mask=mask,
            past=past,
            use_cache=True,
            output_attentions=attn,
        )
        _, is_p, _ = regions(batch["seg"], batch["lengths"])
        enc = Encoded(out.last_hidden_state, batch["input_ids"], batch["types"], is_p, mask, out.attentions)
        self.cache = out.cache
        self.ids, self.types, self.is_p = batch["input_ids"], batch["types"], enc.is_p
        self.hidden = enc.hidden  # [1, Lc, H]
        self.second = m._mixed_full(enc, m.second_proj()) if m.copy in ("twohop", "hop2") else None
        self.index = {(): 0}
        last = batch["lengths"] - 1
        return m.row_log_probs(enc, torch.zeros_like(last), last)

    def __call__(self, prefixes: Sequence[Sequence[int]]) -> Tensor:
        from systems.copybert.model import MAP_MODES, RowView

        if all(len(p) == 0 for p in prefixes):
            logp = self._start()
            return logp.expand(len(prefixes), -1)
        m = self.model
        uniq: dict[tuple[int, ...], int] = {}
        for p in prefixes:
            uniq.setdefault(tuple(p), len(uniq))
        keys = list(uniq)
        parents = torch.tensor([self.index[k[:-1]] for k in keys], device=self.device)
        new = torch.tensor([[k[-1]] for k in keys], device=self.device)
        u, past_len = len(keys), self.cache.length
        cache = self.cache.reorder_(parents) if self.in_place else self.cache.select(parents)
        one = torch.ones_like(new)
        attn = m.copy_attention if m.copy in MAP_MODES else False
        visible = torch.ones(u, 1, past_len + 1, dtype=torch.bool, device=self.device)
        out = m.backbone(
            new,
            token_type_ids=one,
            attention_mask=visible,
            past=cache,
            use_cache=True,
            output_attentions=attn,
        )
        h = out.last_hidden_state[:, 0]  # [U, H]
        self.cache = out.cache
        self.ids = torch.cat([self.ids[parents], new], 1)
        self.types = torch.cat([self.types[parents], one], 1)
        self.is_p = torch.cat([self.is_p[parents], torch.zeros_like(new, dtype=torch.bool)], 1)
        self.hidden = torch.cat([self.hidden[parents], out.last_hidden_state], 1)
        maps = tuple(a[:, :, 0, :] for a in out.attentions) if out.attentions is not None else None
        second = None
        if self.second is not None:
            own = m.mix_maps(h, maps, m.second_proj())  # [U, K]: the new row of P'
            prev = torch.nn.functional.pad(self.second[parents], (0, 1))  # new column: 0 for earlier rows
            second = torch.cat([prev, own[:, None, :]], 1)
            self.second = second
        view = RowView(h, self.ids, self.types, self.is_p, visible[:, 0], maps, self.hidden, second)
        logp = m.view_log_probs(view)
        self.index = uniq
        return logp[torch.tensor([uniq[tuple(p)] for p in prefixes], device=self.device)]
