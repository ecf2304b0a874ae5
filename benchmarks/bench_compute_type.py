"""What an optimized CPU decode buys each NAR/semi-NAR family, and which optimization to keep (#60).

Two paired, interleaved timings at paper size with random weights, batch 1, one thread (docs/systems.md,
"Optimized decoding", has the figures this printed):

- ``families``: each system at ``compute_type=float32`` and at ``int8`` (its ``_int8`` twin), ``decode_one`` with
  the length forced (the meter's ``--weights random`` mode), on the same items in a random order per round; the
  speed-up is float32 ÷ int8 with a paired-bootstrap 95 % CI (bench.latency.stats).
- ``options``: the BERT-base encoder NAR (``encoder_bert``'s architecture) one full pass over source + target, as a
  practitioner could deploy it on a CPU: eager float32; the harness's int8 (per-token activations,
  systems/compute.py); PyTorch's ``quantize_dynamic`` (per-tensor activations, which makes a row's output depend
  on its batch); ``torch.compile`` of the float32 pass; ONNX Runtime float32 and its dynamic int8 (when
  ``onnxruntime`` is installed: ``pip install onnxruntime onnx onnxscript``). Each option's logits are compared
  with eager float32's (relative error; argmax agreement means little on random weights, whose logits are
  nearly tied), since a faster wrong answer is not an option.

Preparation (building, compiling, exporting) runs on ``--prepare-cpu`` and the timing on ``--time-cpu``, so a
shared machine's other core does the slow part. Exit 0 unless a variant fails; no target (a measurement).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FAMILIES = ("encoder_bert", "fairseq_nat", "fairseq_cmlm", "fairseq_levt", "fairseq_inst", "fairseq_inat")
#: Quora-like questions (the task whose speed column the issue asks for): a source of about 12-20 words
SOURCES = (
    "how can i improve my english speaking skills quickly without spending a lot of money ?",
    "what is the best way to learn machine learning from scratch in six months ?",
    "why do some people prefer cats to dogs as pets in small apartments ?",
    "which is the best book to read for preparing for the gate exam in computer science ?",
    "how do i stop thinking about the past and focus on my future career ?",
    "what are the most beautiful places to visit in india during the winter ?",
    "is it safe to invest in bitcoin now that its price has fallen again ?",
    "how can i lose weight fast without going to the gym every day ?",
)
FORCED = 16  # target positions of a Quora question (the test split's mean is about 13 words + [SEP])


@contextlib.contextmanager
def on_cpu(cpu: int | None) -> Iterator[None]:
    """Run the block pinned to one core (None: as the process is)."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def paired(variants: dict[str, Callable[[int], Any]], items: int, rounds: int, seed: int) -> dict[str, list[int]]:
    """ns per call of each variant on each item, every round visiting the items in a new order and, per item, the
    variants in a random order (back to back, so both sides of a ratio see the same machine); summed per item."""
    rng = random.Random(seed)
    out = {name: [0] * items for name in variants}
    for _ in range(rounds):
        order = list(range(items))
        rng.shuffle(order)
        for i in order:
            names = list(variants)
            rng.shuffle(names)
            for name in names:
                t0 = time.perf_counter_ns()
                variants[name](i)
                out[name][i] += time.perf_counter_ns() - t0
    return out


def report(times: dict[str, list[int]], reference: str, rounds: int, notes: dict[str, str] | None = None) -> None:
    from bench.latency.stats import paired_bootstrap_speedup

    base = times[reference]
    for name, ns in times.items():
        ms = sum(ns) / len(ns) / rounds / 1e6
        if name == reference:
            print(f"  {name:34s} {ms:8.1f} ms   (reference){('   ' + notes[name]) if notes and name in notes else ''}")
            continue
        sp = paired_bootstrap_speedup(base, ns, n_resamples=2000, seed=0)
        lo, hi = sp.mean_ci95
        note = f"   {notes[name]}" if notes and name in notes else ""
        print(f"  {name:34s} {ms:8.1f} ms   {sp.mean:5.2f}x [{lo:.2f}-{hi:.2f}] over {reference}{note}")


# ---------------------------------------------------------------------------------------------- families
def families(args: argparse.Namespace) -> None:
    import torch

    from bench.api.types import Example, TaskInfo
    from bench.env.device import fit_on
    from systems import build

    torch.set_num_threads(1)
    task = TaskInfo("quora", (), (), 48, 48)
    items = [Example(f"q{i}", s, "") for i, s in enumerate(SOURCES[: args.items])]
    print(f"paper size, random weights, batch 1, 1 thread, forced length {FORCED}; {args.rounds} rounds x "
          f"{len(items)} items, paired and interleaved (time cpu {args.time_cpu}):")
    for name in args.systems.split(","):
        systems = {}
        with on_cpu(args.prepare_cpu), tempfile.TemporaryDirectory() as tmp:
            for label in (name, f"{name}_int8"):
                system = build(label, "paper", {"weights": "random"})
                fit_on(system, task, Path(tmp) / label, "cpu")
                systems[label] = system
        calls = {label: (lambda i, s=s: s.decode_one(items[i], forced_length=FORCED)) for label, s in systems.items()}
        with on_cpu(args.time_cpu):
            for call in calls.values():  # warm-up: first calls allocate
                call(0)
                call(1 % len(items))
            times = paired(calls, len(items), args.rounds, args.seed)
        print(f"{name}:")
        report(times, name, args.rounds)


