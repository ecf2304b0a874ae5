"""Convert ERNIE-GEN Paddle static-graph params to the backbone's BERT layout, without Paddle.

``fluid.io.save_params(exe, dir)`` writes one file per parameter in Paddle's LoDTensor stream:
``uint32 version`` · ``uint64 lod_level`` · per level ``uint64 nbytes`` + offsets ·
``uint32 tensor version`` · ``int32 desc size`` · a ``VarType.TensorDesc`` protobuf (field 1
data type, field 2 repeated int64 dims) · raw little-endian data.

⚠ Tested only on files written by :func:`write_lodtensor` from that description; it has NOT been
verified against a real released ERNIE-GEN checkpoint (none is available offline). A combined
single-file ``params`` (``save_params(..., filename=...)``) is not supported.

Name map (docs/systems.md §3.1); Paddle fc weights are ``[in, out]`` and are transposed.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

#: Paddle ``VarType.Type`` codes -> numpy dtypes
DTYPES = {0: np.bool_, 1: np.int16, 2: np.int32, 3: np.int64, 4: np.float16, 5: np.float32, 6: np.float64,
          20: np.uint8, 21: np.int8}
CODES = {np.dtype(v): k for k, v in DTYPES.items()}


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint in TensorDesc")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, pos


def _tensor_desc(buf: bytes) -> tuple[int, list[int]]:
    """(data type code, dims) from a serialized TensorDesc (packed or unpacked dims)."""
    pos, dtype, dims = 0, None, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _varint(buf, pos)
            if field == 1:
                dtype = val
            elif field == 2:
                dims.append(val - (1 << 64) if val >= 1 << 63 else val)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            chunk, pos = buf[pos : pos + n], pos + n
            if field == 2:
                p = 0
                while p < len(chunk):
                    val, p = _varint(chunk, p)
                    dims.append(val - (1 << 64) if val >= 1 << 63 else val)
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} in TensorDesc")
    if dtype is None:
        raise ValueError("TensorDesc without data_type")
    return dtype, dims


def read_lodtensor(path: Path) -> np.ndarray:
    """One parameter file written by ``fluid.io.save_params`` / ``save_vars`` -> numpy array."""
    data = Path(path).read_bytes()
    try:
        pos = 4  # uint32 LoDTensor version
        (version,) = struct.unpack_from("<I", data, 0)
        if version != 0:
            raise ValueError(f"LoDTensor version {version} (expected 0)")
        (levels,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        for _ in range(levels):
            (nbytes,) = struct.unpack_from("<Q", data, pos)
            pos += 8 + nbytes
        (tversion,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if tversion != 0:
            raise ValueError(f"Tensor version {tversion} (expected 0)")
        (desc_size,) = struct.unpack_from("<i", data, pos)
        pos += 4
        code, dims = _tensor_desc(data[pos : pos + desc_size])
        pos += desc_size
    except struct.error as err:
        raise ValueError(f"{path}: truncated Paddle LoDTensor file ({err})") from err
    if code not in DTYPES:
        raise ValueError(f"{path}: unsupported Paddle data type code {code}")
    dtype = np.dtype(DTYPES[code]).newbyteorder("<")
    count = int(np.prod(dims)) if dims else 1
    if len(data) - pos != count * dtype.itemsize:
        raise ValueError(
            f"{path}: payload has {len(data) - pos} bytes, dims {dims} x {dtype} need {count * dtype.itemsize}"
        )
    return np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(dims).copy()


def write_lodtensor(path: Path, array: np.ndarray) -> None:
    """Write ``array`` in the same format (lod_level 0): used by the tests and for round trips."""
    arr = np.ascontiguousarray(array)
    code = CODES[arr.dtype]

    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)

    desc = b"\x08" + varint(code) + b"".join(b"\x10" + varint(d) for d in arr.shape)
    header = struct.pack("<IQIi", 0, 0, 0, len(desc)) + desc
    Path(path).write_bytes(header + arr.astype(arr.dtype.newbyteorder("<")).tobytes())


def name_map(num_layers: int) -> dict[str, tuple[str, bool]]:
    """Paddle name -> (BERT-layout name, transpose?) for every tensor the backbone + head use."""
    m: dict[str, tuple[str, bool]] = {
        "word_embedding": ("embeddings.word_embeddings.weight", False),
        "pos_embedding": ("embeddings.position_embeddings.weight", False),
        "sent_embedding": ("embeddings.token_type_embeddings.weight", False),
        "pre_encoder_layer_norm_scale": ("embeddings.LayerNorm.weight", False),
        "pre_encoder_layer_norm_bias": ("embeddings.LayerNorm.bias", False),
        "mask_lm_trans_fc.w_0": ("cls.predictions.transform.dense.weight", True),
        "mask_lm_trans_fc.b_0": ("cls.predictions.transform.dense.bias", False),
        "mask_lm_trans_layer_norm_scale": ("cls.predictions.transform.LayerNorm.weight", False),
        "mask_lm_trans_layer_norm_bias": ("cls.predictions.transform.LayerNorm.bias", False),
        "mask_lm_out_fc.b_0": ("cls.predictions.bias", False),
    }
    for i in range(num_layers):
        p, h = f"encoder_layer_{i}", f"encoder.layer.{i}"
        fc = {
            "multi_head_att_query_fc": "attention.self.query",
            "multi_head_att_key_fc": "attention.self.key",
            "multi_head_att_value_fc": "attention.self.value",
            "multi_head_att_output_fc": "attention.output.dense",
            "ffn_fc_0": "intermediate.dense",
            "ffn_fc_1": "output.dense",
        }
        for src, dst in fc.items():
            m[f"{p}_{src}.w_0"] = (f"{h}.{dst}.weight", True)
            m[f"{p}_{src}.b_0"] = (f"{h}.{dst}.bias", False)
        norms = (("post_att_layer_norm", "attention.output.LayerNorm"), ("post_ffn_layer_norm", "output.LayerNorm"))
        for src, dst in norms:
            m[f"{p}_{src}_scale"] = (f"{h}.{dst}.weight", False)
            m[f"{p}_{src}_bias"] = (f"{h}.{dst}.bias", False)
    return m


def hf_config(ernie: dict[str, Any]) -> dict[str, Any]:
    """ERNIE ``ernie_config.json`` -> BERT ``config.json`` (LayerNorm eps 1e-5 default, GELU variant)."""
    act = str(ernie.get("hidden_act", "gelu"))
    return {
        "model_type": "bert",
        "vocab_size": int(ernie["vocab_size"]),
        "hidden_size": int(ernie["hidden_size"]),
        "num_hidden_layers": int(ernie["num_hidden_layers"]),
        "num_attention_heads": int(ernie["num_attention_heads"]),
        "intermediate_size": int(ernie.get("intermediate_size", 4 * int(ernie["hidden_size"]))),
        "max_position_embeddings": int(ernie["max_position_embeddings"]),
        "type_vocab_size": int(ernie.get("type_vocab_size", ernie.get("sent_type_vocab_size", 4))),
        "layer_norm_eps": float(ernie.get("layer_norm_eps", 1e-5)),
        "hidden_act": "gelu_new" if act == "gelu.approximate" else act,
        "hidden_dropout_prob": float(ernie.get("hidden_dropout_prob", 0.1)),
        "attention_probs_dropout_prob": float(ernie.get("attention_probs_dropout_prob", 0.1)),
        "pad_token_id": 0,
    }


def convert(params_dir: Path, ernie_config: Path, vocab: Path, out_dir: Path) -> dict[str, Any]:
    """Write ``out_dir/{config.json, model.safetensors, vocab.txt}`` loadable by ``load_backbone``.

    A ``task_embedding`` (ERNIE 2.0 style, task id 0 at fine-tuning) is folded into the position
    table, since it is a constant vector added before the embedding LayerNorm.
    """
    import torch
    from safetensors.torch import save_file

    params_dir, out_dir = Path(params_dir), Path(out_dir)
    if not params_dir.is_dir():
        raise FileNotFoundError(f"{params_dir}: not a directory of Paddle parameter files (fluid.io.save_params)")
    cfg = hf_config(json.loads(Path(ernie_config).read_text()))
    mapping = name_map(cfg["num_hidden_layers"])
    state: dict[str, torch.Tensor] = {}
    missing = []
    for src, (dst, transpose) in mapping.items():
        f = params_dir / src
        if not f.is_file():
            missing.append(src)
            continue
        arr = read_lodtensor(f)
        state[dst] = torch.from_numpy(arr.T.copy() if transpose else arr).float()
    required = [k for k in mapping if not k.startswith("mask_lm")]
    lacking = [k for k in missing if k in required]
    if lacking:
        raise FileNotFoundError(f"{params_dir}: missing Paddle parameter files {lacking[:6]} (of {len(lacking)})")
    task = params_dir / "task_embedding"
    if task.is_file():
        state["embeddings.position_embeddings.weight"] += torch.from_numpy(read_lodtensor(task)[0]).float()
    cfg["type_vocab_size"] = int(state["embeddings.token_type_embeddings.weight"].shape[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out_dir / "model.safetensors"))
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=1))
    tokens = [line.rstrip("\n").split("\t")[0] for line in Path(vocab).open(encoding="utf-8")]
    (out_dir / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    (out_dir / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return {"tensors": len(state), "missing_head": [k for k in missing if k not in required], "config": cfg}


def main(argv: list[str] | None = None) -> None:
    """``python -m systems.erniegen.paddle PARAMS_DIR ERNIE_CONFIG VOCAB OUT_DIR``."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        raise SystemExit("usage: python -m systems.erniegen.paddle PARAMS_DIR ernie_config.json vocab.txt OUT_DIR")
    info = convert(Path(args[0]), Path(args[1]), Path(args[2]), Path(args[3]))
    print(json.dumps({k: v for k, v in info.items() if k != "config"}))


if __name__ == "__main__":
    main()
