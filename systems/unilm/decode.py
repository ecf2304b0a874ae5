"""UniLM left-to-right decoding with a ``[MASK]`` query per step over a cached source (greedy and beam)."""

from __future__ import annotations

from typing import Any

from systems.unilm.collate import lazy_torch, pad_rows


class UniLMDecoder:
    """Incremental decoder: step input ``[prev, [MASK]]``; the [MASK] row predicts the next token.

    With ``use_cache`` the K/V of the source and of decoded tokens are kept in a preallocated
    :class:`~systems.backbone.KVBuffer` (room for ``max_len`` steps; it grows if needed): a step
    writes its 2 new positions in place and the trailing [MASK] slot is overwritten by the next
    step, so the per-step cost does not grow with the source length beyond the attention itself.
    Without the cache every step re-runs ``[CLS] a [SEP] y<t [MASK]``.

    The buffer is updated in place, so a state is consumed by ``step``: keep only the returned one
    (as :mod:`systems.decoding` does); ``reorder`` copies into a fresh buffer.
    """

    def __init__(
        self,
        model: Any,
        mask_id: int,
        source_type: int,
        target_type: int,
        use_cache: bool = True,
        max_len: int = 64,
    ) -> None:
        self.model, self.mask_id, self.use_cache = model, mask_id, use_cache
        self.source_type, self.target_type, self.max_len = source_type, target_type, max_len

    def start(self, sources: list[list[int]]) -> dict[str, Any]:
        """Encode padded sources (``[CLS] a [SEP]`` already included) once."""
        torch = lazy_torch()
        from systems.backbone import KVBuffer, seq2seq_mask

        param = next(self.model.parameters())
        dev = param.device
        s_len = torch.tensor([len(s) for s in sources], device=dev)
        s_max = int(s_len.max())
        ids = pad_rows(sources, s_max).to(dev)
        pos = torch.arange(s_max, device=dev)[None] * (torch.arange(s_max, device=dev)[None] < s_len[:, None])
        state = {"s_len": s_len, "s_max": s_max, "src": ids, "src_pos": pos, "done": [], "t": 0}
        if self.use_cache:
            c = self.model.bert.config
            # source + max_len decoded tokens + the trailing [MASK] slot
            buf = KVBuffer.empty(c.num_layers, len(sources), c.num_heads, c.head_dim, s_max + self.max_len + 1, param)
            mask = seq2seq_mask(s_len, torch.zeros_like(s_len), s_max, 0)
            out = self.model.bert(ids, torch.full_like(ids, self.source_type), pos, mask, past=buf, use_cache=True)
            state["cache"] = out.cache
        return state

    def step(self, state: dict[str, Any], prev: Any) -> tuple[Any, dict[str, Any]]:
        torch = lazy_torch()
        from systems.backbone import decode_step_mask, seq2seq_mask

        dev = state["src"].device
        b = state["src"].shape[0]
        t = state["t"]
        if prev is not None:
            state = {**state, "done": [*state["done"], prev.to(dev)]}
        mask_tok = torch.full((b, 1), self.mask_id, device=dev, dtype=torch.long)
        s_len, s_max = state["s_len"], state["s_max"]
        if self.use_cache:
            new = mask_tok if prev is None else torch.cat([prev.to(dev)[:, None], mask_tok], 1)
            q = new.shape[1]
            pos = s_len[:, None] + torch.arange(t - q + 1, t + 1, device=dev)[None]
            mask = decode_step_mask(s_len, s_max, t - q + 1, q)
            out = self.model.bert(
                new, torch.full_like(new, self.target_type), pos, mask, past=state["cache"], use_cache=True
            )
            state = {**state, "cache": out.cache.truncate(s_max + t)}
        else:
            tgt = torch.stack(state["done"], 1) if state["done"] else mask_tok[:, :0]
            tgt = torch.cat([tgt, mask_tok], 1)
            ids = torch.cat([state["src"], tgt], 1)
            types = torch.cat(
                [torch.full_like(state["src"], self.source_type), torch.full_like(tgt, self.target_type)], 1
            )
            pos = torch.cat([state["src_pos"], s_len[:, None] + torch.arange(t + 1, device=dev)[None]], 1)
            mask = seq2seq_mask(s_len, torch.full_like(s_len, t + 1), s_max, t + 1)
            out = self.model.bert(ids, types, pos, mask)
        logits = self.model.cls(out.last_hidden_state[:, -1])
        return logits.float().log_softmax(-1), {**state, "t": t + 1}

    def reorder(self, state: dict[str, Any], index: Any) -> dict[str, Any]:
        idx = index.to(state["src"].device)
        new = {
            **state,
            "s_len": state["s_len"].index_select(0, idx),
            "src": state["src"].index_select(0, idx),
            "src_pos": state["src_pos"].index_select(0, idx),
            "done": [d.index_select(0, idx) for d in state["done"]],
        }
        if "cache" in state:
            new["cache"] = state["cache"].select(idx)
        return new


# --------------------------------------------------------------------------- system