# ---------------------------------------------------------------------------------------------- options
def options(args: argparse.Namespace) -> None:
    import torch

    from bench.api.types import TaskInfo
    from bench.env.device import fit_on
    from systems import build
    from systems.compute import quantize_linears

    torch.set_num_threads(1)
    with on_cpu(args.prepare_cpu), tempfile.TemporaryDirectory() as tmp:
        system = build("encoder_bert", "paper", {"weights": "random"})
        fit_on(system, TaskInfo("quora", (), (), 48, 48), Path(tmp), "cpu")
    tok = system.encoder
    src = [tok.sources([_ex(s)], test=True)[0] for s in SOURCES[: args.items]]
    width = max(len(s) for s in src)
    pad = tok.pad
    src_ids = torch.tensor([list(s) + [pad] * (width - len(s)) for s in src])
    src_len = torch.tensor([len(s) for s in src])
    tgt = torch.full((1, FORCED), tok.mask)
    tgt_len = torch.tensor([FORCED])
    fp32 = system.model.eval()

    class Pass(torch.nn.Module):
        """One full NAR pass for one item: [CLS] source [SEP] | target masks -> the target's token logits."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, src: Any, src_len: Any) -> Any:
            logits, _ = self.model.joint(src, src_len, tgt, tgt_len)
            return logits

    def one(i: int) -> tuple[Any, Any]:
        n = int(src_len[i])
        return src_ids[i : i + 1, :n], src_len[i : i + 1]

    variants: dict[str, Any] = {"eager float32": Pass(fp32)}
    with torch.inference_mode():  # before anything else touches the model (exporting and compiling can)
        want = [variants["eager float32"](*one(i)) for i in range(len(src))]
    notes: dict[str, str] = {}
    import copy

    with on_cpu(args.prepare_cpu), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = copy.deepcopy(fp32)
        ours.token_head.fold_bias()
        quantize_linears(ours)
        variants["int8 per token (compute_type=int8)"] = Pass(ours)
        dyn = copy.deepcopy(fp32)
        dyn.token_head.fold_bias()
        dyn = torch.ao.quantization.quantize_dynamic(dyn, {torch.nn.Linear}, dtype=torch.qint8)
        variants["int8 per tensor (quantize_dynamic)"] = Pass(dyn)
        if args.compile:
            for label, model in (("torch.compile float32", fp32), ("torch.compile int8 per token", ours)):
                compiled = torch.compile(Pass(copy.deepcopy(model)), dynamic=True)
                with torch.inference_mode():
                    for i in range(len(src)):
                        compiled(*one(i))  # compile here, not while timing
                variants[label] = compiled
        ort = _onnx_runtime(Pass(copy.deepcopy(fp32)), one, len(src)) if args.onnx else {}
        variants.update(ort)
    with torch.inference_mode():
        for name, fn in variants.items():
            got = [torch.as_tensor(fn(*one(i))) for i in range(len(src))]
            err = max(float((g - w).norm() / w.norm()) for g, w in zip(got, want, strict=True))
            notes[name] = f"logits off by {err:.1e} (relative)"
        calls = {name: (lambda i, fn=fn: fn(*one(i))) for name, fn in variants.items()}
        print(f"BERT-base encoder NAR, one pass over source + {FORCED} target positions, batch 1, 1 thread; "
              f"{args.rounds} rounds x {len(src)} items, paired and interleaved (time cpu {args.time_cpu}):")
        with on_cpu(args.time_cpu):
            for call in calls.values():
                call(0)
            times = paired(calls, len(src), args.rounds, args.seed)
    report(times, "eager float32", args.rounds, notes)


def _ex(source: str) -> Any:
    from bench.api.types import Example

    return Example("k", source, "")


def _onnx_runtime(module: Any, one: Callable[[int], Any], n: int) -> dict[str, Any]:
    """ONNX Runtime float32 and dynamic int8 (``onnxruntime.quantization.quantize_dynamic``) of ``module``."""
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        print("  (onnxruntime not installed: pip install onnxruntime onnx onnxscript to add its rows)")
        return {}
    import torch

    folder = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    path = folder / "nar.onnx"
    src, src_len = one(0)
    torch.onnx.export(module, (src, src_len), str(path), input_names=["src", "src_len"], output_names=["logits"],
                      dynamic_axes={"src": {1: "s"}}, opset_version=17, dynamo=False)
    quantize_dynamic(str(path), str(folder / "nar-int8.onnx"), weight_type=QuantType.QInt8)
    out = {}
    for label, file in (("ONNX Runtime float32", path), ("ONNX Runtime int8 (dynamic)", folder / "nar-int8.onnx")):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        session = ort.InferenceSession(str(file), opts, providers=["CPUExecutionProvider"])

        def run(src: Any, src_len: Any, session: Any = session) -> Any:
            return session.run(None, {"src": src.numpy(), "src_len": src_len.numpy()})[0]

        out[label] = run
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", choices=("families", "options", "both"), default="both")
    ap.add_argument("--systems", default=",".join(FAMILIES))
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prepare-cpu", type=int, default=None, help="core that builds/compiles (default: any)")
    ap.add_argument("--time-cpu", type=int, default=None, help="core that times (default: any)")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--no-onnx", dest="onnx", action="store_false")
    args = ap.parse_args()
    if not 1 <= args.items <= len(SOURCES):
        ap.error(f"--items must be in [1, {len(SOURCES)}]")
    if args.what in ("options", "both"):
        options(args)
    if args.what in ("families", "both"):
        families(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
