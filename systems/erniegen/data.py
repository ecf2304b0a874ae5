"""Input layout and noise-aware batches for ERNIE-GEN (docs/systems.md §3.2).

Source: ``[CLS]`` then each field (split at the literal ``[SEP]`` of ``Example.source``) as
``tokens + [SEP]`` with text-type id k; target: ``[CLS] tokens [SEP]`` truncated to ``max_target_len``
without re-adding ``[SEP]``. Noise replaces every target position but BOS, independently with prob
ρ_f, by an id drawn uniformly from the whole vocab; labels are taken before noising.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from bench.api.types import Example
from systems.presets import check_source_window
from systems.training.batching import pad_length


@dataclass(frozen=True)
class Pair:
    src: tuple[int, ...]
    src_types: tuple[int, ...]
    tgt: tuple[int, ...]  # [CLS] t_1..t_m [SEP] (clean)


class Encoder:
    """Turns examples into id sequences with the reader's truncation rules."""

    def __init__(
        self, tok: Any, max_source_len: int, max_target_len: int, max_types: int, source_window: str = "head"
    ) -> None:
        check_source_window(source_window)
        self.tok, self.source_window = tok, source_window
        self.max_source_len, self.max_target_len, self.max_types = max_source_len, max_target_len, max_types
        self.cls, self.sep, self.pad = tok.cls_id, tok.sep_id, tok.pad_id

    def example_source(self, ex: Example) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The source of ``ex``: its text's fields from the head, or with ``source_window="answer"`` the
        answer and a paragraph window around it (``systems.source_windows``) as the same two fields."""
        if self.source_window == "answer":
            from systems.source_windows import answer_window

            return self.source_ids(answer_window(self.tok, ex, self.max_source_len - 2))  # room for [CLS] ... [SEP]
        return self.source(ex.source)

    def source(self, text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.source_ids(self.tok.encode(text))

    def source_ids(self, ids: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        fields: list[list[int]] = [[]]
        for i in ids:
            if i == self.sep:
                fields.append([])
            else:
                fields[-1].append(i)
        if not fields[-1] and len(fields) > 1:
            fields.pop()
        out, types = [self.cls], [0]
        for k, f in enumerate(fields):
            f = f[: self.max_source_len - 1] + [self.sep]
            out += f
            types += [min(k, self.max_types - 1)] * len(f)
        if len(out) > self.max_source_len:  # truncate the whole thing, keeping a final [SEP]
            out, types = out[: self.max_source_len - 1] + [self.sep], types[: self.max_source_len]
        return tuple(out), tuple(types)

    def target(self, text: str) -> tuple[int, ...]:
        body = (self.tok.encode(text) + [self.sep])[: self.max_target_len - 1]
        return (self.cls, *body)

    def pairs(self, examples: Sequence[Example]) -> list[Pair]:
        out = []
        for ex in examples:
            src, types = self.example_source(ex)
            out.append(Pair(src, types, self.target(ex.target)))
        return out

    def text(self, ids: Sequence[int]) -> str:
        return self.tok.decode(ids)


def pad_rows(rows: Sequence[Sequence[int]], pad: int, multiple: int = 1) -> tuple[Tensor, Tensor]:
    lens = torch.tensor([len(r) for r in rows], dtype=torch.long)
    out = torch.full((len(rows), pad_length(int(lens.max()), multiple)), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out, lens


def add_noise(tgt: Tensor, tgt_len: Tensor, prob: float, vocab_size: int, gen: torch.Generator) -> Tensor:
    """Replace real target positions 1..len-1 (never BOS) with uniform ids from ``[0, V)`` w.p. ``prob``."""
    if prob <= 0:
        return tgt.clone()
    pos = torch.arange(tgt.shape[1])[None, :]
    real = (pos >= 1) & (pos < tgt_len[:, None])
    hit = (torch.rand(tgt.shape, generator=gen) < prob) & real
    rand = torch.randint(0, vocab_size, tgt.shape, generator=gen)
    return torch.where(hit, rand, tgt)


def collate(
    items: list[Pair], rng: random.Random, pad: int, noise_prob: float, vocab_size: int, multiple: int = 1
) -> dict[str, Tensor]:
    """Padded tensors (widths rounded up to ``multiple``); ``tgt_in`` is the noised context target,
    ``labels`` the clean one."""
    src, src_len = pad_rows([p.src for p in items], pad, multiple)
    types, _ = pad_rows([p.src_types for p in items], 0, multiple)
    tgt, tgt_len = pad_rows([p.tgt for p in items], pad, multiple)
    gen = torch.Generator().manual_seed(rng.getrandbits(62))
    return {
        "src": src,
        "src_types": types,
        "src_len": src_len,
        "tgt_in": add_noise(tgt, tgt_len, noise_prob, vocab_size, gen),
        "labels": tgt,
        "tgt_len": tgt_len,
    }


def scored(labels: Tensor, tgt_len: Tensor) -> tuple[Tensor, Tensor]:
    """(mask of scored query positions i = 1..len-1, labels) — query 0 is unscored (§3.3)."""
    pos = torch.arange(labels.shape[1], device=labels.device)[None, :]
    return (pos >= 1) & (pos < tgt_len[:, None]), labels
