"""A BERT-compatible post-LN transformer encoder with custom masks, a K/V cache and attention maps.

Parameter names mirror HF ``BertModel`` (``embeddings.*``, ``encoder.layer.N.*``) so BERT, UniLM,
MiniLM and SpanBERT checkpoints load by renaming prefixes only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from systems.backbone.cache import BufferSlot, KVBuffer, KVCache
from systems.backbone.config import BackboneConfig

AttnMode = Literal[False, "pre", "post"]


def activation(name: str):
    """BERT's ``hidden_act`` names; ``gelu`` is the exact erf form, as in the original BERT."""
    table = {
        "gelu": F.gelu,
        "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
        "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "relu": F.relu,
        "silu": F.silu,
        "swish": F.silu,
    }
    if name not in table:
        raise ValueError(f"Unsupported hidden_act '{name}'; supported: {sorted(table)}")
    return table[name]


def mask_to_bias(mask: Tensor | None, dtype: torch.dtype, q_len: int, k_len: int) -> Tensor | None:
    """Boolean ``[B,Q,K]`` (or key-padding ``[B,K]``) mask -> additive bias ``[B,1,Q,K]``.

    The bias is finite (half the dtype minimum) so a row with no allowed key gives a uniform
    distribution instead of NaN (docs/systems.md §0.1); halving keeps ``score + bias`` from overflowing.
    """
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise TypeError(f"attention_mask must be bool (True = may attend), got {mask.dtype}")
    if mask.dim() == 2:
        mask = mask[:, None, :].expand(-1, q_len, -1)
    if mask.dim() != 3 or mask.shape[1] != q_len or mask.shape[2] != k_len:
        raise ValueError(f"attention_mask shape {tuple(mask.shape)} != [B, Q={q_len}, K={k_len}]")
    neg = torch.finfo(dtype).min / 2
    bias = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    bias.masked_fill_(~mask, neg)
    return bias[:, None]


@dataclass
class BackboneOutput:
    last_hidden_state: Tensor
    hidden_states: tuple[Tensor, ...] | None = None
    cache: KVCache | KVBuffer | None = None
    attentions: tuple[Tensor, ...] | None = None


