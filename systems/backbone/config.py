"""Backbone hyper-parameters, in BERT's ``config.json`` vocabulary so checkpoints map one-to-one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class BackboneConfig:
    """Shape of a BERT-compatible post-LN encoder (UniLM, MiniLM and SpanBERT share it)."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_position: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    pad_token_id: int = 0

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of num_heads {self.num_heads}; "
                "fix the config.json (hidden_size / num_attention_heads)."
            )

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def from_hf(cls, cfg: Mapping[str, Any]) -> BackboneConfig:
        """Read a BERT ``config.json`` dict (HF names; old pytorch_pretrained_bert files use the same)."""
        try:
            return cls(
                vocab_size=int(cfg["vocab_size"]),
                hidden_size=int(cfg["hidden_size"]),
                num_layers=int(cfg["num_hidden_layers"]),
                num_heads=int(cfg["num_attention_heads"]),
                intermediate_size=int(cfg["intermediate_size"]),
                max_position=int(cfg.get("max_position_embeddings", 512)),
                type_vocab_size=int(cfg.get("type_vocab_size", 2)),
                layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
                hidden_act=str(cfg.get("hidden_act", "gelu")),
                hidden_dropout=float(cfg.get("hidden_dropout_prob", 0.1)),
                attention_dropout=float(cfg.get("attention_probs_dropout_prob", 0.1)),
                pad_token_id=int(cfg.get("pad_token_id", 0) or 0),
            )
        except KeyError as err:
            raise ValueError(f"BERT config.json lacks the key {err}; is this a BERT-layout checkpoint?") from err

    def to_hf(self) -> dict[str, Any]:
        """The inverse of :meth:`from_hf` (used to save checkpoints HF can read)."""
        return {
            "model_type": "bert",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_layers,
            "num_attention_heads": self.num_heads,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position,
            "type_vocab_size": self.type_vocab_size,
            "layer_norm_eps": self.layer_norm_eps,
            "hidden_act": self.hidden_act,
            "hidden_dropout_prob": self.hidden_dropout,
            "attention_probs_dropout_prob": self.attention_dropout,
            "pad_token_id": self.pad_token_id,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> BackboneConfig:
        known = {f.name for f in fields(self)}
        bad = set(changes) - known
        if bad:
            raise ValueError(f"Unknown BackboneConfig fields {sorted(bad)}; known: {sorted(known)}")
        return BackboneConfig(**{**asdict(self), **changes})
