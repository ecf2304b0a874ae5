"""Golden strings: each fairseq preset -> the exact fairseq arguments (no fairseq needed)."""

from __future__ import annotations

import shlex

import pytest

from systems.fairseq_nat.flags import (
    decoder_passes,
    generate_args,
    generator_namespace,
    preprocess_command,
    recipe_args,
    runtime_args,
    size_args,
    train_command,
)
from systems.fairseq_nat.presets import VARIANTS, apply_overrides, preset

# fairseq examples/nonautoregressive_translation/scripts.md, transcribed; data path and --save-dir removed.
_NAT_HEAD = """--ddp-backend=legacy_ddp --task translation_lev --criterion nat_loss --arch {arch}
--noise {noise} --share-all-embeddings --optimizer adam --adam-betas '(0.9,0.98)' --lr 0.0005
--lr-scheduler inverse_sqrt --stop-min-lr '1e-09' --warmup-updates 10000 --warmup-init-lr '1e-07'
--label-smoothing 0.1 --dropout 0.3 --weight-decay 0.01 --decoder-learned-pos --encoder-learned-pos
{extra} --apply-bert-init --log-format 'simple' --log-interval 100 --fixed-validation-seed 7 --max-tokens 8000
--save-interval-updates 10000 --max-update 300000"""
SCRIPTS_MD = {
    "fairseq_nat": _NAT_HEAD.format(
        arch="nonautoregressive_transformer",
        noise="full_mask",
        extra="--pred-length-offset --length-loss-factor 0.1",
    ),
    "fairseq_inat": _NAT_HEAD.format(
        arch="iterative_nonautoregressive_transformer",
        noise="full_mask",
        extra="--pred-length-offset --length-loss-factor 0.1 --train-step 4 --dae-ratio 0.5 "
        "--stochastic-approx",
    ),
    "fairseq_cmlm": _NAT_HEAD.format(arch="cmlm_transformer", noise="random_mask", extra=""),
    "fairseq_levt": _NAT_HEAD.format(arch="levenshtein_transformer", noise="random_delete", extra=""),
    "fairseq_inst": _NAT_HEAD.format(arch="insertion_transformer", noise="random_delete", extra=""),
}
# GLGE GLGE_baselines/script/train_transformer.sh with GPU_NUM=1 (UPDATE_FREQ = 32*16/8/1 = 64). Left out
# as runtime plumbing: --save-dir, --num-workers 4, --skip-invalid-size-inputs-valid-test (runtime_args),
# --find-unused-parameters/--ddp-backend (multi-GPU only), --keep-last-epochs 1 (we keep only last/best).
# --max-sentences is spelled --batch-size in fairseq 0.12 (same option).
GLGE_TRAIN = """--fp16 --task translation --arch transformer_vaswani_wmt_en_de_big --optimizer adam
--adam-betas '(0.9, 0.999)' --clip-norm 0.2 --lr 0.001 --lr-scheduler inverse_sqrt --warmup-init-lr 1e-07
--warmup-updates 4000 --dropout 0.1 --attention-dropout 0.1 --activation-dropout 0.1 --weight-decay 0.01
--criterion label_smoothed_cross_entropy --label-smoothing 0.1 --update-freq 64 --batch-size 8
--truncate-source --max-epoch 20 --max-source-positions 512 --max-target-positions 512 --seed 1
--log-interval 1 --encoder-layerdrop 0.2 --decoder-layerdrop 0.2 --memory-efficient-fp16"""


@pytest.mark.parametrize("system", sorted(SCRIPTS_MD))
def test_paper_nat_recipes_match_fairseq_scripts(system: str) -> None:
    assert recipe_args(preset(system, "paper")) == shlex.split(SCRIPTS_MD[system]) + ["--seed", "1"]
    assert size_args(preset(system, "paper")) == []  # arch defaults: 6+6 layers, 512/2048/8


def test_paper_transformer_matches_glge_script() -> None:
    assert recipe_args(preset("fairseq_transformer", "paper")) == shlex.split(GLGE_TRAIN)


def test_generation_flags_per_system() -> None:
    gen = {s: " ".join(generate_args(preset(s, "paper"))) for s in VARIANTS}
    assert gen["fairseq_transformer"] == (
        "--beam 4 --lenpen 1.0 --no-repeat-ngram-size 3 --max-len-a 0.0 --max-len-b 200"
    )
    assert gen["fairseq_nat"] == "--iter-decode-max-iter 0 --iter-decode-eos-penalty 0.0 --beam 1"
    for s in ("fairseq_inat", "fairseq_cmlm", "fairseq_levt", "fairseq_inst"):
        assert gen[s] == "--iter-decode-max-iter 9 --iter-decode-eos-penalty 0.0 --beam 1", s


def test_ten_iterations_mapping_is_explicit() -> None:
    cmlm = preset("fairseq_cmlm", "paper")
    assert (cmlm.iterations, cmlm.iteration_convention, cmlm.max_iter) == (10, "passes", 9)
    literal = apply_overrides(cmlm, {"iteration_convention": "flag"})
    assert literal.max_iter == 10 and "--iter-decode-max-iter 10" in " ".join(generate_args(literal))
    forced = apply_overrides(cmlm, {"force_max_iter": True, "iterations": 4})
    assert generate_args(forced)[-1] == "--iter-decode-force-max-iter" and forced.max_iter == 3
    assert decoder_passes(forced) == 4
    assert decoder_passes(cmlm) == "adaptive (<= 10)"
    # NAT is one pass whatever the iteration setting
    nat = apply_overrides(preset("fairseq_nat", "paper"), {"iterations": 10, "iteration_convention": "flag"})
    assert nat.max_iter == 0 and decoder_passes(nat) == 1
    with pytest.raises(ValueError, match="iteration_convention"):
        _ = apply_overrides(cmlm, {"iteration_convention": "steps"}).max_iter


