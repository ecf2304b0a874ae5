"""The MIST pseudo-target source builder (§4.6-3), shared by training and MIST-k decoding (§4.9)."""

from __future__ import annotations

import torch
from torch import Tensor


def pseudo_targets(logits_or_ids: Tensor) -> Tensor:
    """Argmax ids of a pass (no gradient flows through it)."""
    if logits_or_ids.dim() == 3:
        return logits_or_ids.detach().argmax(dim=-1)
    return logits_or_ids.detach()


def mist_source(
    src_ids: Tensor,
    src_len: Tensor,
    pred_ids: Tensor,
    tgt_len: Tensor,
    max_len: int,
    cls_id: int,
    sep_id: int,
    pad_id: int = 0,
) -> tuple[Tensor, Tensor]:
    """``[CLS] Y_p [SEP]? X[1:]`` cut to ``max_len``; returns (ids [B, max_len'], lengths).

    - Y_p = ``pred_ids[:tgt_len]`` (real target slots only);
    - ``[SEP]`` appended iff Y_p does not already end with it;
    - X[1:] is the original source minus its ``[CLS]`` (keeping its trailing ``[SEP]``);
    - the tail is cut at ``max_len`` (even X's final ``[SEP]``, as in the code);
    - the new length is returned, so a predicted ``[PAD]`` inside Y_p stays a real token.

    The result is padded to the longest new row (not to ``max_len``): padding never changes the
    outputs because every mask and position is built from the lengths.
    """
    b = src_ids.shape[0]
    rows: list[Tensor] = []
    for i in range(b):
        yp = pred_ids[i, : int(tgt_len[i])]
        parts = [src_ids.new_tensor([cls_id]), yp]
        if yp.numel() == 0 or int(yp[-1]) != sep_id:
            parts.append(src_ids.new_tensor([sep_id]))
        parts.append(src_ids[i, 1 : int(src_len[i])])
        rows.append(torch.cat(parts)[:max_len])
    lengths = torch.tensor([r.numel() for r in rows], dtype=torch.long, device=src_ids.device)
    width = int(lengths.max())
    out = src_ids.new_full((b, width), pad_id)
    for i, r in enumerate(rows):
        out[i, : r.numel()] = r
    return out, lengths
