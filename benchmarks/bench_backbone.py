"""Backbone/UniLM speed: training examples/s (cpu preset) and AR decode ms/token at batch size 1.

Decode is timed with and without the K/V cache for source lengths 64 and 384 (run by ``make bench``;
``--quick`` uses fewer repetitions). With the cache the source is encoded once (the *prefill*, timed
on its own) and each step runs 2 new tokens against a preallocated K/V buffer, so the per-token cost
of a step must stay flat in the source length: the only extra work is attention over the longer
cache. At batch size 1 a step is bound by memory traffic, not FLOPs: it streams every weight once
(~91 MB for MiniLM-L6 in fp32, the 30,522-word output layer included), and reading the K/V of 320
more positions adds ~6 MB, so ~x1.06 is the floor (printed as "memory-traffic floor"); ``LIMIT``
leaves room for noise above it. Without the cache every step re-encodes source + prefix.

ms/token is the median over every timed step of every repetition; the 64 and 384 decoders step in
turn (lock-step), so background load hits both alike and their ratio stays meaningful. Exits 1 if
cached ms/token at 384 exceeds ``LIMIT`` x the figure at 64. Uses the offline ``minilm-l6``
backbone (falls back to a random model of the same shape if the package is missing).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from systems.unilm import UniLMDecoder, V1Collator, _Parts, make_config

LIMIT = 1.10  # cached ms/token, source 384 vs 64; the memory-traffic floor is ~x1.06 (see above)
SOURCE_LENGTHS = (64, 384)


def build(threads: int) -> tuple[torch.nn.Module, int, int, int, int, str]:
    torch.set_num_threads(threads)
    try:
        from systems.backbone import load_backbone

        bb, tok, _ = load_backbone("minilm-l6")
        ids = (tok.cls_id, tok.sep_id, tok.mask_id, tok.vocab_size)
        name = "minilm-l6"
    except FileNotFoundError:
        from systems.backbone import Backbone, BackboneConfig

        bb = Backbone(BackboneConfig(30522, 384, 6, 12, 1536))
        ids, name = (101, 102, 103, 30522), "random MiniLM-L6 shape"
    return _Parts.model_class()(bb, 0.1), *ids, name


def train_speed(model: torch.nn.Module, cls: int, sep: int, mask: int, vocab: int, steps: int) -> float:
    from systems.training import build_optimizer

    cfg = make_config("v1", "cpu", {})
    col = V1Collator(cls, sep, mask, vocab, cfg)
    rng = random.Random(0)
    items = [
        (
            [rng.randrange(1000, vocab) for _ in range(cfg.max_source_len - 2)],
            [rng.randrange(1000, vocab) for _ in range(cfg.max_target_len - 1)],
        )
        for _ in range(cfg.batch_size)
    ]
    opt = build_optimizer(cfg.optimizer, model, cfg.lr)
    model.train()
    times = []
    for i in range(steps + 1):
        batch = col(items, rng)
        t0 = time.perf_counter()
        model(batch).backward()
        opt.step()
        opt.zero_grad()
        if i:  # the first step is warm-up
            times.append(time.perf_counter() - t0)
    model.eval()
    return cfg.batch_size / (sum(times) / len(times))


@torch.inference_mode()
def decode_lockstep(
    model: torch.nn.Module, mask_id: int, use_cache: bool, tokens: int
) -> tuple[dict[int, float], dict[int, list[float]]]:
    """One batch-1 decode of ``tokens`` steps per source length, the decoders stepping in turn
    (64, 384, 64, 384, ...) so that load changes hit both alike: (prefill ms, [ms of each step])."""
    decs, states, prevs, prefill, steps = {}, {}, {}, {}, {}
    for n in SOURCE_LENGTHS:
        decs[n] = UniLMDecoder(model, mask_id, 0, 1, use_cache=use_cache, max_len=tokens)
        t0 = time.perf_counter()
        states[n], prevs[n] = decs[n].start([[101, *range(2000, 2000 + n - 2), 102]]), None
        prefill[n], steps[n] = (time.perf_counter() - t0) * 1000, []
    for _ in range(tokens):
        for n in SOURCE_LENGTHS:
            t0 = time.perf_counter()
            logp, states[n] = decs[n].step(states[n], prevs[n])
            prevs[n] = logp.argmax(-1)
            steps[n].append((time.perf_counter() - t0) * 1000)
    return prefill, steps


def decode_table(model: torch.nn.Module, mask_id: int, tokens: int, reps: int) -> dict[tuple[int, bool], dict]:
    """Repetitions of lock-step decodes with and without the cache; medians per (source length, cache)."""
    for use_cache in (True, False):  # warm-up
        decode_lockstep(model, mask_id, use_cache, 2)
    prefill: dict = {(n, c): [] for c in (True, False) for n in SOURCE_LENGTHS}
    steps: dict = {key: [] for key in prefill}
    for _ in range(reps):
        for use_cache in (True, False):
            pre, step = decode_lockstep(model, mask_id, use_cache, tokens)
            for n in SOURCE_LENGTHS:
                prefill[n, use_cache].append(pre[n])
                steps[n, use_cache].extend(step[n])
    out = {}
    for key in prefill:
        pre, step = statistics.median(prefill[key]), statistics.median(steps[key])
        out[key] = {"prefill": pre, "step": step, "total": step + pre / tokens}
    return out


def traffic_floor(model: torch.nn.Module, tokens: int) -> float:
    """Expected cached ms/token ratio 384 vs 64 if a step costs its bytes: all weights + the K/V read."""
    cfg = model.bert.config
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    per_pos = 2 * cfg.num_layers * cfg.hidden_size * next(model.parameters()).element_size()
    lo, hi = (weights + per_pos * (n + tokens / 2 + 1) for n in SOURCE_LENGTHS)
    return hi / lo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    model, cls, sep, mask, vocab, name = build(args.threads)
    steps, reps, tokens = (2, 2, 10) if args.quick else (5, 5, 20)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"backbone {name}, torch threads {args.threads}, load average {load:.1f} on {os.cpu_count()} CPUs")
    eps = train_speed(model, cls, sep, mask, vocab, steps)
    cfg = make_config("v1", "cpu", {})
    print(
        f"training (cpu preset: batch {cfg.batch_size}, source {cfg.max_source_len}, target "
        f"{cfg.max_target_len}): {eps:.2f} examples/s"
    )
    res = decode_table(model, mask, tokens, reps)
    print(f"AR decode at batch size 1, {tokens} tokens, {reps} repetitions, 64/384 in lock-step (medians):")
    print(f"{'source':>6} {'cache':>5} {'prefill ms':>10} {'ms/token':>9} {'ms/token incl. prefill':>22}")
    for (src_len, use_cache), r in res.items():
        pre = f"{r['prefill']:.2f}" if use_cache else "-"
        print(f"{src_len:>6} {'yes' if use_cache else 'no':>5} {pre:>10} {r['step']:>9.2f} {r['total']:>22.2f}")
    lo, hi = SOURCE_LENGTHS
    cached = res[hi, True]["step"] / res[lo, True]["step"]
    full = res[hi, False]["step"] / res[lo, False]["step"]
    floor = traffic_floor(model, tokens)
    print(
        f"ms/token, source {hi} vs {lo}: cached x{cached:.2f} (memory-traffic floor x{floor:.2f}), uncached x{full:.2f}"
    )
    ok = cached <= LIMIT
    verdict = "met" if ok else "MISSED"
    print(f"target (cached ms/token at source {hi} <= {LIMIT:.2f} x source {lo}): {verdict} (x{cached:.2f})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
