"""The semi-diagonal mask and the offset-by-one labels of docs/systems.md §1.3-1.4.

A sequence is ``[CLS] p_1..p_P [MASK] q_1..q_Q [SEP] [PAD]..``; ``seg`` holds the *stored* segment
ids (0 for ``[CLS]`` and the paragraph, 1 from ``[MASK]`` on, 0 for padding) and ``lengths`` the
real lengths. Everything is built from these two, never from ``id == pad`` (§0.5).
"""

from __future__ import annotations

import torch
from torch import Tensor


def regions(seg: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(real, is_p, is_q)`` bool ``[B, L]``.

    ``is_q`` = segment-1 positions after the first one (the ``[MASK]``), i.e. the question tokens and
    ``[SEP]``; ``is_p`` = every other real position (``[CLS]``, paragraph, answer, ``[MASK]``). Using
    "after the first segment-1 slot" instead of ``id != [MASK]`` keeps the layout right even when a
    decoded token happens to be ``[MASK]``.
    """
    b, n = seg.shape
    real = torch.arange(n, device=seg.device)[None, :] < lengths.to(seg.device)[:, None]
    one = (seg == 1) & real
    is_q = one & (one.long().cumsum(-1) > 1)
    return real, real & ~is_q, is_q


def semi_diagonal_mask(seg: Tensor, lengths: Tensor) -> Tensor:
    """``A[b,i,j] = (real_i ∧ real_j ∧ j ≤ i) ∨ (isP_i ∧ isP_j)``: bool ``[B, L, L]``.

    Paragraph rows (``[MASK]`` included) see exactly the paragraph; question row i sees the paragraph
    and question columns up to itself; padding rows see nothing (the backbone's finite bias turns
    them into harmless uniform rows whose outputs are never used).
    """
    real, is_p, _ = regions(seg, lengths)
    n = seg.shape[1]
    causal = torch.ones(n, n, dtype=torch.bool, device=seg.device).tril()
    return (real[:, :, None] & real[:, None, :] & causal[None]) | (is_p[:, :, None] & is_p[:, None, :])


def offset_labels(input_ids: Tensor, seg: Tensor, lengths: Tensor, ignore: int = 0) -> Tensor:
    """``y[i] = id[i+1]`` where i+1 is a question token (``[MASK]→q1 … q_Q→[SEP]``), else ``ignore``."""
    _, _, is_q = regions(seg, lengths)
    labels = torch.full_like(input_ids, ignore)
    nxt_q = is_q[:, 1:]
    labels[:, :-1] = torch.where(nxt_q, input_ids[:, 1:], torch.full_like(input_ids[:, 1:], ignore))
    return labels


def answer_types(seg: Tensor, start: Tensor, end: Tensor) -> Tensor:
    """Token types fed to BERT: stored segments + 1 on the answer span ``[start, end]`` (inclusive).

    Built with comparisons instead of the reference's difference array, so ``end + 1 == L`` cannot
    overflow (§1.2 ⚠). Out-of-window answers have ``start = end = 0`` (the ``[CLS]`` slot).
    """
    pos = torch.arange(seg.shape[1], device=seg.device)[None, :]
    span = (pos >= start.to(seg.device)[:, None]) & (pos <= end.to(seg.device)[:, None])
    return seg + span.long()
