"""UniLM seq2seq fine-tuning: the unilm-v1 QG recipe (``unilm``) and s2s-ft pseudo-masking (``unilm_s2sft``).

docs/systems.md §2. Both train a BERT-layout backbone with an MLM head on ``[CLS] src [SEP] tgt [SEP]``
under a seq2seq mask and decode left to right with a ``[MASK]`` query per step; the source K/V
is computed once and cached (unilm-v1 caches hidden states, which gives the same numbers).
Registered through ``systems.unilm.system:make`` (one per name in ``VARIANTS``). Modules: ``presets``
(``VARIANTS``, budget presets), ``collate`` (training batches), ``decode`` (the decoder), ``system`` (the adapter).
"""

from systems.source_windows import answer_window
from systems.unilm.collate import LazyParts, S2SFTCollator, V1Collator, s2sft_mask, truncate_pair
from systems.unilm.decode import UniLMDecoder
from systems.unilm.presets import CITATION, VARIANTS, UniLMConfig, budget_presets, make_config
from systems.unilm.system import UniLMSystem, make

__all__ = [
    "CITATION", "LazyParts", "S2SFTCollator", "UniLMConfig", "UniLMDecoder", "UniLMSystem", "V1Collator",
    "answer_window",
    "VARIANTS", "budget_presets", "make", "make_config", "s2sft_mask", "truncate_pair",
]
