"""Model FLOPs utilisation of a paper-shape training step on a device (``bench_training.py --device cuda``).

The shape is the papers' NAR encoder: BERT-base (12 layers × 768, 30,522-word vocab), batch 32,
source + target = 512 wordpieces (464 + 48), bf16, GLAT off, random init, trained by the family's own
``fit`` (the shared trainer's step: autocast, AdamW, clipping, the schedule). Two schedules run in one
process: eager, then ``compile=True``. Step time comes from the trainer's ``step_times.json`` after the
warm-up updates (compilation excluded).

MFU = model FLOPs per update / step time / the device's dense bf16 peak. Model FLOPs count what the
model must compute, not what an implementation happens to: 6·N·tokens for the encoder's matrices
(forward + backward), 12·L·S²·H per sequence for attention scores and mixing, and 6·H·V per *target*
token for the tied output head (the loss is over target positions only).
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: dense bf16 peak (FLOP/s, no sparsity) by a substring of torch.cuda.get_device_name; the first match wins
BF16_PEAK: tuple[tuple[str, float], ...] = (
    ("H200", 989.4e12), ("H100 PCIe", 756.0e12), ("H100", 989.4e12), ("GH200", 989.4e12), ("B200", 2250e12),
    ("A100", 312e12), ("A800", 312e12), ("L40S", 362e12), ("L40", 181e12), ("L4", 121e12), ("A10", 125e12),
    ("RTX 4090", 165e12), ("RTX 6000 Ada", 364e12), ("A6000", 155e12),
)
TARGET_MFU = 0.35  # on an H100/H200


@dataclass(frozen=True)
class Shape:
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    intermediate: int = 3072
    batch: int = 32
    source: int = 464
    target: int = 48
    vocab: int = 30522

    @property
    def seq(self) -> int:
        return self.source + self.target


SMALL = Shape(layers=2, hidden=128, heads=2, intermediate=512, batch=4, source=96, target=32)


def model_flops(shape: Shape) -> float:
    """FLOPs of one training update (forward + backward) at ``shape`` (see the module docstring)."""
    h, seq = shape.hidden, shape.seq
    per_layer_params = 4 * h * h + 2 * h * shape.intermediate  # Q, K, V, O and the two FFN matrices
    tokens = shape.batch * seq
    dense = 6 * shape.layers * per_layer_params * tokens
    attention = 12 * shape.layers * seq * seq * h * shape.batch
    head = 6 * (h * h + h * shape.vocab) * shape.batch * shape.target  # transform + tied decoder, target rows
    return float(dense + attention + head)


def peak_flops(device_name: str) -> float | None:
    for key, peak in BF16_PEAK:
        if key in device_name:
            return peak
    return None


def synthetic_task(shape: Shape, n: int, seed: int = 0) -> Any:
    """``n`` examples whose wordpieces fill the shape exactly (truncated to it): a fixed-shape step, as
    a FLOPs figure needs; the words come from the vocabulary so every token is real."""
    from bench.api.types import Example, TaskInfo
    from systems.backbone import build_tokenizer

    vocab = [w for w in build_tokenizer().vocab if w.isalpha() and not w.startswith("##")][:5000]
    rng = random.Random(seed)

    def words(k: int) -> str:
        return " ".join(rng.choice(vocab) for _ in range(k))

    examples = [Example(f"x{i}", words(shape.source * 2), words(shape.target * 2)) for i in range(n)]
    return TaskInfo("squad_qg", examples, examples[:8], shape.source, shape.target)


def overrides(shape: Shape, steps: int, compile_: bool) -> dict[str, Any]:
    return {
        "tiny": {"hidden": shape.hidden, "layers": shape.layers, "heads": shape.heads,
                 "intermediate": shape.intermediate},
        "steps": steps, "batch_size": shape.batch, "train_examples": shape.batch * steps,
        "max_source_len": shape.source, "max_target_len": shape.target, "glat": False,
        "precision": "bf16", "compile": compile_, "save_every": 0, "bucket_pool": 0, "pad_multiple": 8,
    }


def time_step(shape: Shape, device: str, steps: int, warm: int, compile_: bool) -> float:
    """Seconds per update after ``warm`` updates, from the trainer's own step log."""
    import json

    from bench.env.device import fit_on
    from systems import build

    system = build("encoder_random", "smoke", overrides(shape, steps, compile_))
    task = synthetic_task(shape, shape.batch * steps)
    with tempfile.TemporaryDirectory() as tmp:
        fit_on(system, task, Path(tmp), device)
        rows = [(s, t) for s, t in json.loads((Path(tmp) / "step_times.json").read_text()) if s >= warm]
    (s0, t0), (s1, t1) = rows[0], rows[-1]
    return (t1 - t0) / (s1 - s0)


def run(device: str, steps: int, warm: int, small: bool) -> int:
    """Print both schedules' step time, examples/s and MFU; 1 when the best misses the target on a
    device the target is for (an H100/H200)."""
    import torch

    shape = SMALL if small else Shape()
    name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu"
    peak = peak_flops(name)
    flops = model_flops(shape)
    print(f"device {device} ({name}); shape {shape}; {flops / 1e12:.2f} TFLOP per update; "
          f"bf16 peak {peak / 1e12:.0f} TFLOP/s" if peak else f"device {device} ({name}): bf16 peak unknown")
    best = 0.0
    for compile_ in (False, True):
        t0 = time.perf_counter()
        sec = time_step(shape, device, steps, warm, compile_)
        mfu = flops / sec / peak if peak else None
        best = max(best, mfu or 0.0)
        print(f"{'compile' if compile_ else 'eager':8} bf16: {sec * 1000:7.1f} ms/update, "
              f"{shape.batch / sec:7.1f} examples/s" + (f", MFU {mfu:.1%}" if mfu is not None else "")
              + f"  (whole fit {time.perf_counter() - t0:.0f} s)", flush=True)
    judged = any(k in name for k in ("H100", "H200"))
    figure = f"{best:.1%}" if peak else "unknown (no bf16 peak known for this device)"
    print(f"training MFU: {figure} (best of eager/compile; target ≥ {TARGET_MFU:.0%} on an H100/H200"
          f"{'' if judged else ', not judged on this device'})")
    return 1 if judged and best < TARGET_MFU else 0
