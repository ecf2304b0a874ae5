"""Glancing sampling as implemented in the MIST code (§4.5), with GLAT's behaviours as flags.

MIST code: constant ratio, loss over all real target slots, independent dropout in the glance
pass. GLAT (Qian et al., 2021): ratio annealed 0.5 -> 0.3, loss only on non-glanced slots, glance
pass sharing the training pass's dropout seed. Defaults follow the MIST code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from systems.nar.layout import real_mask


@dataclass(frozen=True)
class GlatConfig:
    """``ratio`` is f; the three booleans switch on GLAT's behaviour where MIST deviates."""

    enabled: bool = True
    ratio: float = 0.5
    anneal: bool = False  # GLAT: ratio linearly annealed from `ratio` to `anneal_to`
    anneal_to: float = 0.3
    loss_on_unrevealed_only: bool = False  # GLAT: glanced slots leave the loss
    share_dropout_seed: bool = False  # GLAT: glance pass reuses the training pass's dropout seed

    def ratio_at(self, progress: float) -> float:
        """f at training progress in [0, 1]."""
        if not self.anneal:
            return self.ratio
        p = min(max(progress, 0.0), 1.0)
        return self.ratio + (self.anneal_to - self.ratio) * p


def glance_count(pred: Tensor, gold: Tensor, tgt_len: Tensor, ratio: float) -> Tensor:
    """N = floor(f * #{real target slots where argmax != gold}); the ``[SEP]`` slot counts."""
    wrong = (pred != gold) & real_mask(tgt_len, gold.shape[1])
    return torch.floor(ratio * wrong.sum(dim=1).double()).long()


def reveal(
    decoder_input: Tensor, gold: Tensor, tgt_len: Tensor, n: Tensor, scores: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Put gold tokens in N uniformly chosen real slots per row; returns (new input, revealed mask).

    Equivalent to the code's "random permutation of the slots, keep those < target_len, take the
    first N": ``scores`` (uniform [0, 1), one per slot; drawn here when absent) order the slots,
    and padding slots get a score above every real one, so they are never chosen. Passing the
    scores in lets the caller draw them from a seeded, resumable stream.
    """
    b, t = gold.shape
    real = real_mask(tgt_len, t)
    if scores is None:
        scores = torch.rand(b, t, device=gold.device)
    scores = scores[:, :t].to(gold.device).masked_fill(~real, 2.0)
    rank = scores.argsort(dim=1).argsort(dim=1)
    revealed = (rank < n[:, None]) & real
    return torch.where(revealed, gold, decoder_input), revealed


def glance(
    pred: Tensor,
    decoder_input: Tensor,
    gold: Tensor,
    tgt_len: Tensor,
    ratio: float,
    scores: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Count the glance pass's mistakes and reveal that fraction of gold tokens."""
    return reveal(decoder_input, gold, tgt_len, glance_count(pred, gold, tgt_len, ratio), scores)


@contextlib.contextmanager
def dropout_seed(seed: int | None) -> Iterator[None]:
    """Run the block under a fixed CPU/CUDA RNG seed (for GLAT's shared dropout), then restore."""
    if seed is None:
        yield
        return
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
