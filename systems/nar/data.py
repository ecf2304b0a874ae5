"""Examples -> WordPiece ids -> padded batches (§4.2), from lengths only."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from bench.api.types import Example
from systems.training.batching import pad_length


@dataclass(frozen=True)
class Pair:
    """One training item: ``[CLS] x [SEP]`` and ``y [SEP]`` as id lists."""

    src: tuple[int, ...]
    tgt: tuple[int, ...]


class Encoder:
    """Lays out sources and targets with the backbone's tokenizer (a literal ``[SEP]`` is the token).

    ``max_source_len`` / ``max_target_len`` include the special tokens (464 / 48 in the paper).
    ``test_extra`` reproduces the code's test-time source of ``max_source_len`` wordpieces plus
    ``[CLS]``/``[SEP]`` (2 more than training, §4.8); set it to 0 to decode like training.
    """

    def __init__(
        self, tokenizer, max_source_len: int, max_target_len: int, test_extra: int = 2, source_window: str = "head"
    ) -> None:
        self.tok = tokenizer
        self.source_window = source_window
        self.max_source_len, self.max_target_len, self.test_extra = max_source_len, max_target_len, test_extra
        self.pad, self.cls, self.sep, self.mask = (
            tokenizer.pad_id,
            tokenizer.cls_id,
            tokenizer.sep_id,
            tokenizer.mask_id,
        )

    def source_ids(self, pieces: Sequence[int], test: bool = False) -> tuple[int, ...]:
        keep = self.max_source_len - 2 + (self.test_extra if test else 0)
        return (self.cls, *pieces[:keep], self.sep)

    def target_ids(self, pieces: Sequence[int]) -> tuple[int, ...]:
        return (*pieces[: self.max_target_len - 1], self.sep)

    def pairs(self, examples: Sequence[Example]) -> list[Pair]:
        srcs = self._source_pieces(examples, test=False)
        tgts = self.tok.encode_batch([ex.target for ex in examples])
        return [Pair(self.source_ids(s), self.target_ids(t)) for s, t in zip(srcs, tgts, strict=True)]

    def sources(self, examples: Sequence[Example], test: bool = True) -> list[tuple[int, ...]]:
        return [self.source_ids(s, test) for s in self._source_pieces(examples, test)]

    def _source_pieces(self, examples: Sequence[Example], test: bool) -> list[list[int]]:
        """The source's pieces: its head (``source_ids`` cuts it), or ``answer [SEP]`` + a paragraph window
        around the answer that fits the same room (``source_window="answer"``)."""
        if self.source_window == "answer":
            from systems.source_windows import answer_window

            room = self.max_source_len - 2 + (self.test_extra if test else 0)
            return [answer_window(self.tok, ex, room) for ex in examples]
        return self.tok.encode_batch([ex.source for ex in examples])

    def text(self, ids: Sequence[int]) -> str:
        """Predicted ids -> the MIST output string: drop padding, join, merge ``##``, delete ``[SEP]``."""
        toks = [t for t in self.tok.convert_ids_to_tokens([i for i in ids if i != self.pad])]
        return " ".join(" ".join(toks).replace(" ##", "").replace("[SEP]", "").split())


def pad_batch(rows: Sequence[Sequence[int]], pad: int, multiple: int = 1) -> tuple[Tensor, Tensor]:
    """(ids [B, max_len rounded up to ``multiple``] padded with ``pad``, lengths [B])."""
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
    out = torch.full((len(rows), pad_length(int(lengths.max()), multiple)), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return out, lengths


def collate(pairs: list[Pair], rng: random.Random, pad: int, multiple: int = 1) -> dict[str, Tensor]:
    """A training batch; GLAT's slot scores and a dropout seed come from the trainer's seeded ``rng``
    so a resumed run draws exactly what an uninterrupted one would."""
    src, src_len = pad_batch([p.src for p in pairs], pad, multiple)
    tgt, tgt_len = pad_batch([p.tgt for p in pairs], pad, multiple)
    scores = torch.tensor([[rng.random() for _ in range(tgt.shape[1])] for _ in pairs], dtype=torch.float)
    seed = torch.tensor(rng.randrange(2**31))
    return {
        "src": src,
        "src_len": src_len,
        "tgt": tgt,
        "tgt_len": tgt_len,
        "glat_scores": scores,
        "seed": seed,
    }