class Embeddings(nn.Module):
    def __init__(self, cfg: BackboneConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size, padding_idx=cfg.pad_token_id)
        self.position_embeddings = nn.Embedding(cfg.max_position, cfg.hidden_size)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden_size)
        self.LayerNorm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor, position_ids: Tensor) -> Tensor:
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class SelfAttention(nn.Module):
    def __init__(self, cfg: BackboneConfig) -> None:
        super().__init__()
        self.num_heads, self.head_dim = cfg.num_heads, cfg.head_dim
        self.query = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.key = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.value = nn.Linear(cfg.hidden_size, cfg.hidden_size)
        self.dropout_p = cfg.attention_dropout

    def _split(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self, x: Tensor, bias: Tensor | None, past: tuple[Tensor, Tensor] | BufferSlot | None, attn_mode: AttnMode
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """``past``: cached ``(keys, values)`` to prepend (copied), or a :class:`BufferSlot` that stores the new
        K/V in place and hands back views of all of them (no copy of the cache)."""
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        if isinstance(past, BufferSlot):
            k, v = past.join(k, v)
        elif past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        p = self.dropout_p if self.training else 0.0
        probs = None
        if attn_mode:
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
            if bias is not None:
                scores = scores + bias
            probs = scores.softmax(-1)
            dropped = F.dropout(probs, p, self.training)
            ctx = dropped @ v
            if attn_mode == "post":
                probs = dropped
        else:
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
        b, _, n, _ = ctx.shape
        return ctx.transpose(1, 2).reshape(b, n, -1), k, v, probs


class Layer(nn.Module):
    """One post-LN block, named like HF's ``BertLayer`` (attention.self / attention.output / ...)."""

    COMPILE_UNIT = True  # compiled while training when the budget asks (bench.api.precision)

    def __init__(self, cfg: BackboneConfig) -> None:
        super().__init__()
        self.attention = nn.Module()
        self.attention.self = SelfAttention(cfg)
        self.attention.output = _DenseLN(cfg.hidden_size, cfg.hidden_size, cfg)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.output = _DenseLN(cfg.intermediate_size, cfg.hidden_size, cfg)
        self.act = activation(cfg.hidden_act)

    def forward(
        self, x: Tensor, bias: Tensor | None, past: tuple[Tensor, Tensor] | BufferSlot | None, attn_mode: AttnMode
    ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        ctx, k, v, probs = self.attention.self(x, bias, past, attn_mode)
        h = self.attention.output(ctx, x)
        out = self.output(self.act(self.intermediate.dense(h)), h)
        return out, k, v, probs


class _DenseLN(nn.Module):
    def __init__(self, d_in: int, d_out: int, cfg: BackboneConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(d_in, d_out)
        self.LayerNorm = nn.LayerNorm(d_out, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.hidden_dropout)

    def forward(self, x: Tensor, residual: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class Backbone(nn.Module):
    """Embeddings + post-LN layers (no pooler, no head).

    ``attention_mask[b, q, k]`` is True when query q may attend key k, where keys are the cached
    ``past`` positions followed by the new ones (K = past_len + Q). Masks are built by the caller
    from lengths (``systems.backbone.masks``), never from ``input_ids == pad``.

    ``past`` is an immutable :class:`KVCache` (the returned cache is a new, concatenated one) or a
    :class:`KVBuffer`, which is written in place: with ``use_cache`` its length grows by Q and it is
    returned as the output's ``cache``; this is what keeps a decode step's cost flat in the cache length.
    """

    def __init__(self, config: BackboneConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(Layer(config) for _ in range(config.num_layers))
        self.apply(self._init_weights)

    @property
    def word_embeddings(self) -> nn.Embedding:
        return self.embeddings.word_embeddings

    def _init_weights(self, m: nn.Module) -> None:
        """BERT's init: N(0, 0.02) weights, zero biases, unit LayerNorm."""
        if isinstance(m, nn.Linear | nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.Embedding) and m.padding_idx is not None:
            with torch.no_grad():
                m.weight[m.padding_idx].zero_()
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        position_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        past: KVCache | KVBuffer | None = None,
        use_cache: bool = False,
        output_attentions: AttnMode = False,
        output_hidden_states: bool = False,
    ) -> BackboneOutput:
        """Encode ``input_ids [B,Q]``; with ``use_cache`` the returned cache holds past + new K/V."""
        if output_attentions not in (False, "pre", "post"):
            raise ValueError(f"output_attentions must be False, 'pre' or 'post', got {output_attentions!r}")
        b, q = input_ids.shape
        past_len = past.length if past is not None else 0
        if past is not None and past.num_layers != self.config.num_layers:
            raise ValueError(f"past has {past.num_layers} layers, model has {self.config.num_layers}")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        if position_ids is None:
            position_ids = torch.arange(past_len, past_len + q, device=input_ids.device).expand(b, q)
        x = self.embeddings(input_ids, token_type_ids, position_ids)
        bias = mask_to_bias(attention_mask, x.dtype, q, past_len + q)
        hidden = [x] if output_hidden_states else None
        keys, values, maps = [], [], []
        for i, layer in enumerate(self.encoder.layer):
            x, k, v, probs = layer(x, bias, past.layer(i) if past is not None else None, output_attentions)
            if use_cache and not isinstance(past, KVBuffer):
                keys.append(k)
                values.append(v)
            if output_attentions:
                maps.append(probs)
            if hidden is not None:
                hidden.append(x)
        cache: KVCache | KVBuffer | None = None
        if use_cache and isinstance(past, KVBuffer):
            past.advance(q)
            cache = past
        elif use_cache:
            cache = KVCache(tuple(keys), tuple(values))
        return BackboneOutput(
            last_hidden_state=x,
            hidden_states=tuple(hidden) if hidden is not None else None,
            cache=cache,
            attentions=tuple(maps) if output_attentions else None,
        )


class MLMHead(nn.Module):
    """BERT's ``cls.predictions``: dense + act + LayerNorm, then a decoder tied to the word embeddings."""

    COMPILE_UNIT = True

    def __init__(self, config: BackboneConfig, word_embeddings: nn.Embedding) -> None:
        super().__init__()
        self.transform = nn.Module()
        self.transform.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.act = activation(config.hidden_act)
        self.word_embeddings = word_embeddings  # shared, not copied: the decoder is tied
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        nn.init.normal_(self.transform.dense.weight, std=0.02)
        nn.init.zeros_(self.transform.dense.bias)

    def forward(self, h: Tensor) -> Tensor:
        h = self.transform.LayerNorm(self.act(self.transform.dense(h)))
        return F.linear(h, self.word_embeddings.weight, self.bias)

    def load_hf(self, state: dict[str, Tensor]) -> list[str]:
        """Load ``cls.predictions.*`` tensors if present; returns the names it could not find."""
        names = {
            "transform.dense.weight": "cls.predictions.transform.dense.weight",
            "transform.dense.bias": "cls.predictions.transform.dense.bias",
            "transform.LayerNorm.weight": "cls.predictions.transform.LayerNorm.weight",
            "transform.LayerNorm.bias": "cls.predictions.transform.LayerNorm.bias",
            "bias": "cls.predictions.bias",
        }
        own = dict(self.named_parameters())
        missing = []
        with torch.no_grad():
            for mine, theirs in names.items():
                if theirs in state and state[theirs].shape == own[mine].shape:
                    own[mine].copy_(state[theirs])
                else:
                    missing.append(theirs)
        return missing
