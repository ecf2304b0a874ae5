"""Per-layer key/value cache, so a fixed source prefix and already-decoded tokens are encoded once."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class KVCache:
    """Keys and values of every layer, each ``[B, heads, K, head_dim]``.

    Immutable: every helper returns a new cache, so a source cache can be shared by several beams
    or decoding runs without copies leaking state between them.
    """

    keys: tuple[Tensor, ...]
    values: tuple[Tensor, ...]

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.values):
            raise ValueError(f"KVCache: {len(self.keys)} key layers but {len(self.values)} value layers")

    @property
    def num_layers(self) -> int:
        return len(self.keys)

    @property
    def length(self) -> int:
        """Number of cached key positions K."""
        return int(self.keys[0].shape[2]) if self.keys else 0

    @property
    def batch_size(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0

    def layer(self, i: int) -> tuple[Tensor, Tensor]:
        return self.keys[i], self.values[i]

    def concat(self, other: KVCache) -> KVCache:
        """Append ``other``'s positions after this cache's (same batch, same layers)."""
        if other.num_layers != self.num_layers:
            raise ValueError(f"KVCache.concat: {self.num_layers} layers vs {other.num_layers}")
        return KVCache(
            tuple(torch.cat([a, b], dim=2) for a, b in zip(self.keys, other.keys, strict=True)),
            tuple(torch.cat([a, b], dim=2) for a, b in zip(self.values, other.values, strict=True)),
        )

    def extend(self, keys: list[Tensor] | tuple[Tensor, ...], values: list[Tensor] | tuple[Tensor, ...]) -> KVCache:
        """Append per-layer new keys/values ``[B, heads, n, head_dim]``."""
        return self.concat(KVCache(tuple(keys), tuple(values)))

    def slice(self, start: int, end: int | None = None) -> KVCache:
        """Key positions ``[start, end)``; e.g. drop the trailing ``[MASK]`` of a UniLM decode step."""
        return KVCache(tuple(k[:, :, start:end] for k in self.keys), tuple(v[:, :, start:end] for v in self.values))

    def truncate(self, length: int) -> KVCache:
        """Keep the first ``length`` positions."""
        return self.slice(0, length)

    def select(self, batch_idx: Tensor) -> KVCache:
        """Rows ``batch_idx`` (with repeats): reorders beams or expands a source cache to ``B*beam``."""
        return KVCache(
            tuple(k.index_select(0, batch_idx) for k in self.keys),
            tuple(v.index_select(0, batch_idx) for v in self.values),
        )

    def to(self, *args: object, **kwargs: object) -> KVCache:
        return KVCache(
            tuple(k.to(*args, **kwargs) for k in self.keys), tuple(v.to(*args, **kwargs) for v in self.values)
        )
