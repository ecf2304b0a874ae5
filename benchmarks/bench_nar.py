"""NAR decode cost at batch size 1 vs one plain backbone forward (run by ``make bench``).

For source lengths 64/192/464 it times, on minilm-l6 (offline weights; latency does not depend on
training), ``decode_one`` of the encoder NAT (length from the source pass, source K/V cached,
one ``[MASK]`` target pass over the cache, argmax, post-processing) against one backbone forward
over the source alone. The target length is forced to a typical SQuAD question length so every
run does the same work. Rounds are interleaved so machine load hits both sides alike; medians are
compared. Exits 1 if any NAR/forward ratio exceeds 1.3.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.data.types import Example  # noqa: E402

LIMIT = 1.3
SOURCE_LENGTHS = (64, 192, 464)


def build(backbone: str):  # noqa: ANN201
    """An (untrained-head) encoder NAT system ready to decode, and its model."""
    from systems.nar.data import Encoder
    from systems.nar.system import make

    system = make("encoder_minilm_l6", "cpu", {"backbone": backbone})
    model, tok, _ = system._build_model()
    system.model = model.eval()
    system.encoder = Encoder(tok, max_source_len=512 - 48, max_target_len=48, test_extra=0)
    return system, model


def time_pair(system, model, n_src: int, target_len: int, rounds: int, warmup: int) -> dict[str, float]:  # noqa: ANN001
    import torch

    example = Example("bench", " ".join(["the"] * (n_src - 2)), "q")
    src = system.encoder.sources([example], test=True)[0]
    assert len(src) == n_src, (len(src), n_src)
    ids = torch.tensor([src])
    types, pos = torch.zeros_like(ids), torch.arange(n_src)[None, :]

    def forward() -> None:
        with torch.inference_mode():
            model.backbone(ids, types, pos)

    def nar() -> None:
        system.decode_one(example, forced_length=target_len)

    for _ in range(warmup):
        forward()
        nar()
    t_fwd, t_nar = [], []
    for _ in range(rounds):
        for fn, sink in ((forward, t_fwd), (nar, t_nar)):
            t0 = time.perf_counter_ns()
            fn()
            sink.append((time.perf_counter_ns() - t0) / 1e6)
    fwd, dec = statistics.median(t_fwd), statistics.median(t_nar)
    return {"source_len": n_src, "forward_ms": fwd, "nar_ms": dec, "ratio": dec / fwd}


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
    print(f"{'source':>6} {'forward ms':>11} {'NAR ms':>9} {'ratio':>6}")
    ok = True
    for n in SOURCE_LENGTHS:
        r = time_pair(system, model, n, args.target_len, args.rounds, args.warmup)
        flag = "" if r["ratio"] <= LIMIT else f"  > {LIMIT} FAIL"
        ok &= r["ratio"] <= LIMIT
        print(f"{n:>6} {r['forward_ms']:>11.2f} {r['nar_ms']:>9.2f} {r['ratio']:>6.2f}{flag}")
    print("PASS" if ok else f"FAIL: NAR decode must cost at most {LIMIT}x one source forward")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
