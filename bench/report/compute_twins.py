"""The quality change of a run decoded at another compute type than float32 (#60): its headline beside its fp32
twin's, so an int8 decode's loss is shown, never hidden.

A run's compute type is what its record's system config says it decoded at: ``compute_type`` (the NAR and fairseq
families, systems/compute.py) or, for CTranslate2, ``ctranslate2.compute_type_used``; a record without either
decoded at float32. Its **fp32 twin** is the complete record that decoded the same trained model at float32 and
differs in nothing else: same task, split, budget, seed, limit and training split; the same overrides once
``compute_type`` and ``decode_batch_size`` are set aside (int8 resolves the batch to 1 unless it is set); the
same system, or the system the twin's name is a preset of (``encoder_bert_int8`` is ``encoder_bert`` at int8); and
the same ``model.training_key`` and ``model.workdir`` folder name (one checkpoint, wherever the cache lived),
and for CTranslate2 the same converted checkpoint (``ctranslate2.converted.sha256``: a model retrained under
the same key is another one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

FLOAT32 = "float32"
#: a headline loss (×100 points) beyond this is flagged on the boards: the optimized decode costs quality
TOLERANCE = 0.5


@dataclass(frozen=True)
class QualityChange:
    """One run's headline against its fp32 twin's (``delta`` = run − twin, ×100 points, as records store them)."""

    compute_type: str
    twin_run_id: str | None  # None: no fp32 twin recorded
    value: float | None
    twin_value: float | None
    same_outputs: bool = False

    @property
    def delta(self) -> float | None:
        if self.value is None or self.twin_value is None:
            return None
        return self.value - self.twin_value

    @property
    def beyond_tolerance(self) -> bool:
        """The optimized decode lost more than :data:`TOLERANCE` headline points."""
        return self.delta is not None and self.delta < -TOLERANCE


def compute_type(rec: Mapping[str, Any]) -> str:
    """The compute type the record's system decoded at (float32 where the record names none)."""
    config = (rec.get("system") or {}).get("config") or {}
    ct2 = config.get("ctranslate2")
    value = (ct2.get("compute_type_used") if isinstance(ct2, dict) else None) or config.get("compute_type")
    return str(value).replace("`", "'") if value else FLOAT32


#: overrides set aside when matching a twin: the compute type, and the decode batch its int8 preset resolves to 1
#: unless set (systems/presets.py ``int8_decode_batch``): an int8 run with ``--set decode_batch_size=1`` decodes as
#: the one without, and found no twin where that one did
_SET_ASIDE = ("compute_type", "decode_batch_size")


def _without_compute(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (overrides or {}).items() if k not in _SET_ASIDE}


def _same_decoding_key(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    spec = rec["spec"]
    model = rec.get("model") or {}
    return (spec.get("task"), spec.get("split"), spec.get("budget"), spec.get("seed"), spec.get("limit"),
            spec.get("train_split"), sorted(_without_compute(spec.get("overrides")).items(), key=str),
            model.get("training_key"), _folder_name(model.get("workdir")), _converted_checkpoint(rec))


def _converted_checkpoint(rec: Mapping[str, Any]) -> str | None:
    """The sha256 of the checkpoint CTranslate2 converted, where the record has one: a model retrained under the same
    training key (another machine, the same settings) is another checkpoint, and its runs are not twins."""
    config = ((rec.get("system") or {}).get("config") or {})
    return ((config.get("ctranslate2") or {}).get("converted") or {}).get("sha256")


def _folder_name(workdir: Any) -> str | None:
    """A model's workdir by its folder name: the name holds system, task, budget, seed and training key, the model's
    identity wherever the cache lives (a run decoded with ``$BENCH_CACHE`` elsewhere records an absolute path, one
    in the checkout's cache a relative one: the same checkpoint)."""
    return None if workdir is None else PurePath(str(workdir)).name


def fp32_twin(rec: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The record that decoded ``rec``'s trained model at float32 with every other setting equal, or None."""
    ct = compute_type(rec)
    model = rec.get("model") or {}
    if rec.get("kind", "run") != "run" or ct == FLOAT32 or not model.get("training_key"):
        return None
    system = str(rec["spec"]["system"])
    systems = {system, system.removesuffix(f"_{ct}")}
    key = _same_decoding_key(rec)
    found = [r for r in records if r.get("kind", "run") == "run" and r["spec"]["system"] in systems
             and compute_type(r) == FLOAT32 and _same_decoding_key(r) == key]
    return min(found, key=lambda r: str(r["run_id"])) if found else None


def quality_changes(records: Sequence[Mapping[str, Any]], value: Any) -> dict[str, QualityChange]:
    """run id -> :class:`QualityChange` for every record decoded at another compute type than float32;
    ``value(rec)`` is the headline (``bench.report.ranking.Headline.value``)."""
    out: dict[str, QualityChange] = {}
    for rec in records:
        ct = compute_type(rec)
        if rec.get("kind", "run") != "run" or ct == FLOAT32:
            continue
        twin = fp32_twin(rec, records)
        same = twin is not None and bool((rec.get("outputs") or {}).get("sha256")) and (
            (rec.get("outputs") or {}).get("sha256") == (twin.get("outputs") or {}).get("sha256"))
        out[str(rec["run_id"])] = QualityChange(ct, None if twin is None else str(twin["run_id"]), value(rec),
                                                None if twin is None else value(twin), same)
    return out


def change_line(change: QualityChange, metric: str) -> str:
    """``int8: BLEU-4 −0.04 vs its float32 run`` (the loss beyond the tolerance said), or that none is recorded."""
    if change.twin_run_id is None:
        return f"{change.compute_type}: no {FLOAT32} run of the same model recorded"
    if change.delta is None:
        return f"{change.compute_type}: its {FLOAT32} run has no {metric}"
    sign = "−" if change.delta < 0 else "+"
    text = f"{change.compute_type}: {metric} {sign}{abs(change.delta):.2f} vs its {FLOAT32} run"
    if change.same_outputs:
        text += " (identical outputs)"
    if change.beyond_tolerance:
        text += f", a loss beyond {TOLERANCE}"
    return text
