"""One training step of the encoder NAT (GLAT, §4.5) and of MIST (two passes, §4.6)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from systems.nar.glat import GlatConfig, dropout_seed, glance
from systems.nar.layout import real_mask
from systems.nar.length import length_targets
from systems.nar.mist import mist_source, pseudo_targets
from systems.nar.model import NATModel
from systems.training.losses import unilm_smoothed_loss


@dataclass
class StepConfig:
    """Loss weights and GLAT settings: NAT L = L_tok + L_len; MIST L = a·L_NAT + L_len + b·L_MIST."""

    mist: bool = False
    alpha: float = 1.0
    beta: float = 1.0
    label_smoothing: float = 0.1
    max_source_len: int = 464  # the padded training source width the MIST source is cut to
    glat: GlatConfig = field(default_factory=GlatConfig)


@dataclass(frozen=True)
class Specials:
    pad: int
    cls: int
    sep: int
    mask: int


def token_loss(logits: Tensor, gold: Tensor, weight: Tensor, eps: float, pad: int) -> Tensor:
    """§0.2a smoothing over the slots in ``weight`` (others are given the pad gold, which counts 0)."""
    target = gold.masked_fill(~weight, pad)
    return unilm_smoothed_loss(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), eps, pad)


def _mist_pass(
    model: NATModel,
    batch: dict[str, Tensor],
    first_logits: Tensor,
    dec_in: Tensor,
    cfg: StepConfig,
    sp: Specials,
) -> Tensor:
    """Pseudo target from the first pass -> ``[CLS] Y_p [SEP] X[1:]`` -> second pass on the same Y_M."""
    src, src_len = mist_source(
        batch["src"],
        batch["src_len"],
        pseudo_targets(first_logits),
        batch["tgt_len"],
        cfg.max_source_len,
        sp.cls,
        sp.sep,
        sp.pad,
    )
    logits, _ = model.joint(src, src_len, dec_in, batch["tgt_len"])
    return logits


def loss_terms(
    model: NATModel, batch: dict[str, Tensor], cfg: StepConfig, sp: Specials, progress: float = 0.0
) -> dict[str, Tensor]:
    """The step's losses (``loss`` is what is back-propagated) and the GLAT reveal count."""
    gold, tgt_len = batch["tgt"], batch["tgt_len"]
    real = real_mask(tgt_len, gold.shape[1])
    dec_in = torch.full_like(gold, sp.pad).masked_fill(real, sp.mask)  # keep_prob = random_prob = 0
    seed = int(batch["seed"]) if cfg.glat.share_dropout_seed else None
    revealed = torch.zeros_like(real)
    if cfg.glat.enabled:
        with torch.no_grad(), dropout_seed(seed):  # the glance pass stays in train mode (dropout on)
            glance_logits, _ = model.joint(batch["src"], batch["src_len"], dec_in, tgt_len)
            if cfg.mist:  # ⚠ MIST glances with its second pass (two extra forwards)
                glance_logits = _mist_pass(model, batch, glance_logits, dec_in, cfg, sp)
        dec_in, revealed = glance(
            glance_logits.argmax(-1),
            dec_in,
            gold,
            tgt_len,
            cfg.glat.ratio_at(progress),
            batch.get("glat_scores"),
        )
    weight = real & ~revealed if cfg.glat.loss_on_unrevealed_only else real
    with dropout_seed(seed):
        logits, len_logits = model.joint(batch["src"], batch["src_len"], dec_in, tgt_len)
        out = {
            "tok": token_loss(logits, gold, weight, cfg.label_smoothing, sp.pad),
            "len": F.cross_entropy(len_logits.float(), length_targets(tgt_len)),
            "revealed": revealed.sum().float(),
        }
        if cfg.mist:
            second = _mist_pass(model, batch, logits, dec_in, cfg, sp)
            out["mist"] = token_loss(second, gold, weight, cfg.label_smoothing, sp.pad)
            out["loss"] = cfg.alpha * out["tok"] + out["len"] + cfg.beta * out["mist"]
        else:
            out["loss"] = out["tok"] + out["len"]
    return out
