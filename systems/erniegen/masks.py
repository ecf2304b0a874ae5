"""The two ERNIE-GEN masks (docs/systems.md §3.3), built from lengths, never from ``token == pad``.

Batch layout: ``[source block (src_max) | target block (tgt_max)]`` for the context stream (L =
src_max + tgt_max) and ``tgt_max`` query slots; with one example and no padding this is exactly
the packed layout of the reference code (target BOS at column ``len(source)``). A noised ``[PAD]``
inside a real target is attended like any other token because only lengths decide.
"""

from __future__ import annotations

import torch
from torch import Tensor

from systems.backbone.masks import seq2seq_mask


def context_mask(src_len: Tensor, tgt_len: Tensor, src_max: int, tgt_max: int) -> Tensor:
    """``[B, L, L]``: source bidirectional, target causal (self included) over source + earlier target.

    Source rows never see the target. Padding rows see the real source (finite outputs, §0.1); they
    are never read.
    """
    return seq2seq_mask(src_len, tgt_len, src_max, tgt_max, causal=True)


def query_mask(src_len: Tensor, tgt_len: Tensor, src_max: int, tgt_max: int) -> Tensor:
    """``[B, Q, L+Q]`` with Q = tgt_max: query i sees the real source, context target columns
    ``[0, i)`` (BOS and the noised t'_1..t'_{i-1}) and its own column ``L+i``, no other query."""
    dev = src_len.device
    tgt_len = tgt_len.to(dev)
    total = src_max + tgt_max
    col = torch.arange(total + tgt_max, device=dev)
    src_key = col[None, :] < src_len[:, None]  # [B, K]
    tcol = col - src_max
    rows = torch.arange(tgt_max, device=dev)
    earlier = (tcol[None, :] >= 0) & (tcol[None, :] < rows[:, None]) & (col[None, :] < total)  # [Q, K]
    earlier = earlier[None] & (tcol[None, None, :] < tgt_len[:, None, None])
    own = col[None, :] == (total + rows)[:, None]  # [Q, K]
    return src_key[:, None, :] | earlier | own[None]


def step_mask(src_len: Tensor, src_max: int, done: int) -> Tensor:
    """``[B, 2, src_max + done + 2]`` for one infilling step fed ``[pre, [ATTN]]`` (§3.6).

    Keys: padded source cache, ``done`` decoded tokens, then pre and [ATTN]. pre sees the real source,
    the decoded tokens and itself; [ATTN] sees those, pre and itself.
    """
    dev = src_len.device
    k_total = src_max + done + 2
    col = torch.arange(k_total, device=dev)
    src_key = col[None, :] < src_len[:, None]  # [B, K]
    decoded = (col >= src_max) & (col < src_max + done)  # [K]
    pre_row = decoded | (col == src_max + done)
    attn_row = decoded | (col >= src_max + done)
    rows = torch.stack([pre_row, attn_row])  # [2, K]
    return src_key[:, None, :] | rows[None]
