"""The CTranslate2 settings of ``fairseq_transformer_ct2`` (light: no ctranslate2, torch or fairseq import).

Every other override is ``fairseq_transformer``'s own (the model, and its generator settings: ``beam``,
``lenpen``, ``no_repeat_ngram_size``, ``max_len_a/b``, ``decode_batch_size``), so the two systems resolve
to one training key and share one trained model.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from systems.presets import ranged, replace_fields

#: the family whose FamilyConfig this one's config is (the model and its training are fairseq_transformer's; only
#: the CTranslate2 settings below are this family's own, decode-only)
CONFIG_FAMILY = "fairseq_nat"
#: registered name -> the fairseq system whose checkpoint it converts
VARIANTS: dict[str, str] = {"fairseq_transformer_ct2": "fairseq_transformer"}

#: CTranslate2's compute types; "default": int8 on a CPU, float16 on a GPU (what one would deploy)
COMPUTE_TYPES = ("default", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16",
                 "float32")
CITATION = ("Vaswani et al. 2017 (fairseq Transformer, GLGE recipe) decoded by CTranslate2 (OpenNMT, Klein et al. "
            "2020); the optimized AR baseline of Helcl et al. 2022")


@dataclass(frozen=True)
class CT2Settings:
    """How CTranslate2 runs the converted model: decode-only, never part of the training key."""

    compute_type: str = "default"
    #: threads of one translation (None: the system's ``threads``, else the process's: ``bench run --threads``)
    intra_threads: int | None = ranged(None, ge=1)
    #: translations run in parallel; 1: one batch at a time, as the meter and the batched decode call it
    inter_threads: int = ranged(1, ge=1)

    def resolved_compute_type(self, device_type: str) -> str:
        """``default`` as the issue asks: int8 on the CPU, float16 on a GPU."""
        if self.compute_type != "default":
            return self.compute_type
        return "float16" if device_type == "cuda" else "int8"


#: the override names that are CTranslate2's, not fairseq's
FIELDS = tuple(f.name for f in fields(CT2Settings))


def split_overrides(name: str, overrides: dict[str, Any]) -> tuple[CT2Settings, dict[str, Any]]:
    """``(CTranslate2 settings, fairseq overrides)``; a bad compute type or thread count is a one-line error."""
    settings = replace_fields(CT2Settings(), {k: overrides[k] for k in FIELDS if k in overrides}, name)
    if settings.compute_type not in COMPUTE_TYPES:
        raise ValueError(f"{name}: --set compute_type={settings.compute_type!r}; choose one of "
                         f"{', '.join(COMPUTE_TYPES)}")
    return settings, {k: v for k, v in overrides.items() if k not in FIELDS}
