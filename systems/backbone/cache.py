"""Per-layer key/value cache, so a fixed source prefix and already-decoded tokens are encoded once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

    def to(self, *args: Any, **kwargs: Any) -> KVCache:
        return KVCache(
            tuple(k.to(*args, **kwargs) for k in self.keys), tuple(v.to(*args, **kwargs) for v in self.values)
        )


class KVBuffer:
    """Preallocated per-layer K/V ``[B, heads, capacity, head_dim]`` written in place, with a length pointer.

    Why: appending to an immutable :class:`KVCache` copies the whole cache in every layer at every
    decode step (``torch.cat``), so a step costs O(cached length) in memory traffic and allocation;
    here a step writes only its new positions and attention reads a view of the first ``length``
    positions. Capacity doubles when full (amortised O(1) per position).

    Mutable, unlike :class:`KVCache`: ``Backbone.forward(past=buffer, use_cache=True)`` writes the new
    K/V and advances ``length``, and :meth:`truncate` only moves the pointer (the dropped slots are
    overwritten by the next write). A buffer therefore belongs to one decoding state; :meth:`select`
    returns a fresh buffer, so beams never share storage, and :meth:`reorder_` reorders beams in place.
    """

    def __init__(self, keys: list[Tensor], values: list[Tensor], length: int = 0) -> None:
        if len(keys) != len(values):
            raise ValueError(f"KVBuffer: {len(keys)} key layers but {len(values)} value layers")
        self.keys, self.values, self._length = list(keys), list(values), length
        self._spare: list[Tensor] | None = None  # storage that reorder_ gathers into, then swaps with

    @classmethod
    def empty(
        cls, num_layers: int, batch_size: int, num_heads: int, head_dim: int, capacity: int, like: Tensor
    ) -> KVBuffer:
        """An empty buffer with room for ``capacity`` positions, dtype/device taken from ``like``."""
        shape = (batch_size, num_heads, max(capacity, 1), head_dim)
        mk = [like.new_empty(shape) for _ in range(2 * num_layers)]
        return cls(mk[:num_layers], mk[num_layers:], 0)

    @classmethod
    def from_cache(cls, cache: KVCache, capacity: int | None = None) -> KVBuffer:
        """Copy an immutable cache into a buffer with room for ``capacity`` (default: 2x its length)."""
        n = cache.length
        cap = max(capacity or 2 * n, n, 1)
        out = []
        for t in (*cache.keys, *cache.values):
            buf = t.new_empty((*t.shape[:2], cap, t.shape[3]))
            buf[:, :, :n] = t
            out.append(buf)
        return cls(out[: cache.num_layers], out[cache.num_layers :], n)

    @property
    def num_layers(self) -> int:
        return len(self.keys)

    @property
    def length(self) -> int:
        """Number of valid cached positions."""
        return self._length

    @property
    def capacity(self) -> int:
        return int(self.keys[0].shape[2]) if self.keys else 0

    @property
    def batch_size(self) -> int:
        return int(self.keys[0].shape[0]) if self.keys else 0

    def layer(self, i: int) -> BufferSlot:
        return BufferSlot(self, i)

    def reserve(self, n: int) -> None:
        """Make room for ``n`` positions after ``length`` (grows every layer together)."""
        need = self._length + n
        if need <= self.capacity:
            return
        cap = max(need, 2 * self.capacity)
        self._spare = None  # its capacity no longer matches
        for store in (self.keys, self.values):
            for i, t in enumerate(store):
                grown = t.new_empty((*t.shape[:2], cap, t.shape[3]))
                grown[:, :, : self._length] = t[:, :, : self._length]
                store[i] = grown

    def write(self, i: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store layer ``i``'s new ``[B, heads, n, head_dim]`` at ``[length, length+n)``; return views of
        ``[0, length+n)``. ``length`` itself moves only in :meth:`advance`, after every layer wrote."""
        n = k.shape[2]
        self.reserve(n)
        end = self._length + n
        self.keys[i][:, :, self._length : end] = k
        self.values[i][:, :, self._length : end] = v
        return self.keys[i][:, :, :end], self.values[i][:, :, :end]

    def advance(self, n: int) -> None:
        if self._length + n > self.capacity:
            raise ValueError(f"KVBuffer.advance({n}) past capacity {self.capacity} (length {self._length})")
        self._length += n

    def truncate(self, length: int) -> KVBuffer:
        """Keep the first ``length`` positions (in place; returns self, mirroring :meth:`KVCache.truncate`)."""
        if not 0 <= length <= self._length:
            raise ValueError(f"KVBuffer.truncate({length}) outside [0, {self._length}]")
        self._length = length
        return self

    def select(self, batch_idx: Tensor) -> KVBuffer:
        """A new buffer holding rows ``batch_idx`` (with repeats) of the valid positions, same capacity."""
        n = self._length
        out = []
        for t in (*self.keys, *self.values):
            buf = t.new_empty((len(batch_idx), *t.shape[1:]))
            buf[:, :, :n] = t[:, :, :n].index_select(0, batch_idx)
            out.append(buf)
        return KVBuffer(out[: self.num_layers], out[self.num_layers :], n)

    def reorder_(self, batch_idx: Tensor) -> KVBuffer:
        """In place: row ``j`` becomes old row ``batch_idx[j]`` (repeats allowed, the batch may change size).

        Why: beam search reorders the cache every step; gathering straight into a spare store kept
        from the previous call (then swapping) copies only the valid positions once and allocates
        nothing while the row count stays the same, where :meth:`select` allocates a new buffer.
        Views handed out by earlier :meth:`write` calls are invalid afterwards. Returns self.
        """
        n, rows = self._length, len(batch_idx)
        old = [*self.keys, *self.values]
        want = (rows, *old[0].shape[1:]) if old else None
        spare = self._spare
        if spare is None or len(spare) != len(old) or (old and tuple(spare[0].shape) != want):
            spare = [t.new_empty((rows, *t.shape[1:])) for t in old]
        for src, dst in zip(old, spare, strict=True):
            torch.index_select(src[:, :, :n], 0, batch_idx, out=dst[:, :, :n])
        half = self.num_layers
        self.keys, self.values = spare[:half], spare[half:]
        self._spare = old if old and old[0].shape[0] == rows else None
        return self

    def as_cache(self) -> KVCache:
        """An immutable snapshot (copies) of the valid positions."""
        n = self._length
        return KVCache(tuple(k[:, :, :n].clone() for k in self.keys), tuple(v[:, :, :n].clone() for v in self.values))


@dataclass(frozen=True)
class BufferSlot:
    """Layer ``index`` of a :class:`KVBuffer`, handed to one attention layer as its ``past``."""

    buffer: KVBuffer
    index: int

    def join(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        return self.buffer.write(self.index, k, v)
