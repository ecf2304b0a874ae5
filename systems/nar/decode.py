"""Decoding over one trained checkpoint: single pass, MIST-k and Mask-Predict-k (§4.8-4.9).

Each function takes padded source ids + lengths and returns predicted target ids, their lengths
and the number of decoder passes spent (the meter reports it as iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from systems.nar.layout import real_mask
from systems.nar.length import CLAMP_MAX, CLAMP_MIN, predict_length
from systems.nar.mist import mist_source
from systems.nar.model import NATModel, SourcePass
from systems.nar.schedule import remask_count

DECODERS = ("single", "mist_iter", "mask_predict")


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    cls: int
    sep: int
    mask: int


@dataclass
class Decoded:
    tokens: Tensor  # [B, T] (slots >= length hold pad)
    lengths: Tensor  # [B]
    passes: int  # target passes run (1 for single pass)


def _fit_positions(
    model: NATModel, src_ids: Tensor, src_len: Tensor, tgt_len: Tensor
) -> tuple[Tensor, Tensor]:
    """If n_s + T > max_position the source is cut to max_position - T (as in the MIST code)."""
    new_len = torch.minimum(src_len, model.max_position - tgt_len)
    return src_ids[:, : int(new_len.max())], new_len


def _masked(tgt_len: Tensor, ids: SpecialIds) -> Tensor:
    width = int(tgt_len.max())
    out = torch.full((tgt_len.shape[0], width), ids.pad, dtype=torch.long, device=tgt_len.device)
    return out.masked_fill(real_mask(tgt_len, width), ids.mask)


def _predict(
    model: NATModel, source: SourcePass, tgt_in: Tensor, tgt_len: Tensor, pad: int, probs: bool = False
) -> tuple[Tensor, Tensor | None]:
    """One target pass: argmax ids (slots >= length -> pad) and, if asked, their probabilities
    (padding -> 1 so it ranks last). Single-pass decoding skips the vocab softmax."""
    logits = model.target_logits(source, tgt_in, tgt_len)
    real = real_mask(tgt_len, tgt_in.shape[1])
    if not probs:
        return logits.argmax(-1).masked_fill(~real, pad), None
    p, tokens = logits.float().softmax(-1).max(-1)
    return tokens.masked_fill(~real, pad), p.masked_fill(~real, 1.0)


def first_pass(
    model: NATModel,
    src_ids: Tensor,
    src_len: Tensor,
    ids: SpecialIds,
    forced_length: Tensor | None = None,
    clamp: tuple[int, int] = (CLAMP_MIN, CLAMP_MAX),
    probs: bool = False,
) -> tuple[Tensor, Tensor | None, Tensor, SourcePass]:
    """Length from the source pass (or forced), then one all-``[MASK]`` target pass over its cache."""
    source = model.encode_source(src_ids, src_len)
    if forced_length is None:
        tgt_len = predict_length(source.length_logits, *clamp)
    else:
        tgt_len = forced_length.to(src_len.device).long().clamp(1, model.max_position - 2)
    if bool((src_len + tgt_len > model.max_position).any()):
        src_ids, src_len = _fit_positions(model, src_ids, src_len, tgt_len)
        source = model.encode_source(src_ids, src_len)
    tokens, p = _predict(model, source, _masked(tgt_len, ids), tgt_len, ids.pad, probs)
    return tokens, p, tgt_len, source


@torch.no_grad()
def decode_single(
    model: NATModel, src_ids: Tensor, src_len: Tensor, ids: SpecialIds, **kw: object
) -> Decoded:
    tokens, _, tgt_len, _ = first_pass(model, src_ids, src_len, ids, **kw)  # type: ignore[arg-type]
    return Decoded(tokens, tgt_len, 1)


@torch.no_grad()
def decode_mist(
    model: NATModel,
    src_ids: Tensor,
    src_len: Tensor,
    ids: SpecialIds,
    iterations: int,
    max_source_len: int,
    **kw: object,
) -> Decoded:
    """MIST-k: source⁽ᵏ⁾ = ``[CLS] Y⁽ᵏ⁻¹⁾ [SEP] X[1:]``; the new pseudo target replaces the old; T fixed."""
    tokens, _, tgt_len, _ = first_pass(model, src_ids, src_len, ids, **kw)  # type: ignore[arg-type]
    limit = min(max_source_len, model.max_position - int(tgt_len.max()))
    for _ in range(iterations - 1):
        new_ids, new_len = mist_source(src_ids, src_len, tokens, tgt_len, limit, ids.cls, ids.sep, ids.pad)
        source = model.encode_source(new_ids, new_len)
        tokens, _ = _predict(model, source, _masked(tgt_len, ids), tgt_len, ids.pad)
    return Decoded(tokens, tgt_len, iterations)


@torch.no_grad()
def decode_mask_predict(
    model: NATModel, src_ids: Tensor, src_len: Tensor, ids: SpecialIds, iterations: int, **kw: object
) -> Decoded:
    """Mask-Predict-k: re-mask the floor(T(k-t)/k) lowest-probability tokens, re-predict only those.

    The source stays ``[CLS] X [SEP]``, so its cached K/V is reused by every refinement pass.
    """
    tokens, probs, tgt_len, source = first_pass(model, src_ids, src_len, ids, probs=True, **kw)  # type: ignore
    assert probs is not None
    passes = 1
    width = tokens.shape[1]
    for t in range(1, iterations):
        n = torch.tensor([remask_count(int(n_t), iterations, t) for n_t in tgt_len], device=tokens.device)
        if not bool((n > 0).any()):
            break
        rank = probs.argsort(dim=1, stable=True).argsort(dim=1)  # padding has prob 1 -> ranked last
        remask = (rank < n[:, None]) & real_mask(tgt_len, width)
        new_tokens, new_probs = _predict(
            model, source, tokens.masked_fill(remask, ids.mask), tgt_len, ids.pad, probs=True
        )
        assert new_probs is not None  # probs=True
        tokens = torch.where(remask, new_tokens, tokens)
        probs = torch.where(remask, new_probs, probs)
        passes += 1
    return Decoded(tokens, tgt_len, passes)


def decode(
    model: NATModel,
    src_ids: Tensor,
    src_len: Tensor,
    ids: SpecialIds,
    method: str = "single",
    iterations: int = 1,
    max_source_len: int = 512,
    forced_length: Tensor | None = None,
    clamp: tuple[int, int] = (CLAMP_MIN, CLAMP_MAX),
) -> Decoded:
    """Dispatch on ``method``; ``iterations == 1`` is the single pass for every method."""
    if method not in DECODERS:
        raise ValueError(f"Unknown decode method '{method}'; choose one of {', '.join(DECODERS)}")
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    kw = {"forced_length": forced_length, "clamp": clamp}
    if method == "single" or iterations == 1:
        return decode_single(model, src_ids, src_len, ids, **kw)
    if method == "mist_iter":
        return decode_mist(model, src_ids, src_len, ids, iterations, max_source_len, **kw)
    return decode_mask_predict(model, src_ids, src_len, ids, iterations, **kw)
