"""The UniLM system adapter (fit, decode, decode_one) and the registry factories ``unilm``, ``unilm_s2sft``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.presets import check_source_window, seeded_subset
from systems.source_windows import answer_window
from systems.unilm.collate import LazyParts, S2SFTCollator, V1Collator, lazy_torch
from systems.unilm.decode import UniLMDecoder
from systems.unilm.presets import CITATION, VARIANTS, UniLMConfig, make_config


class UniLMSystem(System):
    """The ``System`` adapter (bench/api/system.py) for both UniLM variants."""

    #: the shared trainer scores dev for the curve only and keeps the last checkpoint
    selects_on_dev = False
    batched_decode = True  # decode_batch is one padded batch

    def __init__(self, name: str, budget: str, cfg: UniLMConfig) -> None:
        self.name, self.budget, self.cfg = name, budget, cfg
        self.model: Any = None
        self.tok: Any = None
        self.fit_result: dict[str, Any] = {}
        self._use_cache = True

    @property
    def decode_only_overrides(self) -> tuple[str, ...]:  # type: ignore[override]
        """Search settings: a `--set beam_size=3` run decodes the plain run's checkpoint. The decode
        length sizes the tiny random model's position table, so it is decode-only for pretrained ones."""
        search = ("beam_size", "length_penalty", "no_repeat_ngram", "ngram_ignore", "decode_min_len",
                  "decode_batch_size")
        return search if self.cfg.backbone == "tiny" else (*search, "max_decode_len")

    def models(self) -> Sequence[Any]:
        return [self.model] if self.model is not None else []

    def missing_weights(self) -> str | None:
        """The pretrained backbone when it has no offline copy (the tiny smoke model loads none)."""
        from bench.api.checkpoints import missing_checkpoint

        return None if self.cfg.backbone == "tiny" else missing_checkpoint(self.cfg.backbone)

    def describe(self) -> SystemInfo:
        config = _jsonable(asdict(self.cfg))
        if self.fit_result:  # what training ran with (effective precision, compile, threads, buckets)
            config["train"] = {k: v for k, v in self.fit_result.items() if k != "losses"}
        return SystemInfo(
            name=self.name,
            family="AR",
            iterations="n",
            citation=CITATION,
            backbone=self.cfg.backbone,
            budget=self.budget,
            config=config,
        )

    # ---- model construction
    def _build(self, train: Sequence[Example]) -> None:
        torch = lazy_torch()
        from systems.backbone import WordPieceTokenizer, build_tokenizer, load_backbone, tiny_backbone
        from systems.backbone.tokenizer import corpus_vocab

        if self.cfg.backbone == "tiny":
            t = self.cfg.tiny
            texts = [x for e in train for x in (e.source, e.target)]
            self.tok = WordPieceTokenizer(corpus_vocab(texts, build_tokenizer(), t.get("vocab", 2000)))
            bb = tiny_backbone(
                vocab_size=self.tok.vocab_size,
                hidden=t["hidden"],
                layers=t["layers"],
                heads=t["heads"],
                max_position=max(
                    self.cfg.max_source_len + max(self.cfg.max_target_len, self.cfg.max_decode_len) + 2, 64
                ),
                type_vocab_size=max(self.cfg.source_type, self.cfg.target_type) + 1,
                dropout=t.get("dropout", 0.1),
                seed=self.cfg.seed,
            )
            head_state: dict = {}
        else:
            bb, self.tok, info = load_backbone(
                self.cfg.backbone, weights=self.cfg.weights, type_vocab_size=self.cfg.type_vocab_size
            )
            head_state = info["head_state"]
            need = max(self.cfg.source_type, self.cfg.target_type) + 1
            if bb.config.type_vocab_size < need:
                raise ValueError(
                    f"backbone {self.cfg.backbone} has {bb.config.type_vocab_size} token types but the preset "
                    f"uses type id {need - 1}; set type_vocab_size={need}"
                )
        torch.manual_seed(self.cfg.seed)
        self.model = LazyParts.model_class()(bb, self.cfg.label_smoothing)
        self.model.cls.load_hf(head_state)

    def _collator(self) -> Any:
        c = V1Collator if self.cfg.variant == "v1" else S2SFTCollator
        return c(self.tok.cls_id, self.tok.sep_id, self.tok.mask_id, self.tok.vocab_size, self.cfg)

    def _encode_sources(self, examples: Sequence[Example]) -> list[list[int]]:
        """Source ids without [CLS]/[SEP]; at most ``max_source_len - 2`` of them."""
        keep = self.cfg.max_source_len - 2
        check_source_window(self.cfg.source_window)
        if self.cfg.source_window == "answer":
            return [answer_window(self.tok, e, keep) for e in examples]
        return [s[:keep] for s in self.tok.encode_batch([e.source for e in examples])]

    def _encode_pairs(self, examples: Sequence[Example]) -> list[tuple[list[int], list[int]]]:
        cfg = self.cfg
        srcs = self._encode_sources(examples)
        tgts = self.tok.encode_batch([e.target for e in examples])
        return [(s[: cfg.max_source_len - 2], t[: cfg.max_target_len - 1]) for s, t in zip(srcs, tgts, strict=True)]

    # ---- System protocol
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with using_threads(self.cfg.threads):
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        from systems.training import DEV_CURVE_EXAMPLES, Trainer, train_config

        cfg = self.cfg
        workdir = Path(workdir)
        if not task.train:
            raise ValueError(f"task {task.name} has no training examples")
        train = seeded_subset(task.train, cfg.train_examples, cfg.seed, keep_order=False)
        self._build(train)
        pairs = self._encode_pairs(train)
        steps = math.ceil(cfg.epochs * len(pairs) / cfg.batch_size) if cfg.epochs else cfg.steps
        tcfg = train_config(cfg, steps=steps, log_every=max(1, steps // 20), device=self.device)
        result = Trainer(tcfg, workdir).fit(
            self.model,
            pairs,
            self._collator(),
            lambda m, b: m(b),
            lengths=[len(a) + len(b) for a, b in pairs],
            dev=self._encode_pairs(list(task.dev)[:DEV_CURVE_EXAMPLES]) if task.dev else None,
        )
        self.fit_result = {**result.to_json(), "n_train": len(pairs), "train_steps": steps}
        (workdir / "fit.json").write_text(json.dumps(self.fit_result, indent=1))

    def _search_config(self) -> Any:
        from systems.decoding import SearchConfig

        cfg = self.cfg
        ignore = frozenset(self.tok.convert_tokens_to_ids(list(cfg.ngram_ignore)))
        return SearchConfig(
            beam_size=cfg.beam_size,
            max_len=cfg.max_decode_len,
            min_len=cfg.decode_min_len,
            eos_id=self.tok.sep_id,
            length_penalty=cfg.length_penalty,
            no_repeat_ngram=cfg.no_repeat_ngram,
            ngram_ignore=ignore,
        )

    def decode_ids(self, sources: list[list[int]], use_cache: bool = True) -> list[list[int]]:
        """Decode token-id sources (``[CLS] a [SEP]`` included) into target ids (no EOS)."""
        torch = lazy_torch()
        from systems.decoding import search

        if self.model is None:
            raise RuntimeError(f"{self.name}: call fit() before decode()")
        self.model.eval()
        cfg = self.cfg
        dec = UniLMDecoder(
            self.model, self.tok.mask_id, cfg.source_type, cfg.target_type, use_cache, max_len=cfg.max_decode_len
        )
        with torch.inference_mode(), using_threads(cfg.threads):
            return search(dec, dec.start(sources), len(sources), self._search_config())

    def _sources(self, examples: Sequence[Example]) -> list[list[int]]:
        keep = min(self.cfg.max_source_len, self.cfg.max_seq_len - self.cfg.max_decode_len) - 2
        return [[self.tok.cls_id, *s[:keep], self.tok.sep_id] for s in self._encode_sources(examples)]

    def decode(self, examples: Sequence[Example]) -> list[str]:
        srcs = self._sources(examples)
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))  # length buckets: less padding
        out: list[str] = [""] * len(srcs)
        bs = self.cfg.decode_batch_size
        for k in range(0, len(order), bs):
            chunk = order[k : k + bs]
            for i, ids in zip(chunk, self.decode_ids([srcs[i] for i in chunk], self._use_cache), strict=True):
                out[i] = self.tok.decode(ids)
        return out

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """One padded batch in the given order (no length forcing: refused as in :meth:`decode_one`)."""
        self.refuse_forced_length(None if forced_lengths is None else len(forced_lengths))
        return [self.tok.decode(ids) for ids in self.decode_ids(self._sources(examples), self._use_cache)]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        return self.tok.decode(self.decode_ids(self._sources([example]), self._use_cache)[0])


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(d, default=list))


def make(variant: str, budget: str, overrides: Mapping[str, Any] | None = None) -> UniLMSystem:
    """``unilm`` (the unilm-v1 QG recipe) or ``unilm_s2sft`` (s2s-ft pseudo-masking) under a budget."""
    if variant not in VARIANTS:
        raise ValueError(f"Unknown UniLM variant '{variant}'; known: {', '.join(VARIANTS)}")
    return UniLMSystem(variant, budget, make_config(VARIANTS[variant], budget, dict(overrides or {})))
