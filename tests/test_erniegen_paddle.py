"""The Paddle -> backbone converter on LoDTensor files written here (no real checkpoint offline)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from systems.backbone import MLMHead, load_backbone, tiny_backbone, tiny_vocab  # noqa: E402
from systems.erniegen.paddle import convert, name_map, read_lodtensor, write_lodtensor  # noqa: E402


def test_lodtensor_round_trip(tmp_path) -> None:
    for arr in (np.arange(12, dtype=np.float32).reshape(3, 4), np.array([1, -2], dtype=np.int64),
                np.ones((2, 3, 2), dtype=np.float16)):
        write_lodtensor(tmp_path / "p", arr)
        back = read_lodtensor(tmp_path / "p")
        assert back.dtype == arr.dtype and np.array_equal(back, arr)


def test_lodtensor_hand_built_header(tmp_path) -> None:
    """A header assembled byte by byte (one LoD level, packed dims) independent of the writer."""
    import struct

    data = np.array([[1.5, -2.0, 3.25]], dtype=np.float32)
    desc = bytes([0x08, 0x05, 0x12, 0x02, 0x01, 0x03])  # data_type=FP32(5); dims packed [1, 3]
    lod = struct.pack("<QQ", 2, 0) + struct.pack("<Q", 1)  # level with 2 offsets
    raw = struct.pack("<IQ", 0, 1) + struct.pack("<Q", 16) + lod[8:] + struct.pack("<Ii", 0, len(desc)) + desc
    (tmp_path / "x").write_bytes(raw + data.tobytes())
    assert np.array_equal(read_lodtensor(tmp_path / "x"), data)
    (tmp_path / "bad").write_bytes(raw + data.tobytes()[:-4])
    with pytest.raises(ValueError, match="payload"):
        read_lodtensor(tmp_path / "bad")


def test_convert_matches_source_model(tmp_path) -> None:
    vocab = tiny_vocab(["[ATTN]"])
    src = tiny_backbone(vocab_size=len(vocab), hidden=32, layers=2, heads=2, type_vocab_size=4, seed=5)
    head = MLMHead(src.config, src.embeddings.word_embeddings)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours = {**src.state_dict(), **{f"cls.predictions.{k}": v for k, v in head.state_dict().items()}}
    params = tmp_path / "params"
    params.mkdir()
    for paddle_name, (name, transpose) in name_map(2).items():
        arr = ours[name].numpy()
        write_lodtensor(params / paddle_name, arr.T if transpose else arr)
    cfg = {"vocab_size": len(vocab), "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
           "intermediate_size": 128, "max_position_embeddings": 128, "type_vocab_size": 4,
           "hidden_act": "gelu", "layer_norm_eps": 1e-12}
    (tmp_path / "ernie_config.json").write_text(json.dumps(cfg))
    (tmp_path / "vocab.txt").write_text("".join(f"{t}\t{i}\n" for i, t in enumerate(vocab)))
    info = convert(params, tmp_path / "ernie_config.json", tmp_path / "vocab.txt", tmp_path / "out")
    assert info["missing_head"] == []
    model, tok, linfo = load_backbone(str(tmp_path / "out"))
    assert tok.vocab["[ATTN]"] == vocab.index("[ATTN]")
    src.eval()
    model.eval()
    ids = torch.tensor([[2, 10, 11, 3, 12, 3]])
    types = torch.tensor([[0, 0, 0, 0, 3, 3]])
    with torch.no_grad():
        a = src(ids, types).last_hidden_state
        b = model(ids, types).last_hidden_state
        assert torch.allclose(a, b, atol=1e-6)
        head2 = MLMHead(model.config, model.embeddings.word_embeddings)
        assert head2.load_hf(linfo["head_state"]) == []
        assert torch.allclose(head(a), head2(b), atol=1e-5)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["layer_norm_eps"] == 1e-12


def test_convert_names_missing_files(tmp_path) -> None:
    (tmp_path / "params").mkdir()
    (tmp_path / "c.json").write_text(json.dumps({"vocab_size": 8, "hidden_size": 4, "num_hidden_layers": 1,
                                                 "num_attention_heads": 1, "max_position_embeddings": 8}))
    (tmp_path / "v.txt").write_text("[PAD]\n")
    with pytest.raises(FileNotFoundError, match="word_embedding"):
        convert(tmp_path / "params", tmp_path / "c.json", tmp_path / "v.txt", tmp_path / "out")
