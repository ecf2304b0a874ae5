"""Attention masks built from lengths (docs/systems.md §0.5), never from ``token == pad``.

All builders return bool ``[B, Q, K]`` with True = query may attend key, the convention of
:class:`systems.backbone.Backbone`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _as_tensor(x: Tensor | list[int], device: torch.device | None = None) -> Tensor:
    return x.to(device) if isinstance(x, Tensor) else torch.tensor(x, dtype=torch.long, device=device)


def padding_mask(lengths: Tensor | list[int], max_len: int | None = None) -> Tensor:
    """Bidirectional mask over the first ``lengths[b]`` keys: ``[B, L, L]``."""
    lengths = _as_tensor(lengths)
    max_len = int(lengths.max()) if max_len is None else max_len
    keys = torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]
    return keys[:, None, :].expand(-1, max_len, -1).clone()


def seq2seq_mask(
    src_lengths: Tensor | list[int],
    tgt_lengths: Tensor | list[int],
    src_max: int,
    tgt_max: int,
    causal: bool = True,
) -> Tensor:
    """UniLM-style mask for a batch laid out as ``[source block (src_max) | target block (tgt_max)]``.

    source→source bidirectional over the real source; target→source allowed; target→target
    causal (self included) or full; source→target never. Padding rows (beyond a real length) see
    the real source only, as in unilm-v1 (§2.2), so they have keys and give finite outputs.
    """
    src_lengths, tgt_lengths = _as_tensor(src_lengths), _as_tensor(tgt_lengths, None)
    tgt_lengths = tgt_lengths.to(src_lengths.device)
    dev = src_lengths.device
    total = src_max + tgt_max
    col = torch.arange(total, device=dev)
    src_key = col[None, :] < src_lengths[:, None]  # [B, K]
    tgt_col = col - src_max
    tgt_key = (tgt_col[None, :] >= 0) & (tgt_col[None, :] < tgt_lengths[:, None])  # [B, K]
    mask = src_key[:, None, :].expand(-1, total, -1).clone()  # every row sees the real source
    row = torch.arange(total, device=dev) - src_max
    if causal:
        allowed = (tgt_col[None, :] <= row[:, None]) & (row[:, None] >= 0)  # [Q, K]
    else:
        allowed = (row[:, None] >= 0).expand(-1, total)
    real_tgt_row = (row[None, :] >= 0) & (row[None, :] < tgt_lengths[:, None])  # [B, Q]
    mask |= allowed[None] & tgt_key[:, None, :] & real_tgt_row[:, :, None]
    return mask


def unilm_mask(len_a: Tensor | list[int], len_b: Tensor | list[int], max_len: int) -> Tensor:
    """unilm-v1 mask for ``[CLS] a [SEP] b [SEP]`` packed contiguously (§2.2): ``[B, max_len, max_len]``.

    Every row sees ``[0, |a|+2)``; the target block ``[|a|+2, |a|+|b|+3)`` is causal (self included).
    """
    len_a, len_b = _as_tensor(len_a), _as_tensor(len_b)
    len_b = len_b.to(len_a.device)
    idx = torch.arange(max_len, device=len_a.device)
    src_end = (len_a + 2)[:, None]  # [B,1]
    tgt_end = (len_a + len_b + 3)[:, None]
    key_src = idx[None, :] < src_end  # [B,K]
    mask = key_src[:, None, :].expand(-1, max_len, -1).clone()
    in_tgt = (idx[None, :] >= src_end) & (idx[None, :] < tgt_end)  # [B, L]
    causal = idx[None, :, None] >= idx[None, None, :]  # [1,Q,K]
    mask |= in_tgt[:, :, None] & in_tgt[:, None, :] & causal
    return mask


def decode_step_mask(src_lengths: Tensor, src_max: int, done_len: int, new_len: int) -> Tensor:
    """Mask for an incremental step: keys = [padded source | ``done_len`` decoded | ``new_len`` new].

    Each new query sees the real source, every decoded token and the new ones up to itself
    (causal), i.e. the decode-time UniLM mask restricted to the new rows.
    """
    dev = src_lengths.device
    k_total = src_max + done_len + new_len
    col = torch.arange(k_total, device=dev)
    src_key = col[None, :] < src_lengths[:, None]  # [B,K]
    rows = torch.arange(new_len, device=dev) + src_max + done_len  # absolute key index of each query
    tgt = (col[None, :] >= src_max) & (col[None, :] <= rows[:, None])  # [Q,K]
    return src_key[:, None, :] | tgt[None]
