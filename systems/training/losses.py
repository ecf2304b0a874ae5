"""The three label-smoothing losses of docs/systems.md §0.2 (mixing them up changes the numbers)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def unilm_smoothed_loss(logits: Tensor, target: Tensor, eps: float, pad_id: int = 0) -> Tensor:
    """(a) UniLM v1 / s2s-ft / MIST: KL(smoothed ‖ model), token-level mean.

    Gold gets ``1-eps``, every other id except pad gets ``eps/(V-2)``, pad gets 0; positions whose
    gold is pad contribute 0; the sum is divided by the number of real positions (+1e-5).
    ``logits [N, V]``, ``target [N]``.
    """
    logp = F.log_softmax(logits.float(), dim=-1)
    v = logp.shape[-1]
    real = target != pad_id
    if eps == 0:
        nll = -logp.gather(-1, target[:, None]).squeeze(-1)
        return (nll * real).sum() / (real.sum() + 1e-5)
    q = torch.full_like(logp, eps / (v - 2))
    q.scatter_(-1, target[:, None], 1.0 - eps)
    q[:, pad_id] = 0.0
    kl = (q * (torch.log(q.clamp_min(1e-30)) - logp)).sum(-1)  # 0·log0 := 0 via the clamp and q = 0
    return (kl * real).sum() / (real.sum() + 1e-5)


def paddle_smoothed_loss(logits: Tensor, target: Tensor, eps: float) -> Tensor:
    """(b) Paddle ``label_smooth`` (ERNIE-GEN): ``(1-eps)·onehot + eps/V`` over all V ids, soft CE, mean."""
    logp = F.log_softmax(logits.float(), dim=-1)
    v = logp.shape[-1]
    q = torch.full_like(logp, eps / v)
    q.scatter_add_(-1, target[:, None], torch.full_like(target[:, None], 1.0 - eps, dtype=q.dtype))
    return -(q * logp).sum(-1).mean()


def fairseq_smoothed_loss(logits: Tensor, target: Tensor, eps: float, pad_id: int = 1) -> Tensor:
    """(c) fairseq: ``(1-eps)·NLL - eps·mean_v log p_v``, mean over non-pad target tokens."""
    logp = F.log_softmax(logits.float(), dim=-1)
    real = target != pad_id
    nll = -logp.gather(-1, target[:, None]).squeeze(-1)
    smooth = -logp.mean(-1)
    loss = (1.0 - eps) * nll + eps * smooth
    return (loss * real).sum() / real.sum().clamp_min(1)


def nll_loss(logits: Tensor, target: Tensor, ignore_index: int = 0) -> Tensor:
    """Plain NLL (CopyBERT), ``ignore_index`` positions excluded from the mean."""
    return F.cross_entropy(logits.float(), target, ignore_index=ignore_index)
