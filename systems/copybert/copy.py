"""The copy distribution as a scatter-add over input ids (§1.5), and the dense one-hot reference.

``p_c[n, v] = Σ_{k: ids[n,k] = v} P_a[n, k]``: repeated tokens accumulate. The scatter never builds
the ``N×L×V`` one-hot that ``P_a @ onehot(ids)`` needs (0.9 GB per batch of 6 at L = 384 for
BERT-large's vocab); :func:`copy_distribution_dense` exists only for tests and the benchmark.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def copy_distribution(attn: Tensor, ids: Tensor, vocab_size: int) -> Tensor:
    """``attn [..., K]`` (copy weights over key positions) and ``ids [..., K]`` -> ``[..., V]``."""
    out = attn.new_zeros(*attn.shape[:-1], vocab_size)
    return out.scatter_add(-1, ids.expand_as(attn), attn)


def copy_distribution_dense(attn: Tensor, ids: Tensor, vocab_size: int) -> Tensor:
    """The naive ``P_a @ onehot(ids)`` (materialises ``[..., K, V]``): a baseline, not for training."""
    onehot = F.one_hot(ids.expand_as(attn), vocab_size).to(attn.dtype)
    return (attn.unsqueeze(-2) @ onehot).squeeze(-2)


def mix_log_probs(p_gen: Tensor, p_copy: Tensor, gate: Tensor, floor: float = 1e-30) -> Tensor:
    """``log(g·p_g + (1−g)·p_c)`` in fp32, clamped so a zero-probability id gives a finite value."""
    p = gate * p_gen.float() + (1.0 - gate) * p_copy.float()
    return torch.log(p.clamp_min(floor))
