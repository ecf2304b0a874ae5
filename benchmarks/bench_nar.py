"""NAR decode cost at batch size 1 against the work it cannot avoid (run by ``make bench``).

For source lengths 64/192/464 it times, on minilm-l6 (offline weights; latency does not depend on
training), ``decode_one`` of the encoder NAT (tokenise, length from the source pass, source K/V
cached, one ``[MASK]`` target pass over the cache, argmax, post-processing) against the
*necessary work* measured as plain operations on the same model:

- one source forward that keeps its K/V (the length head reads its states),
- one pass of the T target positions attending to that cache,
- the 30,522-word output layer on those T positions.

The first figure (decode_one / one source forward) is printed for continuity; for short sources it
cannot approach 1 because the target pass and the head are real work. The target is on the second:
decode_one within 1.10x of the necessary work at every source length. Rounds are interleaved so
machine load hits every side alike; medians are compared. Exits 1 if any ratio exceeds 1.10.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api.types import Example

LIMIT = 1.10  # decode_one / necessary work
SOURCE_LENGTHS = (64, 192, 464)


def build(backbone: str):
    """An (untrained-head) encoder NAT system ready to decode, and its model."""
    from systems.nar.data import Encoder
    from systems.nar.system import make

    system = make("encoder_minilm_l6", "cpu", {"backbone": backbone})
    model, tok, _ = system._build_model()
    system.model = model.eval()
    system.encoder = Encoder(tok, max_source_len=512 - 48, max_target_len=48, test_extra=0)
    return system, model


def time_pair(system, model, n_src: int, target_len: int, rounds: int, warmup: int) -> dict[str, float]:
    import torch

    example = Example("bench", " ".join(["the"] * (n_src - 2)), "q")
    src = system.encoder.sources([example], test=True)[0]
    assert len(src) == n_src, (len(src), n_src)
    ids = torch.tensor([src])
    types, pos = torch.zeros_like(ids), torch.arange(n_src)[None, :]
    tgt = torch.full((1, target_len), system.encoder.mask)
    tgt_types, tgt_pos = torch.ones_like(tgt), torch.arange(n_src, n_src + target_len)[None, :]
    with torch.inference_mode():
        cache = model.backbone(ids, types, pos, use_cache=True).cache
        hidden = model.backbone(tgt, tgt_types, tgt_pos, past=cache).last_hidden_state

    def forward() -> None:
        with torch.inference_mode():
            model.backbone(ids, types, pos, use_cache=True)

    def target_pass() -> None:
        with torch.inference_mode():
            model.backbone(tgt, tgt_types, tgt_pos, past=cache)

    def head() -> None:
        with torch.inference_mode():
            model.token_head(hidden).argmax(-1)

    def nar() -> None:
        system.decode_one(example, forced_length=target_len)

    sides = {"forward": forward, "target": target_pass, "head": head, "nar": nar}
    for _ in range(warmup):
        for fn in sides.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            t0 = time.perf_counter_ns()
            fn()
            times[name].append((time.perf_counter_ns() - t0) / 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    necessary = med["forward"] + med["target"] + med["head"]
    return {
        "source_len": n_src,
        "forward_ms": med["forward"],
        "target_ms": med["target"],
        "head_ms": med["head"],
        "necessary_ms": necessary,
        "nar_ms": med["nar"],
        "vs_forward": med["nar"] / med["forward"],
        "ratio": med["nar"] / necessary,
    }


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backbone", default="minilm-l6")
    ap.add_argument("--target-len", type=int, default=16, help="forced target length incl. [SEP]")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    system, model = build(args.backbone)
    print(
        f"NAR decode_one vs backbone forward, batch 1, {args.backbone}, T={args.target_len}, "
        f"torch threads={torch.get_num_threads()}, medians of {args.rounds} interleaved rounds"
    )
    print(
        f"{'source':>6} {'forward ms':>11} {'target ms':>10} {'head ms':>8} {'necessary':>10} {'NAR ms':>8} "
        f"{'NAR/fwd':>8} {'NAR/necessary':>14}"
    )
    ok = True
    for n in SOURCE_LENGTHS:
        r = time_pair(system, model, n, args.target_len, args.rounds, args.warmup)
        flag = "" if r["ratio"] <= LIMIT else f"  > {LIMIT} FAIL"
        ok &= r["ratio"] <= LIMIT
        print(
            f"{n:>6} {r['forward_ms']:>11.2f} {r['target_ms']:>10.2f} {r['head_ms']:>8.2f} {r['necessary_ms']:>10.2f} "
            f"{r['nar_ms']:>8.2f} {r['vs_forward']:>8.2f} {r['ratio']:>14.2f}{flag}"
        )
    print("PASS" if ok else f"FAIL: NAR decode_one must cost at most {LIMIT}x the necessary work")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
