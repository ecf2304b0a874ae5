"""``fairseq_transformer_ct2``: the ``fairseq_transformer`` model, converted once and decoded by CTranslate2.

No second training: the system resolves to ``fairseq_transformer``'s training settings (its own settings are
decode-only), and lists it in ``model_siblings``, so ``bench run`` finds, or trains, exactly that system's
model in that system's workdir (bench.runs.identity.model_owner), then converts the checkpoint beside it.
Module-level imports stay light: ctranslate2, fairseq and torch load inside ``fit`` and decoding only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.fairseq_ct2.presets import CITATION, FIELDS, VARIANTS, CT2Settings, split_overrides
from systems.fairseq_nat.presets import FairseqConfig, apply_overrides, preset
from systems.fairseq_nat.system import CHECKPOINTS, DICTS, FairseqSystem
from systems.presets import INT8_DECODE_BATCH_SIZE


class CT2System(System):
    """Fit = ``fairseq_transformer``'s fit (train, resume or find it finished) + a conversion keyed by the
    checkpoint's sha256; decode = CTranslate2 with fairseq's generator settings, on the harness's device.

    The fairseq model that fit loads is dropped once converted: only the CTranslate2 model decodes, so
    :meth:`models` is empty and placement is CTranslate2's own ``device`` argument (:func:`.decode.ct2_device`).
    """

    supports_forced_length = True
    supports_random_weights = True
    requires_modules = ("fairseq", "ctranslate2")
    install_command = "make fairseq"  # installs the [fairseq,ct2] extras and the fairseq wheel
    batched_decode = True  # decode_batch is CTranslate2's batch (length-forced: one call per distinct length)
    decode_only_overrides = (*FairseqSystem.decode_only_overrides, *FIELDS)
    #: the model is fairseq_transformer's: same settings, same workdir, trained once
    model_siblings = tuple(VARIANTS.values())

    def __init__(self, name: str, cfg: FairseqConfig, settings: CT2Settings, batch_size_set: bool = False) -> None:
        self.name, self.settings = name, settings
        #: whether ``decode_batch_size`` was set explicitly (else an int8 compute type decodes item by item)
        self.batch_size_set = batch_size_set
        self.fairseq = FairseqSystem(cfg)
        self.decoder: Any = None
        self.converted: dict[str, Any] | None = None
        self.parameters = 0  # the fairseq model's, counted before it is dropped (CTranslate2 hides its weights)
        self.last_iterations = 0

    @property
    def cfg(self) -> FairseqConfig:
        return self.fairseq.cfg

    @property
    def needs_training(self) -> bool:  # type: ignore[override]  # a property where the base has a default
        return self.fairseq.needs_training

    def training_settings(self, task: TaskInfo) -> Mapping[str, Any]:
        """``fairseq_transformer``'s, unchanged: the two systems share one training key and one model."""
        return self.fairseq.training_settings(task)

    def describe(self) -> SystemInfo:
        info = self.fairseq.describe()
        config = dict(info.config)
        del config["compute_type"]  # the fairseq model's PyTorch compute type: CTranslate2's own is below
        config["decode_batch_size"] = self.quality_batch_size
        config["ctranslate2"] = {
            "decodes_model_of": self.cfg.system,
            "compute_type": self.settings.compute_type,
            "compute_type_used": self.settings.resolved_compute_type(self.device.partition(":")[0]),
            "intra_threads": self.settings.intra_threads or self.cfg.threads or "the process's (--threads)",
            "inter_threads": self.settings.inter_threads,
            "no_repeat_ngram_size_applied": self.decoder.no_repeat_ngram_size if self.decoder else None,
            "no_repeat_ngram_note": "applied only where fairseq's generator applies it (its CUDA extension); "
            "fairseq 0.12's Python fallback bans nothing (systems/fairseq_ct2/decode.py)",
            **({"converted": self.converted} if self.converted else {}),
        }
        return SystemInfo(name=self.name, family="AR", iterations="n", citation=CITATION,
                          backbone=info.backbone + ", decoded by CTranslate2", budget=info.budget, config=config)

    # ------------------------------------------------------------------ fit: the fairseq model, converted
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        from systems.fairseq_ct2.convert import require_ctranslate2

        require_ctranslate2()  # before any training: a missing extra is a one-line error, not a late one
        workdir = Path(workdir)
        self.fairseq.device = self.device  # it trains where the harness placed this system
        with using_threads(self.cfg.threads):
            self.fairseq.fit(task, workdir)
            model_dir, sha = self._convert(workdir)
        self.parameters = sum(int(p.numel()) for m in self.fairseq.models() for p in m.parameters())
        self.fairseq.decoder = None  # fairseq's model decodes nothing here; free it
        self.decoder = _decoder(model_dir, self.cfg, self.settings, workdir)
        import json

        from systems.fairseq_ct2.convert import DONE

        self.converted = {**json.loads((model_dir / DONE).read_text()), "dir": str(model_dir), "sha256": sha}

    def _convert(self, workdir: Path) -> tuple[Path, str]:
        from systems.fairseq_ct2.convert import convert_untrained, convert_verified

        dict_dir = workdir / DICTS
        if self.cfg.weights == "random":
            from systems.fairseq_nat.untrained import untrained_namespace

            model = self.fairseq.decoder.model
            return convert_untrained(model, untrained_namespace(self.cfg, dict_dir), dict_dir, workdir)
        from systems.fairseq_nat.checkpoints import Manifest

        train = self.fairseq.train_result or {}
        name = train.get("decoded_checkpoint", {}).get("file", f"checkpoint_{self.cfg.checkpoint}.pt")
        save_dir = workdir / CHECKPOINTS
        return convert_verified(save_dir / name, Manifest(save_dir), dict_dir, workdir)

    def weights_footprint(self) -> Mapping[str, Any] | None:
        """The converted model's parameters (the fairseq model's count) at the compute type's weight width;
        :meth:`models` is empty, so without this a sweep would list 0 parameters. A lower bound: CTranslate2
        quantizes the weight matrices and keeps biases and norms wider."""
        if not self.parameters:
            return None
        used = str(self.settings.resolved_compute_type(self.device.partition(":")[0]))
        width = 1 if used.startswith("int8") else 2 if used in ("float16", "bfloat16") else 4
        return {"parameters": self.parameters, "parameter_bytes": self.parameters * width,
                "parameter_bytes_note": f"parameters x {width} byte(s) ({used} weights; biases and norms kept "
                                        "wider, so a lower bound)"}

    # ------------------------------------------------------------------ decoding
    def _need_decoder(self, forced: bool = False) -> Any:
        if self.decoder is None:
            raise RuntimeError(f"{self.name}: call fit() before decoding (it converts the checkpoint).")
        if self.cfg.weights == "random" and not forced:
            raise RuntimeError(f"{self.name} has weights=random (untrained): its free outputs are meaningless. "
                               "Time it length-forced (bench latency --length-forced) or drop weights=random.")
        return self.decoder

    @property
    def quality_batch_size(self) -> int:
        """The batch a quality run decodes in: ``decode_batch_size``, but 1 at an int8 compute type unless it was
        set (systems.presets.INT8_DECODE_BATCH_SIZE: int8 rounding grows the float noise of padding into other
        tokens; CTranslate2 says the same of its CPU batches, OpenNMT/CTranslate2#693), so the score is of exactly
        what the meter times at batch 1."""
        used = str(self.settings.resolved_compute_type(self.device.partition(":")[0]))
        if used.startswith("int8") and not self.batch_size_set:
            return INT8_DECODE_BATCH_SIZE
        return max(1, self.cfg.decode_batch_size)

    def decode(self, examples: Sequence[Example]) -> list[str]:
        """Batched (sorted by source length, :attr:`quality_batch_size` a call); output in input order."""
        dec = self._need_decoder()
        order = sorted(range(len(examples)), key=lambda i: len(examples[i].source))
        out = [""] * len(examples)
        bs = self.quality_batch_size
        for start in range(0, len(order), bs):
            idx = order[start : start + bs]
            texts = dec.translate([examples[i].source for i in idx], self.device, self.cfg.threads)
            for i, text in zip(idx, texts, strict=True):
                out[i] = text
            self.last_iterations = dec.steps
        return out

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """The sweep's batch as CTranslate2 batches it: one ``translate_batch`` call; length-forced, one call per
        distinct forced length (``min/max_decoding_length`` are the call's, not a row's), so a batch of B items
        with k lengths is k calls. Each output equals :meth:`decode_one`'s (tests/test_batched_single.py)."""
        if forced_lengths is not None:  # decode_forced checks there is one length per item
            return self.decode_forced(examples, forced_lengths)
        dec = self._need_decoder()
        texts = dec.translate([ex.source for ex in examples], self.device, self.cfg.threads)
        self.last_iterations = dec.steps
        return texts

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        """Batch size 1; ``forced_length`` L: exactly L decoder steps (see :mod:`.decode`)."""
        if forced_length is not None:
            return self.decode_forced([example], [forced_length])[0]
        dec = self._need_decoder()
        text = dec.translate([example.source], self.device, self.cfg.threads)[0]
        self.last_iterations = dec.steps
        return text

    def decode_forced(self, examples: Sequence[Example], lengths: Sequence[int]) -> list[str]:
        """A batch decoded length-forced, bucketed by length (one CTranslate2 call per distinct length)."""
        if len(examples) != len(lengths):
            raise ValueError(f"{self.name}: {len(examples)} examples but {len(lengths)} forced lengths; pass one per "
                             "item.")
        dec = self._need_decoder(forced=True)
        texts = dec.translate_forced([ex.source for ex in examples], [int(n) for n in lengths], self.device,
                                     self.cfg.threads)
        self.last_iterations = dec.steps
        return texts


