"""Config -> the exact fairseq command-line arguments (pure functions; fairseq is not imported).

Kept separate from the runner so golden-string tests can pin every recipe flag without fairseq
installed, and so a run record can show the literal command that trained its model.
"""

from __future__ import annotations

from argparse import Namespace

from systems.fairseq_nat.presets import FairseqConfig


def _num(x: float | int) -> str:
    """Numbers as the recipes write them: ints plain, floats by ``repr`` (``0.0005``, ``1e-07``)."""
    if isinstance(x, bool):
        raise TypeError("boolean is not a number flag")
    return str(x) if isinstance(x, int) else repr(float(x))


def recipe_args(cfg: FairseqConfig) -> list[str]:
    """The training recipe as the paper scripts pass it (same flags, same order), without paths."""
    return _ar_recipe(cfg) if cfg.is_ar else _nat_recipe(cfg)


def _nat_recipe(cfg: FairseqConfig) -> list[str]:
    """fairseq ``examples/nonautoregressive_translation/scripts.md`` order."""
    a = [
        "--ddp-backend=legacy_ddp",
        "--task",
        "translation_lev",
        "--criterion",
        "nat_loss",
        "--arch",
        cfg.arch,
        "--noise",
        str(cfg.noise),
        "--share-all-embeddings",
        "--optimizer",
        "adam",
        "--adam-betas",
        cfg.adam_betas,
    ]
    if cfg.clip_norm:
        a += ["--clip-norm", _num(cfg.clip_norm)]
    a += ["--lr", _num(cfg.lr), "--lr-scheduler", "inverse_sqrt"]
    if cfg.stop_min_lr is not None:
        a += ["--stop-min-lr", _num(cfg.stop_min_lr)]
    a += [
        "--warmup-updates",
        _num(cfg.warmup_updates),
        "--warmup-init-lr",
        _num(cfg.warmup_init_lr),
        "--label-smoothing",
        _num(cfg.label_smoothing),
        "--dropout",
        _num(cfg.dropout),
        "--weight-decay",
        _num(cfg.weight_decay),
        "--decoder-learned-pos",
        "--encoder-learned-pos",
        *cfg.arch_flags,
        "--apply-bert-init",
        "--log-format",
        "simple",
        "--log-interval",
        _num(cfg.log_interval),
        "--fixed-validation-seed",
        "7",
    ]
    a += _batching(cfg)
    if cfg.save_interval_updates:
        a += ["--save-interval-updates", _num(cfg.save_interval_updates)]
    if cfg.max_update is not None:
        a += ["--max-update", _num(cfg.max_update)]
    if cfg.max_epoch is not None:
        a += ["--max-epoch", _num(cfg.max_epoch)]
    a += _positions(cfg)
    a += ["--seed", _num(cfg.seed)]
    if cfg.fp16:
        a += ["--fp16"]
    return a


def _ar_recipe(cfg: FairseqConfig) -> list[str]:
    """GLGE ``train_transformer.sh`` order (its ``--max-sentences`` is ``--batch-size`` in fairseq 0.12)."""
    a = ["--fp16"] if cfg.fp16 else []
    a += ["--task", "translation", "--arch", cfg.arch, "--optimizer", "adam", "--adam-betas", cfg.adam_betas]
    if cfg.clip_norm:
        a += ["--clip-norm", _num(cfg.clip_norm)]
    a += ["--lr", _num(cfg.lr), "--lr-scheduler", "inverse_sqrt"]
    if cfg.stop_min_lr is not None:
        a += ["--stop-min-lr", _num(cfg.stop_min_lr)]
    a += [
        "--warmup-init-lr",
        _num(cfg.warmup_init_lr),
        "--warmup-updates",
        _num(cfg.warmup_updates),
        "--dropout",
        _num(cfg.dropout),
    ]
    if cfg.attention_dropout is not None:
        a += ["--attention-dropout", _num(cfg.attention_dropout)]
    if cfg.activation_dropout is not None:
        a += ["--activation-dropout", _num(cfg.activation_dropout)]
    a += [
        "--weight-decay",
        _num(cfg.weight_decay),
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        _num(cfg.label_smoothing),
    ]
    a += _batching(cfg)
    if cfg.truncate_source:
        a += ["--truncate-source"]
    if cfg.max_epoch is not None:
        a += ["--max-epoch", _num(cfg.max_epoch)]
    if cfg.max_update is not None:
        a += ["--max-update", _num(cfg.max_update)]
    a += _positions(cfg)
    a += ["--seed", _num(cfg.seed), "--log-interval", _num(cfg.log_interval)]
    if cfg.layerdrop:
        a += ["--encoder-layerdrop", _num(cfg.layerdrop), "--decoder-layerdrop", _num(cfg.layerdrop)]
    if cfg.fp16:
        a += ["--memory-efficient-fp16"]
    if cfg.save_interval_updates:
        a += ["--save-interval-updates", _num(cfg.save_interval_updates)]
    return a


