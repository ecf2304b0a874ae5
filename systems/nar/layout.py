"""Inputs of the one shared encoder for source+target (§4.2-4.3) and for its cached halves (§4.8).

Everything is built from *lengths*, never from ``token != pad``: argmax may emit ``[PAD]`` inside
a real pseudo target (§0.5, §4.6-3), and that must not shorten the sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

SOURCE_TYPE = 0
TARGET_TYPE = 1


@dataclass
class EncoderInputs:
    """The four tensors the backbone takes (mask: True = query may attend key)."""

    input_ids: Tensor  # [B, Q]
    token_type_ids: Tensor  # [B, Q]
    position_ids: Tensor  # [B, Q]
    attention_mask: Tensor  # [B, Q, K] bool


def real_mask(lengths: Tensor, width: int) -> Tensor:
    """[B, width] bool: slot j is real iff j < lengths[b]."""
    return torch.arange(width, device=lengths.device)[None, :] < lengths[:, None]


def source_positions(src_len: Tensor, width: int) -> Tensor:
    """0..n_s-1 on real source slots, 0 on padding."""
    pos = torch.arange(width, device=src_len.device)[None, :].expand(src_len.shape[0], width)
    return torch.where(real_mask(src_len, width), pos, torch.zeros_like(pos))


def target_positions(src_len: Tensor, tgt_len: Tensor, width: int) -> Tensor:
    """n_s + j on real target slots (each example's own real n_s), 0 on padding."""
    pos = src_len[:, None] + torch.arange(width, device=src_len.device)[None, :]
    return torch.where(real_mask(tgt_len, width), pos, torch.zeros_like(pos))


def joint_inputs(src_ids: Tensor, src_len: Tensor, tgt_ids: Tensor, tgt_len: Tensor) -> EncoderInputs:
    """``[CLS] x [SEP] pad | y pad`` with A[i,j] = real[i] & real[j] & (i in target | j in source)."""
    b, s = src_ids.shape
    t = tgt_ids.shape[1]
    real = torch.cat([real_mask(src_len, s), real_mask(tgt_len, t)], dim=1)
    is_src = torch.zeros(s + t, dtype=torch.bool, device=src_ids.device)
    is_src[:s] = True
    allowed = is_src[None, :] | ~is_src[:, None]  # [Q, K]: key in source, or query in target
    mask = real[:, :, None] & real[:, None, :] & allowed[None]
    types = torch.cat([torch.full_like(src_ids, SOURCE_TYPE), torch.full_like(tgt_ids, TARGET_TYPE)], dim=1)
    pos = torch.cat([source_positions(src_len, s), target_positions(src_len, tgt_len, t)], dim=1)
    return EncoderInputs(torch.cat([src_ids, tgt_ids], dim=1), types, pos, mask)


def source_inputs(src_ids: Tensor, src_len: Tensor) -> EncoderInputs:
    """The source-only pass (length prediction, K/V cache): bidirectional over real source."""
    s = src_ids.shape[1]
    real = real_mask(src_len, s)
    mask = real[:, :, None] & real[:, None, :]
    return EncoderInputs(src_ids, torch.full_like(src_ids, SOURCE_TYPE), source_positions(src_len, s), mask)


def target_inputs_with_past(
    tgt_ids: Tensor, tgt_len: Tensor, src_len: Tensor, src_width: int
) -> EncoderInputs:
    """Target rows of the joint layout, attending to ``[cached source K/V ; target]`` (K = S + T)."""
    t = tgt_ids.shape[1]
    keys = torch.cat([real_mask(src_len, src_width), real_mask(tgt_len, t)], dim=1)
    mask = real_mask(tgt_len, t)[:, :, None] & keys[:, None, :]
    return EncoderInputs(
        tgt_ids, torch.full_like(tgt_ids, TARGET_TYPE), target_positions(src_len, tgt_len, t), mask
    )
