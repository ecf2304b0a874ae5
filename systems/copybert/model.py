"""CopyBERT's network: a BERT backbone, its pretrained MLM head, a gate and one of four copy modes (§1.5).

Copy modes: ``none`` (p = p_g), ``self`` (mix all L×H attention maps with ``softmax(W_a h_i)``),
``normal`` (a new bilinear attention ``softmax(h_i W_n Hᵀ)``), ``twohop`` (the paper's form,
reference ``copymethod 5``: ``P1`` from ``W_a`` and ``P2 = P'^2`` with ``P'`` from a second
``W'_a``) and ``hop2`` (reference ``copymethod 3``: ``P`` and ``P^2`` from the same ``W_a``).
The gate ``g = σ(p_value(h_i))`` weighs the *generation* side, as in the reference code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from systems.backbone import Backbone, MLMHead
from systems.copybert.copy import copy_distribution, mix_log_probs
from systems.copybert.layout import offset_labels, regions, semi_diagonal_mask

COPY_MODES = ("none", "self", "normal", "twohop", "hop2")
MAP_MODES = ("self", "twohop", "hop2")  # modes that read the backbone's attention maps


@dataclass
class Encoded:
    """One full-sequence pass: what the output layer needs for any set of rows."""

    hidden: Tensor  # [B, L, H]
    input_ids: Tensor  # [B, L]
    types: Tensor  # [B, L] token types fed to BERT (answer span included)
    is_p: Tensor  # [B, L]
    mask: Tensor  # [B, L, L] the semi-diagonal mask
    maps: tuple[Tensor, ...] | None  # per layer [B, heads, L, L]


@dataclass
class RowView:
    """The selected rows and their keys: what the output layer reads (full pass or cached decoding)."""

    h: Tensor  # [N, H]
    key_ids: Tensor  # [N, K]
    key_types: Tensor  # [N, K]
    key_is_p: Tensor  # [N, K]
    visible: Tensor  # [N, K] the row of the semi-diagonal mask
    maps: tuple[Tensor, ...] | None  # per layer [N, heads, K]
    key_hidden: Tensor | None = None  # [N, K, H] (normal copy)
    second: Tensor | None = None  # [N, K, K] mixed rows of every key (two-hop's P')


class CopyBERT(nn.Module):
    """Backbone + MLM head + gate + copy layer; :meth:`loss` is the teacher-forced NLL of §1.4."""

    def __init__(
        self,
        backbone: Backbone,
        copy: str = "self",
        copy_attention: str = "post",
        normal_copy_columns: str = "paragraph",
        scatter_segment_bug: bool = False,
    ) -> None:
        super().__init__()
        if copy not in COPY_MODES:
            raise ValueError(f"copy='{copy}' unknown; choose one of {COPY_MODES}")
        if copy_attention not in ("post", "pre"):
            raise ValueError(f"copy_attention='{copy_attention}': choose 'post' (reference) or 'pre'")
        if normal_copy_columns not in ("paragraph", "visible"):
            raise ValueError(f"normal_copy_columns='{normal_copy_columns}': choose 'paragraph' or 'visible'")
        cfg = backbone.config
        self.copy, self.copy_attention = copy, copy_attention
        self.normal_copy_columns, self.scatter_segment_bug = normal_copy_columns, scatter_segment_bug
        self.backbone = backbone
        self.head = MLMHead(cfg, backbone.word_embeddings)
        h, m = cfg.hidden_size, cfg.num_layers * cfg.num_heads
        new: dict[str, nn.Linear] = {}
        if copy != "none":
            new["p_value"] = nn.Linear(h, 1)
        if copy in MAP_MODES:
            new["attentionsquare"] = nn.Linear(h, m)
        if copy == "twohop":
            new["attentionsquare_lateral"] = nn.Linear(h, m)
        if copy in ("twohop", "hop2"):
            new["attention_over_attention2"] = nn.Linear(h, 2)
        if copy == "normal":
            new["linear_copy_probs"] = nn.Linear(h, h)
        for name, layer in new.items():  # HF init: N(0, 0.02), zero bias
            nn.init.normal_(layer.weight, std=0.02)
            nn.init.zeros_(layer.bias)
            self.add_module(name, layer)

    @property
    def vocab_size(self) -> int:
        return self.backbone.config.vocab_size

    # ------------------------------------------------------------------ encoder
    def encode(self, input_ids: Tensor, seg: Tensor, types: Tensor, lengths: Tensor) -> Encoded:
        """Run the backbone under the semi-diagonal mask; keep attention maps when the copy needs them."""
        mask = semi_diagonal_mask(seg, lengths)
        attn = self.copy_attention if self.copy in MAP_MODES else False
        out = self.backbone(input_ids, token_type_ids=types, attention_mask=mask, output_attentions=attn)
        _, is_p, _ = regions(seg, lengths)
        return Encoded(out.last_hidden_state, input_ids, types, is_p, mask, out.attentions)

    # ------------------------------------------------------------------ copy weights
    def mix_maps(self, h: Tensor, maps_rows: Sequence[Tensor], proj: nn.Linear) -> Tensor:
        """``P_a[n, :] = Σ_m softmax(W h_n)[m] · A_m[n, :]`` over the layer-major stack: ``[N, K]``.

        ``maps_rows`` holds each layer's rows ``[N, heads, K]``; they are mixed layer by layer, so the
        ``N×M×K`` (or ``B×M×L×L``) stack is never built.
        """
        s = proj(h).float().softmax(-1)  # [N, M]
        heads = maps_rows[0].shape[1]
        out = None
        for layer, rows in enumerate(maps_rows):
            part = torch.einsum("nh,nhk->nk", s[:, layer * heads : (layer + 1) * heads], rows.float())
            out = part if out is None else out + part
        return out

    def _mixed_full(self, enc: Encoded, proj: nn.Linear) -> Tensor:
        """The mixed attention matrix for every row: ``[B, L, L]`` (two-hop needs all of it)."""
        assert enc.maps is not None
        s = proj(enc.hidden).float().softmax(-1)  # [B, L, M]
        heads = enc.maps[0].shape[1]
        out = None
        for layer, amap in enumerate(enc.maps):
            part = torch.einsum("bih,bhik->bik", s[..., layer * heads : (layer + 1) * heads], amap.float())
            out = part if out is None else out + part
        return out

    def second_proj(self) -> nn.Linear:
        """The weights of the second hop's matrix: ``W'_a`` (two-hop) or ``W_a`` itself (hop2)."""
        return self.attentionsquare_lateral if self.copy == "twohop" else self.attentionsquare

    def rows_view(self, enc: Encoded, b_idx: Tensor, i_idx: Tensor) -> RowView:
        """Gather what the copy layer needs for the selected rows of a full-sequence pass."""
        maps = tuple(m[b_idx, :, i_idx, :] for m in enc.maps) if enc.maps is not None else None
        second = None
        if self.copy in ("twohop", "hop2"):
            second = self._mixed_full(enc, self.second_proj())[b_idx]
        key_hidden = enc.hidden[b_idx] if self.copy == "normal" else None
        return RowView(
            enc.hidden[b_idx, i_idx],
            enc.input_ids[b_idx],
            enc.types[b_idx],
            enc.is_p[b_idx],
            enc.mask[b_idx, i_idx],
            maps,
            key_hidden,
            second,
        )

    def copy_weights(self, enc: Encoded, b_idx: Tensor, i_idx: Tensor) -> Tensor:
        """``P_a`` for the selected rows, over key positions: ``[N, L]``."""
        return self.view_copy_weights(self.rows_view(enc, b_idx, i_idx))

    def view_copy_weights(self, v: RowView) -> Tensor:
        """``P_a`` over the view's keys: ``[N, K]``."""
        if self.copy == "self":
            return self.mix_maps(v.h, v.maps, self.attentionsquare)
        if self.copy == "normal":
            scores = torch.einsum("nh,nkh->nk", self.linear_copy_probs(v.h).float(), v.key_hidden.float())
            # reference copymethod 2: paragraph columns only; paper: Y = P ∪ y_<i (the visible keys)
            allowed = v.key_is_p if self.normal_copy_columns == "paragraph" else v.visible
            return scores.masked_fill(~allowed, torch.finfo(scores.dtype).min / 2).softmax(-1)
        if self.copy in ("twohop", "hop2"):
            p1 = self.mix_maps(v.h, v.maps, self.attentionsquare)
            own = p1 if self.copy == "hop2" else self.mix_maps(v.h, v.maps, self.attentionsquare_lateral)
            p2 = torch.bmm(own.unsqueeze(1), v.second).squeeze(1)  # row i of P'^2
            w = self.attention_over_attention2(v.h).float().softmax(-1)  # [N, 2]
            return w[:, :1] * p1 + w[:, 1:] * p2
        raise ValueError(f"copy mode '{self.copy}' has no copy weights")

    # ------------------------------------------------------------------ output distribution
    def row_log_probs(self, enc: Encoded, b_idx: Tensor, i_idx: Tensor) -> Tensor:
        """``log p(· | row)`` ``[N, V]`` in fp32 (the mixture is in probability space)."""
        if self.copy == "none":
            return F.log_softmax(self.head(enc.hidden[b_idx, i_idx]).float(), -1)
        return self.view_log_probs(self.rows_view(enc, b_idx, i_idx))

    def view_log_probs(self, v: RowView) -> Tensor:
        logits = self.head(v.h).float()
        if self.copy == "none":
            return F.log_softmax(logits, -1)
        gate = torch.sigmoid(self.p_value(v.h).float())
        return mix_log_probs(logits.softmax(-1), self.view_copy_distribution(v), gate)

    def copy_distribution(self, enc: Encoded, b_idx: Tensor, i_idx: Tensor) -> Tensor:
        """``p_c`` for the selected rows: the copy weights scattered onto vocabulary ids, ``[N, V]``."""
        return self.view_copy_distribution(self.rows_view(enc, b_idx, i_idx))

    def view_copy_distribution(self, v: RowView) -> Tensor:
        weights = self.view_copy_weights(v)
        # reference copymethod 2 bug (flag): scatter over token types, so all mass lands on ids 0/1
        ids = v.key_types if (self.copy == "normal" and self.scatter_segment_bug) else v.key_ids
        return copy_distribution(weights, ids, self.vocab_size)

    def gate(self, enc: Encoded, b_idx: Tensor, i_idx: Tensor) -> Tensor:
        """The generation weight ``g`` per row, ``[N, 1]`` (1 for ``copy='none'``)."""
        if self.copy == "none":
            return torch.ones(len(b_idx), 1, device=enc.hidden.device)
        return torch.sigmoid(self.p_value(enc.hidden[b_idx, i_idx]).float())

    # ------------------------------------------------------------------ losses
    def forward(self, input_ids: Tensor, seg: Tensor, types: Tensor, lengths: Tensor) -> Tensor:
        """The teacher-forced NLL (the training loss)."""
        return self.loss(input_ids, seg, types, lengths)

    def loss(self, input_ids: Tensor, seg: Tensor, types: Tensor, lengths: Tensor) -> Tensor:
        """NLL with ``ignore_index = 0``, meaned over labelled positions; only labelled rows are computed."""
        labels = offset_labels(input_ids, seg, lengths)
        b_idx, i_idx = labels.nonzero(as_tuple=True)
        enc = self.encode(input_ids, seg, types, lengths)
        logp = self.row_log_probs(enc, b_idx, i_idx)
        return F.nll_loss(logp, labels[b_idx, i_idx])

    def all_log_probs(self, input_ids: Tensor, seg: Tensor, types: Tensor, lengths: Tensor) -> Tensor:
        """``[B, L, V]`` log-probs at every position (tests and analysis; training uses :meth:`loss`)."""
        enc = self.encode(input_ids, seg, types, lengths)
        b, n = input_ids.shape
        b_idx = torch.arange(b, device=input_ids.device).repeat_interleave(n)
        i_idx = torch.arange(n, device=input_ids.device).repeat(b)
        return self.row_log_probs(enc, b_idx, i_idx).view(b, n, -1)


def masked_nll(log_probs: Tensor, labels: Tensor, ignore: int = 0) -> Tensor:
    """NLL over ``[B, L, V]`` log-probs with ``ignore_index``; equals :meth:`CopyBERT.loss` (tested)."""
    return F.nll_loss(log_probs.reshape(-1, log_probs.shape[-1]), labels.reshape(-1), ignore_index=ignore)
