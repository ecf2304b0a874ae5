"""Backbone/UniLM speed: training examples/s (cpu preset) and AR decode ms/token at batch size 1.

Decode is timed with and without the K/V cache for source lengths 64 and 384: with the cache the
source is encoded once and each step runs 2 new tokens, so the per-token cost must stay (nearly)
flat in the source length; without it every step re-encodes source + prefix. Uses the offline
``minilm-l6`` backbone (falls back to a random model of the same shape if the package is missing).
Run by ``make bench``; ``--quick`` uses fewer repetitions.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from systems.unilm import UniLMDecoder, V1Collator, _Parts, make_config  # noqa: E402


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
def decode_ms_per_token(
    model: torch.nn.Module, mask_id: int, src_len: int, use_cache: bool, tokens: int, reps: int
) -> float:
    dec = UniLMDecoder(model, mask_id, 0, 1, use_cache=use_cache)
    src = [[101, *range(2000, 2000 + src_len - 2), 102]]
    best = float("inf")
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        state, prev = dec.start(src), None
        for _ in range(tokens):
            logp, state = dec.step(state, prev)
            prev = logp.argmax(-1)
        best = min(best, (time.perf_counter() - t0) / tokens * 1000)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    model, cls, sep, mask, vocab, name = build(args.threads)
    steps, reps, tokens = (2, 1, 10) if args.quick else (5, 3, 20)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"backbone {name}, torch threads {args.threads}, load average {load:.1f}")
    eps = train_speed(model, cls, sep, mask, vocab, steps)
    cfg = make_config("v1", "cpu", {})
    print(
        f"training (cpu preset: batch {cfg.batch_size}, source {cfg.max_source_len}, target "
        f"{cfg.max_target_len}): {eps:.2f} examples/s"
    )
    print(f"{'source':>6} {'cache':>5} {'ms/token':>9}")
    res = {}
    for src_len in (64, 384):
        for use_cache in (True, False):
            ms = decode_ms_per_token(model, mask, src_len, use_cache, tokens, reps)
            res[src_len, use_cache] = ms
            print(f"{src_len:>6} {'yes' if use_cache else 'no':>5} {ms:>9.2f}")
    growth_cached = res[384, True] / res[64, True]
    growth_full = res[384, False] / res[64, False]
    print(f"per-token cost 384 vs 64: cached x{growth_cached:.2f}, uncached x{growth_full:.2f}")
    flat = growth_cached < 1.5
    print("cache keeps per-token cost flat in source length:", "yes" if flat else "NO")
    return 0 if flat else 1


if __name__ == "__main__":
    raise SystemExit(main())
