"""ERNIE-GEN's two-stream infilling model over the shared :class:`~systems.backbone.Backbone`.

The query stream runs each backbone layer with ``past`` = the K/V the *same* layer computed from
the context stream's layer input, so ``A^{l+1} = Layer(Q=A^l, KV=[X^l; A^l])`` uses shared weights
without touching the backbone code (§3.3, P eq. 5).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from systems.backbone import Backbone, KVBuffer, KVCache, MLMHead, mask_to_bias
from systems.erniegen.masks import context_mask, query_mask, step_mask


def target_positions(src_len: Tensor, n: int, offset: int, max_position: int) -> Tensor:
    """Continuous positions ``src_len + offset + j`` (§3.2); padded slots are clamped into range."""
    pos = src_len[:, None] + offset + torch.arange(n, device=src_len.device)[None, :]
    return pos.clamp_max(max_position - 1)


class ErnieGen(nn.Module):
    """Backbone + MLM head tied to the word embeddings (dense -> act -> LN -> E^T + b, §3.4)."""

    def __init__(self, backbone: Backbone, attn_id: int, tgt_type_id: int) -> None:
        super().__init__()
        if tgt_type_id >= backbone.config.type_vocab_size:
            raise ValueError(
                f"tgt_type_id {tgt_type_id} needs type_vocab_size > {tgt_type_id}, the backbone has "
                f"{backbone.config.type_vocab_size}; load it with type_vocab_size={tgt_type_id + 1}"
            )
        self.backbone = backbone
        self.head = MLMHead(backbone.config, backbone.embeddings.word_embeddings)
        self.attn_id, self.tgt_type_id = attn_id, tgt_type_id

    # ------------------------------------------------------------------ training (two streams)
    def forward(
        self,
        src_ids: Tensor,
        src_types: Tensor,
        src_len: Tensor,
        tgt_ids: Tensor,
        tgt_len: Tensor,
        query_ids: Tensor | None = None,
        rows: Tensor | None = None,
    ) -> Tensor:
        """Query-stream logits ``[B, T, V]``; row i predicts target token i (row 0 is unscored).

        ``tgt_ids`` is the (noised) context-stream target starting with BOS ``[CLS]``;
        ``query_ids`` defaults to ``[ATTN]`` everywhere (tests perturb it). ``rows`` (a ``[B, T]``
        mask) returns the logits of those query rows only, ``[N, V]``: the head is most of a step's
        work, and padded or unscored rows need none of it.
        """
        b, s = src_ids.shape
        t = tgt_ids.shape[1]
        maxpos = self.backbone.config.max_position
        emb = self.backbone.embeddings
        dev = src_ids.device
        src_pos = torch.arange(s, device=dev)[None, :].expand(b, s)
        tgt_pos = target_positions(src_len, t, 0, maxpos)
        tgt_types = torch.full_like(tgt_ids, self.tgt_type_id)
        x = emb(
            torch.cat([src_ids, tgt_ids], 1), torch.cat([src_types, tgt_types], 1), torch.cat([src_pos, tgt_pos], 1)
        )
        if query_ids is None:
            query_ids = torch.full_like(tgt_ids, self.attn_id)
        a = emb(query_ids, tgt_types, tgt_pos)
        bias_c = mask_to_bias(context_mask(src_len, tgt_len, s, t), x.dtype, s + t, s + t)
        bias_q = mask_to_bias(query_mask(src_len, tgt_len, s, t), x.dtype, t, s + 2 * t)
        for layer in self.backbone.encoder.layer:
            x_next, k, v, _ = layer(x, bias_c, None, False)  # k, v come from the layer input x
            a, _, _, _ = layer(a, bias_q, (k, v), False)
            x = x_next
        return self.head(a if rows is None else a[rows])

    # ------------------------------------------------------------------ inference (cached infilling)
    def encode_source(
        self, src_ids: Tensor, src_types: Tensor, src_len: Tensor, capacity: int | None = None
    ) -> KVCache | KVBuffer:
        """Encode the source once and keep every layer's K/V (§3.6 step 1).

        ``capacity``: return a :class:`KVBuffer` with room for that many positions (source + decode
        steps), so steps write in place; None: an immutable, concatenating :class:`KVCache`.
        """
        b, s = src_ids.shape
        pos = torch.arange(s, device=src_ids.device)[None, :].expand(b, s)
        keys = torch.arange(s, device=src_ids.device)[None, :] < src_len[:, None]
        mask = keys[:, None, :].expand(b, s, s)
        past = None
        if capacity is not None:
            c, like = self.backbone.config, self.head.bias
            past = KVBuffer.empty(c.num_layers, b, c.num_heads, c.head_dim, max(capacity, s), like)
        out = self.backbone(src_ids, src_types, pos, mask, past=past, use_cache=True)
        assert out.cache is not None
        return out.cache

    def step(
        self, cache: KVCache | KVBuffer, prev: Tensor, src_len: Tensor, src_max: int, done: int
    ) -> tuple[Tensor, KVCache | KVBuffer]:
        """Feed ``[prev, [ATTN]]`` at positions ``start+done, start+done+1``; return the [ATTN] logits
        ``[B, V]`` and the cache extended by prev's K/V only ([ATTN] dropped, Fig. 4).

        A :class:`KVBuffer` is updated in place (the [ATTN] slot is overwritten by the next step) and
        returned; a :class:`KVCache` is left untouched and a new one returned.
        """
        b = prev.shape[0]
        ids = torch.stack([prev, torch.full_like(prev, self.attn_id)], 1)
        types = torch.full_like(ids, self.tgt_type_id)
        pos = target_positions(src_len, 2, done, self.backbone.config.max_position)
        mask = step_mask(src_len, src_max, done)
        if mask.shape[0] != b:
            raise ValueError(f"step: batch {b} but src_len has {mask.shape[0]} rows")
        out = self.backbone(ids, types, pos, mask, past=cache, use_cache=True)
        assert out.cache is not None
        return self.head(out.last_hidden_state[:, 1]), out.cache.truncate(out.cache.length - 1)


def set_dropout(model: nn.Module, p: float) -> None:
    """Set the hidden dropout (embeddings, attention output, FFN output; paper: 0.1 base, 0.2 large).

    Attention-probability dropout keeps the checkpoint config's value: Table 1 states the hidden rate.
    """
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = p
