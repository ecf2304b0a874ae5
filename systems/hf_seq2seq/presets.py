"""Presets of the Hugging Face seq2seq adapter: one config dataclass, four named variants, override checks.

Light on purpose (no torch, no transformers): ``systems/__init__.py`` imports :data:`VARIANTS` to register
the names, and ``bench ls systems`` must not pay for a model library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bench.api.errors import UserError
from bench.api.system import check_budget
from systems.presets import (
    CPU_SPEED,
    MAX_SEED,
    BudgetSize,
    FamilyConfig,
    check_source_window,
    ranged,
    replace_fields,
    sized,
)

CITATIONS: dict[str, str] = {
    "bart": "Lewis et al. 2020, BART: Denoising Sequence-to-Sequence Pre-training for Natural Language Generation, "
    "Translation, and Comprehension (ACL)",
    "prophetnet": "Qi et al. 2020, ProphetNet: Predicting Future N-gram for Sequence-to-Sequence Pre-training "
    "(Findings of EMNLP)",
    "bert2bert": "Rothe, Narayan & Severyn 2020, Leveraging Pre-trained Checkpoints for Sequence Generation Tasks "
    "(TACL)",
}

#: registered system name -> recipe of :func:`budget_presets`: one dict registers (systems/__init__.py) and builds them
VARIANTS: dict[str, str] = {
    "hf_seq2seq": "generic",
    "bart_large": "bart",
    "prophetnet_large": "prophetnet",
    "bert2bert_minilm_l6": "bert2bert",
}

#: what a generic preset without a model says (the example is the paper row the adapter was written for)
MODEL_HINT = (
    "--set model=facebook/bart-large (a hub id in the local HF cache, a local directory, a $BENCH_CHECKPOINTS "
    "name, or bert2bert:<encoder> to warm-start both sides from a BERT-layout checkpoint)"
)


class PresetUnavailable(UserError, ValueError):
    """A budget a variant does not offer, or a generic preset without its model. It is a user error (the CLI
    prints the message, no traceback) that names what to run instead; a ValueError for callers that catch those."""


@dataclass(frozen=True)
class HFSeq2SeqConfig(FamilyConfig):
    """Everything one run needs; a budget preset fills it and ``--set`` may change any field.

    Lengths count tokenizer pieces including the model's special tokens. ``model`` is a hub id (local HF
    cache only), a directory, a ``$BENCH_CHECKPOINTS`` name, ``bert2bert:<encoder>`` (an EncoderDecoderModel
    warm-started on both sides from a BERT-layout checkpoint, Rothe et al. 2020), or ``tiny-bart`` /
    ``tiny-bert2bert`` (random 2-layer models over the offline MiniLM vocabulary, for smoke runs).
    """

    model: str = ""
    max_source_len: int = ranged(1024, ge=1)  # truncation keeps the head of the source (source_window="head")
    # head: the source's first pieces | answer: "answer [SEP]" + a paragraph window around the answer
    # (systems.source_windows) on question-generation tasks; other tasks have no answer and read the head
    source_window: str = "head"
    max_target_len: int = ranged(128, ge=1)  # training targets (longer references are cut, EOS kept)
    train_examples: int | None = ranged(None, ge=1)  # a seeded subset of the training split (None: all of it)
    steps: int = ranged(20_000, ge=1)
    batch_size: int = ranged(32, ge=1)  # examples per optimizer update, over processes and accumulation steps
    grad_accum: int = ranged(1, ge=1)
    lr: float = ranged(3e-5, gt=0)
    warmup: float = ranged(500, ge=0)  # < 1: a fraction of steps; else a number of updates
    schedule: str = "linear"  # systems.training.optim.Schedule
    optimizer: str = "adamw"
    weight_decay: float = ranged(0.01, ge=0)
    label_smoothing: float = ranged(0.1, ge=0, lt=1)  # fairseq label_smoothed_cross_entropy (systems.training.losses)
    max_grad_norm: float = ranged(1.0, ge=0)
    # speed policy (bench.api.precision; docs/budgets.md "Training speed")
    precision: str = "fp32"  # auto | fp32 | bf16 | fp16
    compile: bool = False  # torch.compile the training forward (decoding stays eager)
    bucket_pool: int = ranged(0, ge=0)  # > 1: length-bucketed training batches
    pad_multiple: int = ranged(1, ge=1)  # training batches padded to a multiple of this
    save_every: int = ranged(0, ge=0)  # 0: only the final checkpoint (and one dev-loss point)
    seed: int = ranged(42, ge=0, le=MAX_SEED)
    # decoding (model.generate); lengths count generated tokens, EOS included
    beam_size: int = ranged(1, ge=1)
    length_penalty: float = ranged(1.0)
    no_repeat_ngram: int = ranged(0, ge=0)
    min_len: int = ranged(0, ge=0)
    max_decode_len: int = ranged(48, ge=1)
    decode_batch_size: int = ranged(32, ge=1)
    progress: bool = True


#: smoke: a pipeline check on random tiny models (any machine, no download): 20 updates of 8
SMOKE_SIZE = BudgetSize(steps=20, batch_size=8, max_source_len=32, max_target_len=16, train_examples=256, lr=1e-3)
SMOKE = sized(
    HFSeq2SeqConfig(
        model="tiny-bart",
        warmup=0.1,
        max_grad_norm=1.0,
        max_decode_len=16,
        decode_batch_size=64,
        threads=1,
        progress=False,
    ),
    SMOKE_SIZE,
)

# cpu: BERT2BERT on the offline MiniLM-L6 (both sides warm-started, 6x384, uncased; cross-attention new):
# 2,000 updates x 16 over a fixed seeded subset of 32,000 training pairs at lr 2e-4 (a new cross-attention
# wants a higher rate than UniLM's shared stack), source <= 96 pieces with [CLS]/[SEP], target <= 32 with
# [SEP]; greedy decoding of <= 32 pieces. On squad_qg the source is "answer [SEP]" + a 94-piece paragraph
# window around the answer (UniLM's cpu layout at 96 pieces; the head of "answer [SEP] paragraph" holds the
# answer's sentence too rarely at this length); Quora has no answer and reads the head. Checked on Quora by one
# calibration point (results/calibration/bert2bert_minilm_l6--quora--cpu.json); not calibrated on SQuAD.
CPU_SIZE = BudgetSize(
    steps=2000, batch_size=16, max_source_len=96, max_target_len=32, train_examples=32_000, lr=2e-4,
    source_window="answer",
)
CPU = sized(
    HFSeq2SeqConfig(
        model="bert2bert:minilm-l6",
        warmup=0.1,
        schedule="linear",
        optimizer="adamw",
        weight_decay=0.01,
        label_smoothing=0.1,
        max_grad_norm=1.0,
        save_every=100,  # a checkpoint and a dev-loss point every 100 updates
        beam_size=1,
        length_penalty=1.0,
        max_decode_len=32,
        decode_batch_size=64,
        # docs/budgets.md "Training speed": precision and compile measured once per machine (the training speed
        # probe may compile the whole training forward: HF modules carry no COMPILE_UNIT marker; the adapter's loss
        # wrapper does), length buckets
        **CPU_SPEED,
    ),
    CPU_SIZE,
)

# paper: fairseq's BART fine-tuning recipe, examples/bart/README.summarization.md (the CNN-DM command):
#   --lr 3e-05 --total-num-update 20000 --warmup-updates 500 --lr-scheduler polynomial_decay (power 1, end 0 =
#   linear decay) --criterion label_smoothed_cross_entropy --label-smoothing 0.1 --weight-decay 0.01
#   --optimizer adam --adam-betas "(0.9, 0.999)" --adam-eps 1e-08 (fairseq's Adam decays weights decoupled, like
#   AdamW; here biases and LayerNorms are not decayed) --clip-norm 0.1 --fp16 --truncate-source (1,024 positions).
#   Batch: --max-tokens 2048 on 8 GPUs x --update-freq 4 = 65,536 tokens per update; with sources truncated to
#   1,024 that is ~64 examples (fewer tokens per example on short-source tasks: raise batch_size to keep the
#   token budget). The same README says "TOTAL_NUM_UPDATES=15000 UPDATE_FREQ=2 for Xsum" (32,768 tokens per
#   update): `--set steps=15000 --set batch_size=32` for that row.
# Generation: fairseq examples/bart/summarize.py XSUM_KWARGS = beam 6, lenpen 1.0, max_len_b 60, min_len 10,
#   no_repeat_ngram_size 3 (max_len_b/min_len count generated tokens, as max_decode_len/min_len do here).
#   GLGE's exact generation settings for its BART rows (e.g. question generation) were not available offline;
#   these XSum values are used for every task.
PAPER = HFSeq2SeqConfig(
    model="facebook/bart-large",
    max_source_len=1024,
    max_target_len=128,
    steps=20_000,
    batch_size=64,
    grad_accum=8,  # micro-batches of 8 sources of <= 1,024 tokens (one 80 GB GPU in fp16)
    lr=3e-5,
    warmup=500,
    schedule="linear",
    optimizer="adamw",
    weight_decay=0.01,
    label_smoothing=0.1,
    max_grad_norm=0.1,
    precision="fp16",
    save_every=2000,
    beam_size=6,
    length_penalty=1.0,
    no_repeat_ngram=3,
    min_len=10,
    max_decode_len=60,
    decode_batch_size=32,
)


# paper, ProphetNet rows (MIST Tables 1-3 quote GLGE): GLGE's baseline scripts in microsoft/ProphetNet,
# GLGE_baselines/script/train_prophetnet.sh and test_prophetnet.sh, the branch every task but CNN/DM, MSQG,
# CoQA and PersonaChat takes (SQuAD QG, XSum, Gigaword, MSNews):
#   --optimizer adam --adam-betas '(0.9, 0.999)' --clip-norm 0.1 --lr 0.0001 --lr-scheduler inverse_sqrt
#   --warmup-init-lr 1e-07 --warmup-updates 1000 --dropout 0.1 --attention-dropout 0.1 --weight-decay 0.01
#   --label-smoothing 0.1 --update-freq 8/GPUs --max-tokens 1300 --max-sentences 16 --max-epoch 10
#   --max-source-positions 512 --fp16; checkpoint_best; generation --beam 4 --lenpen 1.0
#   --no-repeat-ngram-size 3 --max-target-positions 140 --truncate-source.
# Stated differences: a batch here is a number of examples, not a token cap (1,300 tokens x 8 holds about 64
# SQuAD paragraphs, hence batch 64 = 8 micro-batches of 8); 10 epochs of SQuAD QG's 75,722 training questions
# at 64 per update is ~11,800 updates (`--set steps=N` for other tasks); the loss is label-smoothed NLL on the
# main stream only (HF's ProphetNetForConditionalGeneration; GLGE's ngram_language_loss also trains the future
# n-gram streams); the last checkpoint is decoded, not the best by dev loss.
PROPHETNET = HFSeq2SeqConfig(
    model="microsoft/prophetnet-large-uncased",
    max_source_len=512,
    max_target_len=140,
    steps=11_800,
    batch_size=64,
    grad_accum=8,
    lr=1e-4,
    warmup=1000,
    schedule="inverse_sqrt",
    optimizer="adamw",
    weight_decay=0.01,
    label_smoothing=0.1,
    max_grad_norm=0.1,
    precision="fp16",
    save_every=2000,
    beam_size=4,
    length_penalty=1.0,
    no_repeat_ngram=3,
    max_decode_len=140,
    decode_batch_size=40,
)


def budget_presets(recipe: str) -> dict[str, HFSeq2SeqConfig | str]:
    """The three budgets of a recipe; a string is the reason that budget is refused."""
    if recipe == "generic":  # the model comes from --set model=...; smoke needs none
        return {"smoke": SMOKE, "cpu": replace(CPU, model=""), "paper": replace(PAPER, model="")}
    if recipe == "bart":
        return {
            "smoke": SMOKE,
            "cpu": "BART-large (406M parameters) does not fit a 2-core CPU budget; run bert2bert_minilm_l6 at cpu "
            "(or hf_seq2seq --set model=<a smaller seq2seq model>), and bart_large at paper on a GPU",
            "paper": PAPER,
        }
    if recipe == "prophetnet":
        return {
            "smoke": SMOKE,
            "cpu": "ProphetNet-large (391M parameters) does not fit a 2-core CPU budget; run bert2bert_minilm_l6 at "
            "cpu, and prophetnet_large at paper on a GPU",
            "paper": PROPHETNET,
        }
    if recipe == "bert2bert":
        return {
            "smoke": replace(SMOKE, model="tiny-bert2bert"),
            "cpu": CPU,
            "paper": "bert2bert_minilm_l6 is not a paper row (it is the cpu stand-in for the AR seq2seq baselines); "
            "run bart_large at paper, or hf_seq2seq --budget paper --set model=bert2bert:<encoder checkpoint>",
        }
    raise ValueError(f"Unknown hf_seq2seq recipe '{recipe}'; known: generic, bart, prophetnet, bert2bert")


def make_config(variant: str, budget: str, overrides: Mapping[str, Any]) -> HFSeq2SeqConfig:
    """The preset of ``variant`` at ``budget`` with ``overrides`` (unknown keys, wrong types and numbers outside
    their field's range are errors naming the field); a refused budget or a missing model is a
    :class:`PresetUnavailable`."""
    if variant not in VARIANTS:
        raise ValueError(f"Unknown hf_seq2seq variant '{variant}'; known: {', '.join(VARIANTS)}")
    preset = budget_presets(VARIANTS[variant])[check_budget(budget)]
    if isinstance(preset, str):
        raise PresetUnavailable(f"{variant} has no {budget} preset: {preset}.")
    cfg = replace_fields(preset, dict(overrides), variant)
    if not cfg.model.strip():
        raise PresetUnavailable(f"{variant} at budget {budget} needs a model: {MODEL_HINT}.")
    check_source_window(cfg.source_window, variant)
    return cfg


def citation(variant: str, model: str) -> str:
    """The paper a run's numbers belong to: the variant's, else the one the model spec names."""
    recipe = VARIANTS.get(variant, "generic")
    if recipe == "generic":
        if model.startswith("bert2bert:") or model == "tiny-bert2bert":
            return CITATIONS["bert2bert"]
        return f"Hugging Face transformers seq2seq model {model}"
    return CITATIONS[recipe]
