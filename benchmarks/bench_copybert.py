"""CopyBERT's copy distribution at L = 384: scatter-add over input ids vs the naive dense one-hot.

Prints peak memory and step time (forward + backward through the copy weights) of both, at the
paper's shape by default (question rows of a batch of 6, L = 384, V = 28,996 as in bert-large-cased),
and checks that they agree. Peak memory is measured by torch's CPU profiler (or CUDA's allocator
when ``--device cuda``); run by ``make bench``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from systems.copybert.copy import copy_distribution, copy_distribution_dense


def _inputs(rows: int, length: int, vocab: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    attn = torch.rand(rows, length, generator=g).softmax(-1).to(device).requires_grad_(True)
    ids = torch.randint(0, vocab, (rows, length), generator=g).to(device)
    return attn, ids


def _step(fn, attn: torch.Tensor, ids: torch.Tensor, vocab: int) -> torch.Tensor:
    attn.grad = None
    out = fn(attn, ids, vocab)
    out.log().clamp_min(-30).sum().backward()
    return out.detach()


def measure(fn, rows: int, length: int, vocab: int, device: str, repeats: int) -> dict[str, float]:
    """Median step time (s) and peak memory (MiB) of one forward+backward of ``fn``."""
    attn, ids = _inputs(rows, length, vocab, device)
    _step(fn, attn, ids, vocab)  # warm-up
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        _step(fn, attn, ids, vocab)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        _step(fn, attn, ids, vocab)
        peak = torch.cuda.max_memory_allocated() - base
    else:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            _step(fn, attn, ids, vocab)
        peak = _cpu_peak(prof)
    times.sort()
    return {"step_s": times[len(times) // 2], "peak_mib": peak / 2**20}


def _cpu_peak(prof) -> float:
    """Peak of the running sum of allocations/frees recorded by the profiler (bytes)."""
    events = sorted(
        (e for e in prof.events() if getattr(e, "cpu_memory_usage", 0)), key=lambda e: e.time_range.start
    )
    cur = peak = 0
    for e in events:
        cur += e.cpu_memory_usage
        peak = max(peak, cur)
    return float(peak)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1, help="examples (6 = the paper batch: ~46 GB dense)")
    ap.add_argument(
        "--question-rows", type=int, default=12, help="labelled rows per example (SQuAD mean ~12)"
    )
    ap.add_argument("--length", type=int, default=384)
    ap.add_argument("--vocab", type=int, default=28_996)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    rows = args.batch * args.question_rows
    print(
        f"copy distribution: {rows} rows (batch {args.batch} x {args.question_rows} question rows), "
        f"L={args.length}, V={args.vocab}, {args.device}, {torch.get_num_threads()} threads"
    )
    a, i = _inputs(rows, args.length, args.vocab, args.device)
    with torch.no_grad():
        same = torch.allclose(
            copy_distribution(a, i, args.vocab), copy_distribution_dense(a, i, args.vocab), atol=1e-6
        )
    results = {}
    for name, fn in (("scatter", copy_distribution), ("dense one-hot", copy_distribution_dense)):
        results[name] = measure(fn, rows, args.length, args.vocab, args.device, args.repeats)
        r = results[name]
        print(f"  {name:14s} step {r['step_s'] * 1e3:9.1f} ms   peak {r['peak_mib']:9.1f} MiB")
    s, d = results["scatter"], results["dense one-hot"]
    ratio_mem = d["peak_mib"] / max(s["peak_mib"], 1e-9)
    print(
        f"  dense/scatter: time x{d['step_s'] / s['step_s']:.1f}, memory x{ratio_mem:.1f}; agree: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
