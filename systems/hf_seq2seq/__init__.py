"""Hugging Face seq2seq models as systems: ``hf_seq2seq`` (any model), ``bart_large``, ``bert2bert_minilm_l6``.

One adapter over ``transformers`` encoder-decoders, so a pretrained seq2seq baseline needs a ``--set model=...``,
not new code. Modules: ``config`` (presets, no heavy imports: the registry reads ``VARIANTS``) and ``system``
(the adapter; torch and transformers are imported when a model is built).
"""

from systems.hf_seq2seq.config import VARIANTS, HFSeq2SeqConfig, PresetUnavailable, make_config, presets

__all__ = ["VARIANTS", "HFSeq2SeqConfig", "PresetUnavailable", "make_config", "presets"]
