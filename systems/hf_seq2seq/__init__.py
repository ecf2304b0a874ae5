"""Hugging Face seq2seq models as systems: ``hf_seq2seq`` (any model), ``bart_large``, ``bert2bert_minilm_l6``.

One adapter over ``transformers`` encoder-decoders, so a pretrained seq2seq baseline needs a ``--set model=...``,
not new code. Modules: ``presets`` (``VARIANTS`` and the budget presets; no heavy imports: the registry reads
``VARIANTS``) and ``system`` (the adapter; torch and transformers are imported when a model is built).
"""

from systems.hf_seq2seq.presets import VARIANTS, HFSeq2SeqConfig, PresetUnavailable, budget_presets, make_config

__all__ = ["VARIANTS", "HFSeq2SeqConfig", "PresetUnavailable", "budget_presets", "make_config"]
