"""System adapters, reached by the harness only through :data:`SYSTEMS` (lazy entries)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bench.api.registry import Registry, RegistryError


def _check_factory(name: str, factory: Any) -> None:
    if not callable(factory):
        raise RegistryError(
            f"system '{name}': its registered object is a {type(factory).__name__}, not a factory; register a "
            "callable `make(budget, overrides) -> bench.api.system.System`."
        )


#: installed plugins add systems through the ``bench.systems`` entry-point group (bench.env.plugins)
SYSTEMS: Registry = Registry("system", entry_point_group="bench.systems", check=_check_factory)

# Reference baselines: exercise the whole pipeline on real data without a model.
SYSTEMS.register("copy_source", "systems.baselines:copy_source", family="reference")
SYSTEMS.register("lead1", "systems.baselines:lead1", family="reference")
SYSTEMS.register("lead3", "systems.baselines:lead3", family="reference")
# Latency probe: does nothing, so the meter's own overhead can be measured against it.
SYSTEMS.register("null", "systems.null:null", family="reference")

# Every family registers its variants from the one list its presets module keeps (light imports, no
# torch); each entry is the family's ``make(variant, budget, overrides)`` with the variant bound.
from systems.copybert.presets import VARIANTS as _COPYBERT  # noqa: E402
from systems.erniegen.presets import VARIANTS as _ERNIEGEN  # noqa: E402
from systems.fairseq_ct2.presets import VARIANTS as _FAIRSEQ_CT2  # noqa: E402
from systems.fairseq_nat.presets import TWINS as _FAIRSEQ_TWINS  # noqa: E402
from systems.fairseq_nat.presets import VARIANTS as _FAIRSEQ  # noqa: E402
from systems.hf_seq2seq.presets import VARIANTS as _HF_SEQ2SEQ  # noqa: E402
from systems.nar.presets import TWINS as _NAR_TWINS  # noqa: E402
from systems.nar.presets import VARIANTS as _NAR  # noqa: E402
from systems.unilm.presets import VARIANTS as _UNILM  # noqa: E402


def _register_family(names: Iterable[str], factory: str, family: str | Callable[[str], str]) -> None:
    """Every variant of one family under its shared factory, the variant bound (``factory(variant, budget,
    overrides)``); ``family`` is the family label, or a function of the variant where the family spans two."""
    for name in names:
        SYSTEMS.register(name, factory, bind=name, family=family if isinstance(family, str) else family(name))


# Autoregressive UniLM seq2seq (docs/systems.md §2): unilm-v1 masked seq2seq LM and s2s-ft pseudo-masking.
_register_family(_UNILM, "systems.unilm.system:make", "AR")
# Non-autoregressive family (docs/systems.md §4): encoder NAT baselines with GLAT, and MIST.
_register_family(_NAR, "systems.nar.system:make", "NAR")
# ERNIE-GEN fine-tuning (docs/systems.md §3): infilling generation, noise-aware training, infilling decoding.
_register_family(_ERNIEGEN, "systems.erniegen.system:make", "AR")
# CopyBERT (docs/systems.md §1): the five Table-1 variants, presets over one class.
_register_family(_COPYBERT, "systems.copybert.system:make", "AR")
# Hugging Face seq2seq (any AutoModelForSeq2SeqLM or BERT2BERT via `--set model=`): BART, ProphetNet, BERT2BERT.
_register_family(_HF_SEQ2SEQ, "systems.hf_seq2seq.system:make", "AR")
# fairseq NAR/AR baselines (docs/systems.md §5): the real fairseq models; need `make fairseq`.
_register_family(_FAIRSEQ, "systems.fairseq_nat.system:make", lambda name: _FAIRSEQ[name][3])
# The fairseq Transformer's own model decoded by CTranslate2 (#50): the optimized AR baseline; needs the [ct2] extra.
_register_family(_FAIRSEQ_CT2, "systems.fairseq_ct2.system:make", "AR")
# Compute-type twins (#60): `<system>_int8` is the system decoding its own trained model at int8 (systems/compute.py),
# so one latency run can time a system at float32 and at int8 side by side (a system is timed once per run).
_register_family(_NAR_TWINS, "systems.nar.system:make", "NAR")
_register_family(_FAIRSEQ_TWINS, "systems.fairseq_nat.system:make", lambda name: _FAIRSEQ[_FAIRSEQ_TWINS[name][0]][3])


def build(name: str, budget: str, overrides: dict | None = None):
    """The system ``name`` under ``budget`` with ``overrides``, checked to honour the :class:`~bench.api.system.System`
    contract (a plugin's factory that returns something else is a one-line error, not a later AttributeError)."""
    import inspect

    from bench.api.system import check_system

    factory = SYSTEMS.get(name)
    try:
        inspect.signature(factory).bind(budget, {})
    except TypeError as exc:
        raise RegistryError(f"system '{name}': its factory cannot be called as factory(budget, overrides) ({exc}); "
                            "register a callable `make(budget, overrides) -> bench.api.system.System`.") from None
    except ValueError:  # no introspectable signature (some builtins): let the call itself decide
        pass
    return check_system(name, factory(budget, dict(overrides or {})))
