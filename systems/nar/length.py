"""Target-length targets and the decode-time clamp (§4.4, §4.8)."""

from __future__ import annotations

from torch import Tensor

CLAMP_MIN = 7  # hard-coded in the MIST code for every dataset
CLAMP_MAX = 48


def length_targets(tgt_len: Tensor) -> Tensor:
    """The length class is the number of real target tokens *including* the final ``[SEP]``.

    ``tgt_len`` already counts it (targets are built as ``y [SEP]``), so this is the identity;
    kept as a function so the convention has one home and one test.
    """
    return tgt_len.long()


def clamp_length(pred: Tensor, lo: int = CLAMP_MIN, hi: int = CLAMP_MAX) -> Tensor:
    """Decode-time clamp of the argmax length to [lo, hi] (MIST: [7, 48])."""
    return pred.long().clamp(min=lo, max=hi)


def predict_length(length_logits: Tensor, lo: int = CLAMP_MIN, hi: int = CLAMP_MAX) -> Tensor:
    """argmax of the length head, clamped; no length beam (as in MIST)."""
    return clamp_length(length_logits.argmax(dim=-1), lo, hi)