def test_generator_namespace_carries_the_same_settings() -> None:
    ns = generator_namespace(apply_overrides(preset("fairseq_cmlm", "cpu"), {"force_max_iter": True}))
    assert (ns.iter_decode_max_iter, ns.iter_decode_force_max_iter, ns.iter_decode_eos_penalty) == (
        9,
        True,
        0.0,
    )
    ar = generator_namespace(preset("fairseq_transformer", "cpu"))
    assert (ar.beam, ar.lenpen, ar.no_repeat_ngram_size) == (4, 1.0, 3)


def test_smoke_keeps_the_recipe_and_shrinks_the_model() -> None:
    cfg = preset("fairseq_cmlm", "smoke")
    args = recipe_args(cfg)
    for flag in (
        "--criterion",
        "nat_loss",
        "--noise",
        "random_mask",
        "--share-all-embeddings",
        "--apply-bert-init",
    ):
        assert flag in args
    assert " ".join(size_args(cfg)) == (
        "--encoder-layers 2 --encoder-embed-dim 32 --encoder-ffn-embed-dim 64 --encoder-attention-heads 2 "
        "--decoder-layers 2 --decoder-embed-dim 32 --decoder-ffn-embed-dim 64 --decoder-attention-heads 2"
    )
    assert args[args.index("--max-update") + 1] == "20" and "--max-tokens" not in args
    rt = runtime_args(cfg, "/w/ck", cpu=True)
    assert rt[:2] == ["--save-dir", "/w/ck"] and "--cpu" in rt and "--disable-validation" in rt
    full = train_command(cfg, "/data/bin", "/w/ck", cpu=True)
    assert full[0] == "/data/bin" and full.count("--arch") == 1
    assert "--fp16" not in args


def test_preprocess_command_shares_one_dictionary() -> None:
    assert preprocess_command("/r/train", "/r/valid", "/b", "/d.txt") == shlex.split(
        "--source-lang src --target-lang tgt --trainpref /r/train --validpref /r/valid --destdir /b "
        "--joined-dictionary --workers 1 --srcdict /d.txt"
    )
    assert "--srcdict" not in preprocess_command("/r/train", "/r/valid", "/b", None)


def test_presets_and_overrides_fail_clearly() -> None:
    with pytest.raises(ValueError, match="Unknown fairseq system"):
        preset("fairseq_bang", "paper")
    with pytest.raises(ValueError, match="Unknown budget"):
        preset("fairseq_nat", "huge")
    with pytest.raises(ValueError, match="max_updates"):
        apply_overrides(preset("fairseq_nat", "smoke"), {"max_updates": 5})


def test_factories_describe_without_fairseq() -> None:
    from systems.fairseq_nat import system as fs

    info = fs.make("fairseq_cmlm", "cpu", {"seed": 3}).describe()
    assert info.family == "semi-NAR" and info.iterations == "adaptive (<= 10)"
    assert "--iter-decode-max-iter 9" in " ".join(info.config["fairseq_generate_args"])
    assert "passes" in info.config["iterations_mapping"]
    assert info.config["fairseq_train_args"][info.config["fairseq_train_args"].index("--seed") + 1] == "3"
    assert fs.make("fairseq_nat", "smoke").describe().iterations == 1
    assert fs.make("fairseq_transformer", "paper").describe().family == "AR"


def test_cpu_decoding_stops_near_the_trained_target_length() -> None:
    """The recipe's --max-len-b 200 made a weak cpu model babble to 200 tokens on Quora."""
    cfg = preset("fairseq_transformer", "cpu")
    assert cfg.max_len_b <= cfg.max_target_len + 8 and preset("fairseq_transformer", "paper").max_len_b == 200


@pytest.mark.parametrize("system", sorted(VARIANTS))
def test_decode_only_overrides_keep_the_training_key(system: str) -> None:
    """`bench run --set eos_penalty=1` (or iterations, beam, ...) decodes the plain run's model: the generator
    flags describe() derives from those settings must not enter the training key, or every decoding
    variant would key a new workdir and train the same model again."""
    from bench.runs import training_key
    from systems import build

    plain = training_key(build(system, "cpu", {"seed": 42}), "quora")
    decoding = {"eos_penalty": 1.5, "beam": 3, "lenpen": 0.7, "max_len_b": 12, "no_repeat_ngram_size": 2,
                "decode_batch_size": 8}
    if system != "fairseq_transformer":
        decoding.update(iterations=4, force_max_iter=True)
    varied = build(system, "cpu", {"seed": 42, **decoding})
    assert set(decoding) <= set(varied.decode_only_overrides)
    assert training_key(varied, "quora") == plain
    assert training_key(build(system, "cpu", {"seed": 42, "lr": 5e-4}), "quora") != plain  # training settings do
