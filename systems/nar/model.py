"""The encoder NAT of MIST: one pretrained encoder, a fresh token head and a length head (§4.4).

The same module serves the joint training pass (``[CLS] x [SEP] | Y_M`` with the §4.3 mask) and
the cached decode (source pass once, then a target-only pass over the per-layer source K/V).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from systems.backbone.cache import KVCache
from systems.backbone.model import Backbone, activation
from systems.nar.layout import EncoderInputs, joint_inputs, real_mask, source_inputs, target_inputs_with_past

LENGTH_CLASSES = 512


@dataclass
class SourcePass:
    """What the source-only pass leaves for the target pass and the length prediction."""

    hidden: Tensor  # [B, S, H] final-layer source states
    cache: KVCache | None  # per-layer source K/V
    length_logits: Tensor  # [B, LENGTH_CLASSES]
    src_len: Tensor  # [B]


class TokenHead(nn.Module):
    """``BertOnlyMLMHead`` built fresh: PyTorch-default transform, decoder = untied *clone* of E."""

    COMPILE_UNIT = True  # compiled while training when the budget asks (bench.api.precision)

    def __init__(self, word_embeddings: nn.Embedding, hidden_act: str, eps: float) -> None:
        super().__init__()
        vocab, hidden = word_embeddings.weight.shape
        self.dense = nn.Linear(hidden, hidden)
        self.act = activation(hidden_act)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)
        self.decoder = nn.Linear(hidden, vocab, bias=False)
        with torch.no_grad():
            self.decoder.weight.copy_(word_embeddings.weight)
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, h: Tensor) -> Tensor:
        h = self.LayerNorm(self.act(self.dense(h)))
        if self.decoder.bias is None:  # the head as trained (training, and decoding in fp32)
            return F.linear(h, self.decoder.weight, self.bias)
        return self.decoder(h)  # folded for an int8 decode (:meth:`fold_bias`)

    def fold_bias(self) -> None:
        """For decoding only: the vocabulary projection as one biased ``nn.Linear`` (in training the bias is a
        parameter of its own, as in BERT's MLM head), so that quantizing the Linear layers
        (``compute_type=int8``, systems.compute) covers the projection too, the largest matmul of a NAR decode."""
        if self.decoder.bias is not None:
            return
        weight = self.decoder.weight
        folded = nn.Linear(weight.shape[1], weight.shape[0], device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            folded.weight.copy_(weight)
            folded.bias.copy_(self.bias)
        self.decoder = folded


def _mask_or_none(inputs: EncoderInputs) -> Tensor | None:
    """Drop an all-True mask so batch-1 decoding takes SDPA's unmasked path (same numbers)."""
    return None if bool(inputs.attention_mask.all()) else inputs.attention_mask


class NATModel(nn.Module):
    """Backbone + token head + length head. ``length_embed`` is the bias-free 512-class length linear."""

    def __init__(self, backbone: Backbone) -> None:
        super().__init__()
        cfg = backbone.config
        self.backbone = backbone
        self.token_head = TokenHead(backbone.word_embeddings, cfg.hidden_act, cfg.layer_norm_eps)
        self.length_embed = nn.Embedding(LENGTH_CLASSES, cfg.hidden_size)  # PyTorch default init, as in MIST

    @property
    def max_position(self) -> int:
        return self.backbone.config.max_position

    def length_logits(self, src_hidden: Tensor, src_len: Tensor) -> Tensor:
        """Mean of the final-layer states over the real source (``[CLS]``/``[SEP]`` included) · Eᵀ."""
        real = real_mask(src_len, src_hidden.shape[1]).to(src_hidden.dtype)
        pooled = (src_hidden * real[:, :, None]).sum(1) / src_len[:, None].to(src_hidden.dtype)
        return pooled @ self.length_embed.weight.t()

    def _run(self, inputs: EncoderInputs, past: KVCache | None = None, use_cache: bool = False):
        return self.backbone(
            inputs.input_ids,
            inputs.token_type_ids,
            inputs.position_ids,
            attention_mask=_mask_or_none(inputs),
            past=past,
            use_cache=use_cache,
        )

    def joint(
        self, src_ids: Tensor, src_len: Tensor, tgt_ids: Tensor, tgt_len: Tensor
    ) -> tuple[Tensor, Tensor]:
        """One pass over ``source | target`` (training): (token logits [B,T,V], length logits [B,512])."""
        s = src_ids.shape[1]
        out = self._run(joint_inputs(src_ids, src_len, tgt_ids, tgt_len)).last_hidden_state
        return self.token_head(out[:, s:]), self.length_logits(out[:, :s], src_len)

    def encode_source(self, src_ids: Tensor, src_len: Tensor, use_cache: bool = True) -> SourcePass:
        """Source alone (valid because source rows never attend to the target), caching its K/V."""
        out = self._run(source_inputs(src_ids, src_len), use_cache=use_cache)
        hidden = out.last_hidden_state
        return SourcePass(hidden, out.cache, self.length_logits(hidden, src_len), src_len)

    def target_logits(self, source: SourcePass, tgt_ids: Tensor, tgt_len: Tensor) -> Tensor:
        """Target rows attending to ``[cached source K/V ; target]``: token logits [B, T, V]."""
        if source.cache is None:
            raise ValueError("target_logits needs a SourcePass built with use_cache=True")
        inputs = target_inputs_with_past(tgt_ids, tgt_len, source.src_len, source.hidden.shape[1])
        out = self._run(inputs, past=source.cache).last_hidden_state
        return self.token_head(out)