def _batching(cfg: FairseqConfig) -> list[str]:
    a: list[str] = []
    if cfg.update_freq != 1:
        a += ["--update-freq", _num(cfg.update_freq)]
    if cfg.batch_size is not None:
        a += ["--batch-size", _num(cfg.batch_size)]
    if cfg.max_tokens is not None:
        a += ["--max-tokens", _num(cfg.max_tokens)]
    return a


def _positions(cfg: FairseqConfig) -> list[str]:
    a: list[str] = []
    if cfg.max_source_positions is not None:
        a += ["--max-source-positions", _num(cfg.max_source_positions)]
    if cfg.max_target_positions is not None:
        a += ["--max-target-positions", _num(cfg.max_target_positions)]
    return a


def size_args(cfg: FairseqConfig) -> list[str]:
    """Model-size overrides of the budget (empty for ``paper``: the arch's own sizes)."""
    s = cfg.size
    if not s:
        return []
    out: list[str] = []
    for side in ("encoder", "decoder"):
        out += [
            f"--{side}-layers",
            str(s["layers"]),
            f"--{side}-embed-dim",
            str(s["embed_dim"]),
            f"--{side}-ffn-embed-dim",
            str(s["ffn_dim"]),
            f"--{side}-attention-heads",
            str(s["heads"]),
        ]
    return out


def runtime_args(cfg: FairseqConfig, save_dir: str, cpu: bool) -> list[str]:
    """Plumbing that does not change the model: where checkpoints go, which ones are kept, device."""
    a = [
        "--save-dir",
        save_dir,
        "--source-lang",
        "src",
        "--target-lang",
        "tgt",
        "--no-epoch-checkpoints",
        "--keep-interval-updates",
        str(cfg.keep_interval_updates),
        "--num-workers",
        "0",
        "--skip-invalid-size-inputs-valid-test",
        "--no-progress-bar",
    ]
    if cfg.is_ar:  # the NAT scripts already ask for it; the log is parsed for checkpoint events
        a += ["--log-format", "simple"]
    if not cfg.validate:
        a += ["--disable-validation"]
    # the harness's device: --cpu, or the one GPU the child sees (no spreading over every visible GPU)
    a += ["--cpu"] if cpu else ["--distributed-world-size", "1"]
    return a


def train_command(cfg: FairseqConfig, data_bin: str, save_dir: str, cpu: bool) -> list[str]:
    """Everything after ``fairseq-train``."""
    return [data_bin, *recipe_args(cfg), *size_args(cfg), *runtime_args(cfg, save_dir, cpu)]


def preprocess_command(
    trainpref: str, validpref: str, destdir: str, srcdict: str | None, workers: int = 1
) -> list[str]:
    """Everything after ``fairseq-preprocess``: one shared dictionary for source and target."""
    a = [
        "--source-lang",
        "src",
        "--target-lang",
        "tgt",
        "--trainpref",
        trainpref,
        "--validpref",
        validpref,
        "--destdir",
        destdir,
        "--joined-dictionary",
        "--workers",
        str(workers),
    ]
    if srcdict is not None:
        a += ["--srcdict", srcdict]
    return a


def generate_args(cfg: FairseqConfig) -> list[str]:
    """The decoding flags as ``fairseq-generate`` would take them (recorded; decoding runs in-process)."""
    if cfg.is_ar:
        return [
            "--beam",
            str(cfg.beam),
            "--lenpen",
            _num(cfg.lenpen),
            "--no-repeat-ngram-size",
            str(cfg.no_repeat_ngram_size),
            "--max-len-a",
            _num(cfg.max_len_a),
            "--max-len-b",
            str(cfg.max_len_b),
        ]
    a = [
        "--iter-decode-max-iter",
        str(cfg.max_iter),
        "--iter-decode-eos-penalty",
        _num(cfg.eos_penalty),
        "--beam",
        "1",
    ]
    if cfg.length_beam != 1:
        a += ["--iter-decode-with-beam", str(cfg.length_beam)]
    if cfg.force_max_iter:
        a += ["--iter-decode-force-max-iter"]
    return a


def generator_namespace(cfg: FairseqConfig) -> Namespace:
    """The same decoding settings as the object ``task.build_generator`` reads (``getattr`` on names)."""
    if cfg.is_ar:
        return Namespace(
            beam=cfg.beam,
            lenpen=cfg.lenpen,
            no_repeat_ngram_size=cfg.no_repeat_ngram_size,
            max_len_a=cfg.max_len_a,
            max_len_b=cfg.max_len_b,
            min_len=1,
        )
    return Namespace(
        iter_decode_max_iter=cfg.max_iter,
        iter_decode_eos_penalty=cfg.eos_penalty,
        iter_decode_with_beam=cfg.length_beam,
        iter_decode_force_max_iter=cfg.force_max_iter,
        iter_decode_with_external_reranker=False,
        retain_iter_history=False,
        beam=1,
    )


def decoder_passes(cfg: FairseqConfig) -> int | str:
    """Decoder passes per output for the record: 1 (NAT), N (forced), 'adaptive (<= N)', 'n' (AR)."""
    if cfg.is_ar:
        return "n"
    if cfg.max_iter == 0:
        return 1
    if cfg.force_max_iter:
        return cfg.max_iter + 1
    return f"adaptive (<= {cfg.max_iter + 1})"
