"""One BERT-compatible transformer shared by every system: masks from lengths, K/V cache, attention maps.

Importing this package imports torch; the harness reaches it only through systems that need it.
"""

from bench.api.checkpoints import HUB_ALIASES, minilm_dir, resolve_checkpoint
from systems.backbone.cache import BufferSlot, KVBuffer, KVCache
from systems.backbone.config import BackboneConfig
from systems.backbone.loading import backbone_from_state, load_backbone, read_state_dict, tiny_backbone
from systems.backbone.masks import decode_step_mask, padding_mask, seq2seq_mask, unilm_mask
from systems.backbone.model import Backbone, BackboneOutput, MLMHead, mask_to_bias
from systems.backbone.tokenizer import WordPieceTokenizer, build_tokenizer, tiny_vocab

__all__ = [
    "HUB_ALIASES",
    "Backbone",
    "BackboneConfig",
    "BackboneOutput",
    "BufferSlot",
    "KVBuffer",
    "KVCache",
    "MLMHead",
    "WordPieceTokenizer",
    "backbone_from_state",
    "build_tokenizer",
    "decode_step_mask",
    "load_backbone",
    "mask_to_bias",
    "minilm_dir",
    "padding_mask",
    "read_state_dict",
    "resolve_checkpoint",
    "seq2seq_mask",
    "tiny_backbone",
    "tiny_vocab",
    "unilm_mask",
]
