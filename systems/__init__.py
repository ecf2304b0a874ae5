"""System adapters, reached by the harness only through :data:`SYSTEMS` (lazy entries)."""

from __future__ import annotations

from typing import Any

from bench.registry import Registry, RegistryError


def _check_factory(name: str, factory: Any) -> None:
    if not callable(factory):
        raise RegistryError(
            f"system '{name}': its registered object is a {type(factory).__name__}, not a factory; register a "
            "callable `make(budget, overrides) -> systems.base.System`."
        )


#: installed plugins add systems through the ``bench.systems`` entry-point group (bench.plugins)
SYSTEMS: Registry = Registry("system", entry_point_group="bench.systems", check=_check_factory)

# Reference baselines: exercise the whole pipeline on real data without a model.
SYSTEMS.register("copy_source", "systems.baselines:copy_source", family="reference")
SYSTEMS.register("lead1", "systems.baselines:lead1", family="reference")
# Latency probe: does nothing, so the meter's own overhead can be measured against it.
SYSTEMS.register("null", "systems.null:null", family="reference")

# Every family registers its variants from the one list its presets module keeps (light imports, no
# torch); each entry is the family's ``make(variant, budget, overrides)`` with the variant bound.
from systems.copybert.presets import VARIANTS as _COPYBERT  # noqa: E402
from systems.erniegen.presets import VARIANTS as _ERNIEGEN  # noqa: E402
from systems.fairseq_nat.presets import SYSTEMS as _FAIRSEQ  # noqa: E402
from systems.hf_seq2seq.config import VARIANTS as _HF_SEQ2SEQ  # noqa: E402
from systems.nar.presets import VARIANTS as _NAR  # noqa: E402
from systems.unilm.config import VARIANTS as _UNILM  # noqa: E402

# Autoregressive UniLM seq2seq (SYSTEMS.md §2): unilm-v1 masked seq2seq LM and s2s-ft pseudo-masking.
for _name in _UNILM:
    SYSTEMS.register(_name, "systems.unilm.system:make", bind=_name, family="AR")
# Non-autoregressive family (SYSTEMS.md §4): encoder NAT baselines with GLAT, and MIST.
for _name in _NAR:
    SYSTEMS.register(_name, "systems.nar.system:make", bind=_name, family="NAR")
# ERNIE-GEN fine-tuning (SYSTEMS.md §3): infilling generation, noise-aware training, infilling decoding.
for _name in _ERNIEGEN:
    SYSTEMS.register(_name, "systems.erniegen.system:make", bind=_name, family="AR")
# CopyBERT (SYSTEMS.md §1): the five Table-1 variants, presets over one class.
for _name in _COPYBERT:
    SYSTEMS.register(_name, "systems.copybert.system:make", bind=_name, family="AR")
# Hugging Face seq2seq (any AutoModelForSeq2SeqLM or BERT2BERT via `--set model=`): BART-large, BERT2BERT MiniLM.
for _name in _HF_SEQ2SEQ:
    SYSTEMS.register(_name, "systems.hf_seq2seq.system:make", bind=_name, family="AR")
# fairseq NAR/AR baselines (SYSTEMS.md §5): the real fairseq models; need `make fairseq`.
for _name, (_arch, _noise, _flags, _family) in _FAIRSEQ.items():
    SYSTEMS.register(_name, "systems.fairseq_nat.system:make", bind=_name, family=_family)

def build(name: str, budget: str, overrides: dict | None = None):
    """The system ``name`` under ``budget`` with ``overrides``, checked to honour the :class:`~systems.base.System`
    contract (a plugin's factory that returns something else is a one-line error, not a later AttributeError)."""
    import inspect

    from systems.base import check_system

    factory = SYSTEMS.get(name)
    try:
        inspect.signature(factory).bind(budget, {})
    except TypeError as exc:
        raise RegistryError(f"system '{name}': its factory cannot be called as factory(budget, overrides) ({exc}); "
                            "register a callable `make(budget, overrides) -> systems.base.System`.") from None
    except ValueError:  # no introspectable signature (some builtins): let the call itself decide
        pass
    return check_system(name, factory(budget, dict(overrides or {})))
