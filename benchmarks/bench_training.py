"""Training step time per family: eager fp32 vs the ``cpu`` preset's measured speed policy (run by ``make bench``).

For each family at its ``cpu`` preset shapes (real tokenizer, real MiniLM-L6 backbone, real
training data), the system's own ``fit`` runs ``--steps`` updates in one process:

- **eager fp32**: ``precision=fp32 compile=False bucket_pool=0 pad_multiple=1`` (how every recorded
  ``cpu`` model was trained before the policy existed);
- **policy**: the preset as it is: ``precision=auto`` resolved by the training speed probe
  (systems.training.speed_probe: eager/compiled x fp32/bf16 timed paired on this machine, cached per machine and
  shape class; a candidate other than eager fp32 only where it wins clearly), length buckets, padding to 8;
- **candidates** (``--candidates all``, the default): each other candidate the probe timed, set explicitly at the
  preset's buckets, so the last line can say how the policy's choice did against the fastest of them.

Step time is the median of the per-update times in the trainer's ``step_times.json`` after ``--warm`` updates
(compilation and the first batches excluded; a median, because this runs on shared machines where one slow
update is a neighbour's, not the setting's); peak RSS is printed too. ERNIE-GEN's head runs on scored rows only
in every column (a model change, not a switch); its saving is printed on its own line.

The last two lines: ``policy vs eager fp32: X.XX× (min over families)``, and ``policy vs best candidate: Y.YY×
(min over families)`` (1.00×: the policy trained with the fastest candidate). The script exits 1 when a family
trains slower under the policy than in eager fp32.

``--device cuda`` (or ``cuda:N``) measures something else, on a GPU: the model FLOPs utilisation of a
paper-shape step (:mod:`training_mfu`: BERT-base NAR encoder, batch 32, 512 wordpieces, bf16, eager and
compiled; target ≥ 35 % on an H100/H200). ``--device cpu --small`` runs that path on a tiny shape.
"""

from __future__ import annotations

import argparse
import json
import resource
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


def step_seconds(workdir: Path, warm: int) -> tuple[float, int]:
    """Median seconds per update after step ``warm``, from the trainer's log (and how many updates)."""
    rows = [(s, t) for s, t in json.loads((workdir / "step_times.json").read_text()) if s >= warm]
    per = sorted((t1 - t0) / (s1 - s0) for (s0, t0), (s1, t1) in zip(rows, rows[1:], strict=False))
    if not per:
        raise SystemExit(f"--steps must exceed --warm by 2 or more (got {len(rows)} logged updates after warm-up)")
    return per[len(per) // 2], len(per)


def fit_once(family: str, steps: int, warm: int, n_train: int, extra: dict[str, object]) -> dict[str, Any]:
    """One ``fit`` of ``family``'s cpu preset with ``extra`` overrides: step time, whole fit, RSS, what trained."""
    from systems import SYSTEMS

    system_name, task = FAMILIES[family]
    overrides = {"steps": steps, "train_examples": n_train, "save_every": 0, **extra}
    if family == "CopyBERT":
        overrides.update(eval_every=0, dev_examples=4)
    if family == "UniLM":
        overrides["progress"] = False
    system = SYSTEMS.get(system_name)("cpu", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        system.fit(task_info(task, n_train), Path(tmp))
        total = time.perf_counter() - t0
        step, timed = step_seconds(Path(tmp), warm)
    train = system.describe().config.get("train") or {}
    return {"step_s": step, "timed": timed, "total_s": total, "train": train,
            "rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def label(train: dict[str, Any]) -> str:
    """The candidate a fit trained with, from its record's ``train`` block."""
    return str(train.get("precision", "?")) + ("+compile" if train.get("compiled") else "")


def time_family(family: str, steps: int, warm: int, n_train: int, candidates: bool) -> dict[str, Any]:
    """Eager fp32, the policy, and (``candidates``) every other candidate the policy's probe timed."""
    from systems import SYSTEMS

    preset = {k: getattr(SYSTEMS.get(FAMILIES[family][0])("cpu", {}).cfg, k) for k in BASELINE}
    out = {"baseline": fit_once(family, steps, warm, n_train, BASELINE), "preset": preset}
    out["policy"] = fit_once(family, steps, warm, n_train, preset)
    policy = out["policy"]["train"].get("policy") or {}
    chosen = label(out["policy"]["train"])
    timed = ((policy.get("probe") or {}).get("figures") or {}).get("rounds") or {}
    out["candidates"] = {chosen: out["policy"]}
    if candidates:
        for name in (c for c in timed if c != chosen):
            precision, _, comp = name.partition("+")
            out["candidates"][name] = fit_once(family, steps, warm, n_train,
                                               {**preset, "precision": precision, "compile": bool(comp)})
    return out


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
    ap.add_argument("--steps", type=int, default=30, help="updates per run (timed after --warm)")
    ap.add_argument("--warm", type=int, default=10, help="updates excluded from timing (compilation)")
    ap.add_argument("--train", type=int, default=2048, help="training examples per run")
    ap.add_argument("--families", nargs="*", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--candidates", choices=("all", "none"), default="all",
                    help="all: also train each other candidate the probe timed (for the policy-vs-best line)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: torch's; 1 = how runs are queued, one per core)")
    ap.add_argument("--device", default=None, help="cuda | cuda:N: the GPU training figure (MFU) instead")
    ap.add_argument("--small", action="store_true", help="with --device: a tiny shape (a dry run of the path)")
    args = ap.parse_args()
    if args.device is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from training_mfu import run

        from bench.env.device import resolve_device

        return run(resolve_device(args.device), steps=12 if args.small else 30, warm=4 if args.small else 10,
                   small=args.small)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(machine_line())
    ratios, vs_best = [], []
    for family in args.families:
        r = time_family(family, args.steps, args.warm, args.train, args.candidates == "all")
        base, pol = r["baseline"], r["policy"]
        policy = pol["train"].get("policy") or {}
        ratio = base["step_s"] / pol["step_s"]
        ratios.append(ratio)
        best = min(r["candidates"], key=lambda c: r["candidates"][c]["step_s"])
        vs_best.append(r["candidates"][best]["step_s"] / pol["step_s"])
        probe = policy.get("probe") or {}
        print(f"{family:10} {FAMILIES[family][0]:18} eager fp32 (no buckets) {base['step_s'] * 1000:6.0f} ms | policy "
              f"{label(pol['train']):13} {pol['step_s'] * 1000:6.0f} ms {ratio:5.2f}× | "
              + " ".join(f"{c} {v['step_s'] * 1000:.0f} ms" for c, v in r["candidates"].items())
              + f" | best {best} | {pol['timed']} timed updates, peak RSS {pol['rss_gib']:.2f} GiB, whole fit "
              f"{base['total_s']:.0f} s vs {pol['total_s']:.0f} s")
        print(f"{'':10} policy ({policy.get('source', '?')}): {policy.get('why', '?')}")
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
    print(f"policy vs eager fp32: {worst:.2f}× (min over families; target ≥ {TARGET:.2f}×: no family slower)")
    print(f"policy vs best candidate: {min(vs_best):.2f}× (min over families; 1.00×: the policy trained with the "
          f"fastest{' of the candidates it timed' if args.candidates == 'all' else ' (--candidates none: its own)'})")
    return 0 if worst >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
