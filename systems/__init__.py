"""System adapters, reached by the harness only through :data:`SYSTEMS` (lazy entries)."""

from __future__ import annotations

from bench.registry import Registry

SYSTEMS: Registry = Registry("system")

# Reference baselines: exercise the whole pipeline on real data without a model.
SYSTEMS.register("copy_source", "systems.baselines:copy_source", family="reference")
SYSTEMS.register("lead1", "systems.baselines:lead1", family="reference")
# Latency probe: does nothing, so the meter's own overhead can be measured against it.
SYSTEMS.register("null", "systems.null:null", family="reference")

# Autoregressive UniLM seq2seq (SYSTEMS.md §2): unilm-v1 masked seq2seq LM and s2s-ft pseudo-masking.
SYSTEMS.register("unilm", "systems.unilm:unilm", family="AR")
SYSTEMS.register("unilm_s2sft", "systems.unilm:unilm_s2sft", family="AR")

# Non-autoregressive family (SYSTEMS.md §4): encoder NAT baselines with GLAT, and MIST.
for _name in ("encoder_random", "encoder_minilm", "encoder_bert", "encoder_unilm", "encoder_minilm_l6",
              "mist_minilm", "mist_bert", "mist_unilm", "mist_minilm_l6", "static_mix_unilm", "static_mix_minilm_l6"):
    SYSTEMS.register(_name, f"systems.nar.system:{_name}", family="NAR")

# ERNIE-GEN fine-tuning (SYSTEMS.md §3): infilling generation, noise-aware training, infilling decoding.
SYSTEMS.register("erniegen_base", "systems.erniegen.system:erniegen_base", family="AR")
SYSTEMS.register("erniegen_large", "systems.erniegen.system:erniegen_large", family="AR")

# CopyBERT (SYSTEMS.md §1): the five Table-1 variants, presets over one class.
for _name in ("copybert_nocopy", "copybert_normalcopy", "copybert_selfcopy", "copybert_twohop",
              "copybert_spanbert_selfcopy"):
    SYSTEMS.register(_name, f"systems.copybert.system:{_name}", family="AR")

# fairseq NAR/AR baselines (SYSTEMS.md §5): the real fairseq models; need `make fairseq`.
SYSTEMS.register("fairseq_transformer", "systems.fairseq_nat.system:fairseq_transformer", family="AR")
SYSTEMS.register("fairseq_nat", "systems.fairseq_nat.system:fairseq_nat", family="NAR")
for _name in ("fairseq_inat", "fairseq_cmlm", "fairseq_levt", "fairseq_inst"):
    SYSTEMS.register(_name, f"systems.fairseq_nat.system:{_name}", family="semi-NAR")


def build(name: str, budget: str, overrides: dict | None = None):
    """The system ``name`` under ``budget`` with ``overrides``, checked to honour the :class:`~systems.base.System`
    contract (a plugin's factory that returns something else is a one-line error, not a later AttributeError)."""
    from systems.base import check_system

    return check_system(name, SYSTEMS.get(name)(budget, dict(overrides or {})))