def _decoder(model_dir: Path, cfg: FairseqConfig, settings: CT2Settings, workdir: Path) -> Any:
    """The CTranslate2 decoder over the fairseq run's own tokenisation (WordPiece, or its SentencePiece model)."""
    from systems.fairseq_ct2.decode import CT2Decoder
    from systems.fairseq_nat.vocab import SPM_MODEL, SentencePieceLines, WordPieceLines

    lines: Any = SentencePieceLines(workdir / DICTS / SPM_MODEL) if cfg.vocab == "sentencepiece" else WordPieceLines()
    return CT2Decoder(model_dir, cfg, settings, lines)


#: fairseq fields an override may not set here (they name the model's identity)
_FROZEN = ("system", "budget", "family")


def make(system: str, budget: str, overrides: Mapping[str, Any] | None = None) -> CT2System:
    """``system`` under ``budget``: CTranslate2 settings (``compute_type``, ``intra_threads``, ``inter_threads``)
    plus any override ``fairseq_transformer`` takes (``beam``, ``seed``, ``weights``...)."""
    settings, rest = split_overrides(system, dict(overrides or {}))
    known = {f.name for f in fields(FairseqConfig)} - set(_FROZEN)
    bad = sorted(set(rest) - known)
    if bad:
        raise ValueError(f"Unknown override(s) {bad} for {system}; known: {', '.join(sorted(known | set(FIELDS)))}")
    cfg = apply_overrides(preset(VARIANTS[system], check_budget(budget)), rest)
    return CT2System(system, cfg, settings, batch_size_set="decode_batch_size" in rest)
