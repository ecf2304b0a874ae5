"""Load BERT-layout checkpoints (BERT, UniLM v1/v1.2, MiniLM, SpanBERT) into :class:`Backbone`.

Where a checkpoint comes from (a local directory, ``$BENCH_CHECKPOINTS/<name>``, the offline
``minilm-l6`` package, the HF cache, the hub when reachable) is :mod:`bench.api.checkpoints`'s, shared with
``bench fetch``; this module reads the files it finds into the project's transformer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

# where checkpoints come from (names, hub, pins, offline package) is bench.api.checkpoints's: bench fetch shares it
from bench.api.checkpoints import FRESH_FIX, CorruptCheckpoint, reading_checkpoint, resolve_checkpoint, resolve_weights
from systems.backbone.config import BackboneConfig
from systems.backbone.model import Backbone
from systems.backbone.tokenizer import WordPieceTokenizer


def read_state_dict(path: Path) -> dict[str, Tensor]:
    """Tensors of a checkpoint file or directory (safetensors preferred; .bin via weights_only=True)."""
    if path.is_dir():
        for cand in ("model.safetensors", "pytorch_model.bin"):
            if (path / cand).is_file():
                path = path / cand
                break
        else:
            files = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
            if len(files) != 1:
                raise FileNotFoundError(
                    f"{path}: expected model.safetensors or pytorch_model.bin (found {[f.name for f in files]})"
                )
            path = files[0]
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        with reading_checkpoint(path):
            return load_file(str(path))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CorruptCheckpoint(path, f"torch.load(weights_only=True): {(str(err).splitlines() or [''])[0][:200]}",
                                f"{FRESH_FIX}; a checkpoint of your own: convert it to safetensors or re-save it as "
                                "a plain state dict") from None
    if not isinstance(state, dict):
        raise ValueError(f"{path}: expected a state dict, got {type(state).__name__}")
    return {k: v for k, v in state.items() if isinstance(v, Tensor)}


def normalise_keys(state: dict[str, Tensor]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """Split into (encoder tensors with HF BertModel names, other tensors such as ``cls.*`` heads).

    Handles the ``bert.`` prefix and the TF-era ``LayerNorm.gamma/beta`` names of old checkpoints.
    """
    body, rest = {}, {}
    for key, val in state.items():
        k = key.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        k = k[len("bert.") :] if k.startswith("bert.") else k
        if k.startswith(("embeddings.", "encoder.")):
            if not k.endswith("position_ids"):
                body[k] = val
        else:
            rest[k] = val
    return body, rest


def resize_type_vocab(state: dict[str, Tensor], n_types: int) -> dict[str, Tensor]:
    """Grow ``token_type_embeddings`` to ``n_types`` rows by cycling the trained rows.

    UniLM's ``--new_segment_ids`` needs 6 types on a 2-type BERT; copying trained rows (rather than
    random init) keeps the initial embedding scale of the pretrained model.
    """
    key = "embeddings.token_type_embeddings.weight"
    old = state[key]
    if old.shape[0] < n_types:
        idx = torch.arange(n_types) % old.shape[0]
        state = {**state, key: old[idx].clone()}
    return state


def backbone_from_state(
    cfg_dict: dict[str, Any], state: dict[str, Tensor], type_vocab_size: int | None = None
) -> tuple[Backbone, dict[str, Tensor]]:
    """Build a Backbone from a config dict and raw tensors; returns it and the non-encoder tensors."""
    body, rest = normalise_keys(state)
    key = "embeddings.token_type_embeddings.weight"
    if key in body:
        cfg_dict = {**cfg_dict, "type_vocab_size": int(body[key].shape[0])}
    if type_vocab_size is not None and type_vocab_size > cfg_dict.get("type_vocab_size", 2):
        body = resize_type_vocab(body, type_vocab_size)
        cfg_dict = {**cfg_dict, "type_vocab_size": type_vocab_size}
    model = Backbone(BackboneConfig.from_hf(cfg_dict))
    result = model.load_state_dict(body, strict=False)
    if result.missing_keys:
        raise ValueError(f"checkpoint lacks encoder tensors {result.missing_keys[:6]}... (is it BERT-layout?)")
    if result.unexpected_keys:
        rest.update({k: body[k] for k in result.unexpected_keys})
    return model, rest


def load_backbone(
    name_or_path: str, *, weights: str | Path | None = None, type_vocab_size: int | None = None
) -> tuple[Backbone, WordPieceTokenizer, dict[str, Any]]:
    """Load (backbone, tokenizer, info) for ``'minilm-l6'``, a directory, or a hub id (see :func:`resolve_checkpoint`).

    ``weights`` overrides the weight file (unilm-v1: ``bert-large-cased`` config/vocab with
    ``unilm1-large-cased.bin`` weights). ``info`` holds ``config`` (HF dict), ``head_state``
    (tensors outside the encoder, e.g. ``cls.predictions.*`` for :class:`MLMHead`), ``path`` and
    ``lowercase``.
    """
    ckpt = resolve_checkpoint(name_or_path)
    cfg_file = ckpt / "config.json"
    if not cfg_file.is_file():
        cands = list(ckpt.glob("*config*.json"))
        if not cands:
            raise FileNotFoundError(f"{ckpt}: no config.json (BERT config) found")
        cfg_file = cands[0]
    cfg_dict = json.loads(cfg_file.read_text())
    state = read_state_dict(resolve_weights(weights) if weights is not None else ckpt)
    model, rest = backbone_from_state(cfg_dict, state, type_vocab_size)
    lowercase = _lowercase(ckpt, name_or_path)
    vocab = ckpt / "vocab.txt"
    if not vocab.is_file():
        raise FileNotFoundError(f"{ckpt}: vocab.txt missing (needed for the WordPiece tokenizer)")
    tok = WordPieceTokenizer(vocab, lowercase=lowercase)
    info = {
        "name": name_or_path,
        "path": str(ckpt),
        "weights": str(weights) if weights is not None else None,
        "config": model.config.to_hf(),
        "head_state": {k: v for k, v in rest.items() if k.startswith("cls.")},
        "lowercase": lowercase,
    }
    return model, tok, info


def _lowercase(ckpt: Path, name: str) -> bool:
    tc = ckpt / "tokenizer_config.json"
    if tc.is_file():
        val = json.loads(tc.read_text()).get("do_lower_case")
        if val is not None:
            return bool(val)
    return "cased" not in name.lower() or "uncased" in name.lower()


def tiny_backbone(
    vocab_size: int = 128,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    intermediate: int | None = None,
    max_position: int = 128,
    type_vocab_size: int = 2,
    dropout: float = 0.0,
    seed: int | None = 0,
) -> Backbone:
    """A small randomly initialised backbone for tests and the smoke budget."""
    if seed is not None:
        torch.manual_seed(seed)
    cfg = BackboneConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        intermediate_size=intermediate or 4 * hidden,
        max_position=max_position,
        type_vocab_size=type_vocab_size,
        hidden_dropout=dropout,
        attention_dropout=dropout,
    )
    return Backbone(cfg)
