"""Training step time per family: eager fp32 vs the ``cpu`` preset's measured speed policy (run by ``make bench``).

For each family at its ``cpu`` preset shapes (real tokenizer, real MiniLM-L6 backbone, real training data), the
system's own ``fit`` runs ``--steps`` updates under each of these settings, all in one process and *interleaved*
(:mod:`interleaved_fits`: one update of each per round, in an order shuffled per round, so a busy minute on a
shared machine slows all of them alike):

- **eager fp32**: ``precision=fp32 compile=False bucket_pool=0 pad_multiple=1`` (how every recorded
  ``cpu`` model was trained before the policy existed);
- **policy**: the preset as it is: ``precision=auto`` resolved by the training speed probe
  (systems.training.speed_probe: eager/compiled x fp32/bf16 timed paired on this machine, cached per machine and
  shape class; a candidate other than eager fp32 only where it wins clearly), length buckets, padding to 8;
- **candidates** (``--candidates all``, the default): each candidate the probe may choose on this machine (bf16
  ones only where native), set explicitly at the preset's buckets, so the last line can say how the policy's
  choice did against the fastest of them.

A setting's step time is its mean seconds per update after ``--warm`` updates (compilation, the probe and the
first batches excluded; the last update, which saves the final checkpoint, too); its speed-up over eager fp32 is
the paired ratio of means over the same rounds with a 95 % bootstrap CI. ERNIE-GEN's head runs on scored rows
only in every setting (a model change, not a switch); its saving is printed on its own line.

The last two lines: ``policy vs eager fp32: X.XX× (min over families)``, and ``policy vs best candidate: Y.YY×
(min over families)`` (1.00×: the policy trained with the fastest candidate). The script exits 1 when a family
trains slower under the policy than in eager fp32 beyond the noise (its whole CI below 1: two fits of one setting
differ by a few per cent on a shared machine, so a point below 1 with the CI across it is not a loss).

``--device cuda`` (or ``cuda:N``) measures something else, on a GPU: the model FLOPs utilisation of a
paper-shape step (:mod:`training_mfu`: BERT-base NAR encoder, batch 32, 512 wordpieces, bf16, eager and
compiled; target ≥ 35 % on an H100/H200). ``--device cpu --small`` runs that path on a tiny shape.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the policy must not train slower than eager fp32 (the issue #59 regression: 0.56-0.73x on an Intel VM)
TARGET = 1.0
#: family -> (system, task): one representative system per trainer user
FAMILIES = {
    "UniLM": ("unilm", "squad_qg"),
    "CopyBERT": ("copybert_selfcopy", "squad_qg"),
    "ERNIE-GEN": ("erniegen_base", "squad_qg"),
    "NAR": ("encoder_minilm_l6", "quora"),
}
BASELINE = {"precision": "fp32", "compile": False, "bucket_pool": 0, "pad_multiple": 1}


def task_info(task: str, n_train: int):
    from bench.api.types import TaskInfo
    from bench.data import TASKS, load_split

    t = TASKS.get(task)
    train = load_split(task, "train").examples[: max(n_train * 4, 2000)]
    dev_name = "dev" if "dev" in t.splits else "validation"
    dev = load_split(task, dev_name).examples[:200]
    return TaskInfo(task, train, dev, t.max_source_len, t.max_target_len)


def fit_setting(family: str, steps: int, n_train: int, extra: dict[str, object], info: Any) -> dict[str, Any]:
    """One ``fit`` of ``family``'s cpu preset with ``extra`` overrides; returns what its record would say it ran."""
    from systems import SYSTEMS

    overrides = {"steps": steps, "train_examples": n_train, "save_every": 0, **extra}
    if family == "CopyBERT":
        overrides.update(eval_every=0, dev_examples=4)
    if family == "UniLM":
        overrides["progress"] = False
    system = SYSTEMS.get(FAMILIES[family][0])("cpu", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        system.fit(info, Path(tmp))
    return dict(system.describe().config.get("train") or {})


def label(train: dict[str, Any]) -> str:
    """The candidate a fit trained with, from its record's ``train`` block."""
    return str(train.get("precision", "?")) + ("+compile" if train.get("compiled") else "")


def time_family(family: str, steps: int, warm: int, n_train: int, candidates: bool) -> dict[str, Any]:
    """Eager fp32, the policy and (``candidates``) each candidate the policy may choose here, interleaved."""
    from interleaved_fits import Fit, run_interleaved, timed

    from bench.api.precision import native_bf16
    from bench.api.speed_policy import allowed, setting
    from systems import SYSTEMS

    preset = {k: getattr(SYSTEMS.get(FAMILIES[family][0])("cpu", {}).cfg, k) for k in BASELINE}
    info = task_info(FAMILIES[family][1], n_train)
    settings: dict[str, dict[str, object]] = {"eager fp32": BASELINE, "policy": preset}
    if candidates:
        for name in allowed(compile=bool(preset["compile"]), native_bf16=native_bf16()):
            precision, comp = setting(name)
            settings[name] = {**preset, "precision": precision, "compile": comp}
    fits = [Fit(name, lambda extra=extra: fit_setting(family, steps, n_train, extra, info))
            for name, extra in settings.items()]
    run_interleaved(fits)
    return {"times": {f.name: timed(f, warm) for f in fits}, "train": {f.name: f.result for f in fits}}


def erniegen_head_saving(rounds: int = 5) -> tuple[float, float]:
    """Forward+backward of one cpu-size ERNIE-GEN batch with the head on every query row vs scored rows."""
    import random

    import torch

    from systems import SYSTEMS
    from systems.erniegen.data import collate, scored

    system = SYSTEMS.get("erniegen_base")("cpu", {})
    model, tok = system._build()
    enc = system._encoder(tok, model.backbone.config.max_position)
    pairs = enc.pairs(task_info("squad_qg", 64).train[:16])
    batch = collate(pairs, random.Random(0), tok.pad_id, 0.7, model.backbone.config.vocab_size)
    mask, labels = scored(batch["labels"], batch["tgt_len"])
    args = (batch["src"], batch["src_types"], batch["src_len"], batch["tgt_in"], batch["tgt_len"])
    model.train()

    def once(rows: bool) -> float:
        t0 = time.perf_counter()
        logits = model(*args, rows=mask) if rows else model(*args)[mask]
        torch.nn.functional.cross_entropy(logits, labels[mask]).backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - t0

    once(False), once(True)
    full = sorted(once(False) for _ in range(rounds))[rounds // 2]
    rows = sorted(once(True) for _ in range(rounds))[rounds // 2]
    return full, rows


def machine_line() -> str:
    """The CPU, whether it has the bf16 flags (the old rule's input), the threads."""
    import torch

    from bench.api.precision import cpu_flags
    from bench.api.speed_cache import cpu_model

    flags = cpu_flags()
    bf16 = [f for f in ("amx_bf16", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512f") if f in flags]
    return (f"{cpu_model()}; flags {', '.join(bf16) or 'none of the avx512/amx ones'}"
            f"{'' if {'amx_bf16', 'avx512_bf16'} & flags else ' (no amx_bf16, no avx512_bf16: bf16 not native)'}; "
            f"threads {torch.get_num_threads()}, torch {torch.__version__}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30, help="updates per setting (timed after --warm)")
    ap.add_argument("--warm", type=int, default=10, help="updates excluded from timing (compilation, the probe)")
    ap.add_argument("--train", type=int, default=2048, help="training examples per run")
    ap.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--candidates", choices=("all", "none"), default="all",
                    help="all: also train each candidate the policy may choose (for the policy-vs-best line)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: torch's; 1 = how runs are queued, one per core)")
    ap.add_argument("--device", default=None, help="cuda | cuda:N: the GPU training figure (MFU) instead")
    ap.add_argument("--small", action="store_true", help="with --device: a tiny shape (a dry run of the path)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.device is not None:
        from training_mfu import run

        from bench.env.device import resolve_device

        return run(resolve_device(args.device), steps=12 if args.small else 30, warm=4 if args.small else 10,
                   small=args.small)
    if args.steps < args.warm + 3:
        ap.error("--steps must exceed --warm by 3 or more (the last update saves a checkpoint and is not timed)")

    import torch

    from bench.api.speed_policy import speedup

    if args.threads:
        torch.set_num_threads(args.threads)
    print(machine_line())
    ratios, vs_best, slower = [], [], []
    for family in args.families:
        r = time_family(family, args.steps, args.warm, args.train, args.candidates == "all")
        times, trains = r["times"], r["train"]
        base, pol = times["eager fp32"], times["policy"]
        up = speedup(base, pol)
        ratios.append(up.point)
        if up.high < TARGET:  # slower beyond the noise: the whole CI below 1
            slower.append(f"{family} {up}")
        ms = {name: 1000 * sum(t) / len(t) for name, t in times.items()}
        best = min((n for n in times if n != "eager fp32"), key=lambda n: ms[n])
        vs_best.append(ms[best] / ms["policy"])
        policy = trains["policy"].get("policy") or {}
        others = " ".join(f"{n} {ms[n]:.0f} ms" for n in times if n not in ("eager fp32", "policy"))
        print(f"{family:10} {FAMILIES[family][0]:18} eager fp32 (no buckets) {ms['eager fp32']:6.0f} ms | policy "
              f"{label(trains['policy'])} {ms['policy']:6.0f} ms, {up} | {others or '-'} | best {best} | "
              f"{len(pol)} paired rounds")
        print(f"{'':10} policy ({policy.get('source', '?')}): {policy.get('why', '?')}")
        probe = policy.get("probe") or {}
        if probe:
            print(f"{'':10} probe: {probe.get('summary', '?')} (warm-up includes compilation; paid once per "
                  "machine and shape class)")
        sys.stdout.flush()
    if "ERNIE-GEN" in args.families:
        full, rows = erniegen_head_saving()
        print(
            f"ERNIE-GEN head on scored rows only: {full * 1000:.0f} -> {rows * 1000:.0f} ms fwd+bwd "
            f"({full / rows:.2f}×)"
        )
    worst = min(ratios)
    verdict = f"slower: {', '.join(slower)}" if slower else "no family slower (no CI below 1)"
    print(f"policy vs eager fp32: {worst:.2f}× (min over families; target ≥ {TARGET:.2f}×: {verdict})")
    print(f"policy vs best candidate: {min(vs_best):.2f}× (min over families; 1.00×: the policy trained as fast as "
          f"the fastest {'candidate' if args.candidates == 'all' else 'setting (--candidates none: only itself)'})")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
