"""The Hugging Face seq2seq adapter and the registry factories ``hf_seq2seq``, ``bart_large``, ``bert2bert_minilm_l6``.

Any ``AutoModelForSeq2SeqLM`` checkpoint (BART, T5, ...) or a BERT2BERT ``EncoderDecoderModel`` is fine-tuned by
the shared trainer (resumable checkpoints, dev-loss curve, speed policy) and decoded with ``model.generate``, so
a new pretrained seq2seq baseline is one ``--set model=...`` away rather than one adapter away.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.hf_seq2seq.presets import HFSeq2SeqConfig, citation, make_config

#: random tiny models for smoke runs: small enough to train 20 updates in seconds on one thread
TINY = {"hidden": 64, "layers": 2, "heads": 4, "ffn": 128, "positions": 512}


class HFSeq2SeqSystem(System):
    """The ``System`` adapter (bench/api/system.py) for every HF encoder-decoder model."""

    #: search settings only: a `--set beam_size=6` run decodes the plain run's checkpoint (tiny models have 512
    #: positions, so the decode length never resizes a model either)
    batched_decode = True  # decode_batch is one padded generate call
    decode_only_overrides = ("beam_size", "length_penalty", "no_repeat_ngram", "min_len", "max_decode_len",
                             "decode_batch_size")

    def __init__(self, name: str, budget: str, cfg: HFSeq2SeqConfig) -> None:
        self.name, self.budget, self.cfg = name, budget, cfg
        self.model: Any = None  # the training wrapper (loss); ``self.model.hf`` is the HF model
        self.tok: Any = None
        self._pieces: _PlainPieces | None = None  # self.tok as answer windows read it, built once per tokenizer
        self.fit_result: dict[str, Any] = {}

    def models(self) -> Sequence[Any]:
        return [self.model] if self.model is not None else []

    def missing_weights(self) -> str | None:
        """The pretrained model (or BERT2BERT's encoder) when it has no offline copy; tiny smoke models load none."""
        from bench.api.checkpoints import missing_checkpoint

        spec = self.cfg.model
        if spec in ("tiny-bart", "tiny-bert2bert"):
            return None
        return missing_checkpoint(spec.split(":", 1)[1] if spec.startswith("bert2bert:") else spec)

    def describe(self) -> SystemInfo:
        config = json.loads(json.dumps(asdict(self.cfg), default=list))  # tuples -> lists: plain JSON
        if self.fit_result:  # what training ran with (effective precision, threads, buckets)
            config["train"] = {k: v for k, v in self.fit_result.items() if k != "losses"}
        return SystemInfo(
            name=self.name,
            family="AR",
            iterations="n",
            citation=citation(self.name, self.cfg.model),
            backbone=self.cfg.model,
            budget=self.budget,
            config=config,
        )

    def training_settings(self, task: TaskInfo) -> Mapping[str, Any]:
        """The config with the source window this task really gets: ``answer`` reads an answer window only on
        question-generation tasks (others have no answer and read the head). A head-window run leaves the field
        out, so runs recorded before the field existed keep their training key."""
        config = dict(self.describe().config)
        if _source_window(self.cfg.source_window, task) == "head":
            config.pop("source_window", None)
        return config

    # ---- data
    def _sources(self, examples: Sequence[Example]) -> list[list[int]]:
        """Source ids with the model's special tokens: the head of the source (truncation), or with
        ``source_window="answer"`` the answer [SEP] a paragraph window around it where an example has one."""
        if self.cfg.source_window == "answer":
            from systems.source_windows import answer_window

            if self._pieces is None or self._pieces.tok is not self.tok:  # not per call: decode_one is timed
                self._pieces = _PlainPieces(self.tok)
            pieces = self._pieces
            room = self.cfg.max_source_len - len(pieces.prefix) - len(pieces.suffix)
            return [[*pieces.prefix, *answer_window(pieces, e, room), *pieces.suffix] for e in examples]
        enc = self.tok([e.source for e in examples], truncation=True, max_length=self.cfg.max_source_len)
        return [list(ids) for ids in enc["input_ids"]]

    def _pairs(self, examples: Sequence[Example]) -> list[tuple[list[int], list[int]]]:
        """(source ids, label ids). Labels are the tokenized target with the model's specials (BART: ``<s> y
        </s>``, as HF's BART recipes train and ``forced_bos_token_id`` decodes), minus a leading token equal to
        the decoder start (BERT2BERT's ``[CLS]``: the decoder is fed it, it need not learn to repeat it)."""
        start = _start_id(self.model.hf)
        enc = self.tok([e.target for e in examples], truncation=True, max_length=self.cfg.max_target_len)
        labels = [list(ids[1:]) if len(ids) > 1 and ids[0] == start else list(ids) for ids in enc["input_ids"]]
        return list(zip(self._sources(examples), labels, strict=True))

    # ---- System protocol
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with using_threads(self.cfg.threads):
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        from systems.presets import seeded_subset
        from systems.training import DEV_CURVE_EXAMPLES, Trainer, train_config

        cfg, workdir = self.cfg, Path(workdir)
        if not task.train:
            raise ValueError(f"task {task.name} has no training examples")
        train = seeded_subset(task.train, cfg.train_examples, cfg.seed)
        hf, self.tok = build_model(cfg.model, cfg.seed)
        self.model = _loss_module()(hf, _pad_id(hf, self.tok), cfg.label_smoothing)
        pairs = self._pairs(train)
        tcfg = train_config(cfg, log_every=max(1, cfg.steps // 20), device=self.device)
        # resumable: the trainer restores the newest checkpoint in workdir/checkpoints; after the final step
        # it trains nothing and leaves the final weights loaded
        result = Trainer(tcfg, workdir).fit(
            self.model,
            pairs,
            _Collate(_pad_id(hf, self.tok), _start_id(hf), cfg.pad_multiple),
            lambda m, b: m(b),
            lengths=[len(s) + len(t) for s, t in pairs],
            dev=self._pairs(list(task.dev)[:DEV_CURVE_EXAMPLES]) if task.dev else None,
        )
        self.fit_result = {**result.to_json(), "n_train": len(pairs), "train_steps": cfg.steps}
        (workdir / "fit.json").write_text(json.dumps(self.fit_result, indent=1))

    def decode(self, examples: Sequence[Example]) -> list[str]:
        """Batches of similar source length (less padding), one whitespace-normalised line per example."""
        if self.model is None:
            raise RuntimeError(f"{self.name}: call fit() before decode()")
        srcs = self._sources(examples)
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
        out: list[str] = [""] * len(srcs)
        bs = self.cfg.decode_batch_size
        with using_threads(self.cfg.threads):
            for k in range(0, len(order), bs):
                chunk = order[k : k + bs]
                for i, text in zip(chunk, self._generate([srcs[i] for i in chunk]), strict=True):
                    out[i] = text
        return out

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """One padded ``generate`` call in the given order (no length forcing, as in :meth:`decode_one`)."""
        self.refuse_forced_length(None if forced_lengths is None else len(forced_lengths))
        if self.model is None:
            raise RuntimeError(f"{self.name}: call fit() before decode()")
        with using_threads(self.cfg.threads):
            return list(self._generate(self._sources(examples)))

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        return self.decode([example])[0]

    def _generate(self, sources: list[list[int]]) -> list[str]:
        import torch

        cfg, hf = self.cfg, self.model.hf
        hf.eval()
        pad = _pad_id(hf, self.tok)
        device = next(hf.parameters()).device
        width = max(len(s) for s in sources)
        ids = torch.full((len(sources), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sources), width), dtype=torch.long)
        for b, s in enumerate(sources):
            ids[b, : len(s)] = torch.tensor(s)
            mask[b, : len(s)] = 1
        with torch.inference_mode():
            out = hf.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                do_sample=False,
                num_beams=cfg.beam_size,
                early_stopping=cfg.beam_size > 1,  # fairseq: stop once beam_size hypotheses are finished
                length_penalty=cfg.length_penalty,
                no_repeat_ngram_size=cfg.no_repeat_ngram,
                min_new_tokens=cfg.min_len,  # generated tokens, as fairseq's --min-len
                max_new_tokens=cfg.max_decode_len,
                decoder_start_token_id=_start_id(hf),
                eos_token_id=_eos_id(hf, self.tok),
                pad_token_id=pad,
            )
        texts = self.tok.batch_decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return [" ".join(t.split()) for t in texts]  # one line each: no newlines, no double spaces


# ---- models
def build_model(spec: str, seed: int) -> tuple[Any, Any]:
    """The (HF seq2seq model, tokenizer) named by a ``model`` value (see :class:`HFSeq2SeqConfig`)."""
    import torch

    from bench.api.checkpoints import resolve_checkpoint

    torch.manual_seed(seed)  # the random parts (tiny models, BERT2BERT's new cross-attention) are seeded
    with _quiet_hf():
        if spec in ("tiny-bart", "tiny-bert2bert"):
            tok = _auto_tokenizer(resolve_checkpoint("minilm-l6"))
            return _tiny(spec, tok), tok
        if spec.startswith("bert2bert:"):
            return bert2bert(spec.split(":", 1)[1])
        from transformers import AutoModelForSeq2SeqLM

        path = resolve_checkpoint(spec)
        try:
            model = AutoModelForSeq2SeqLM.from_pretrained(str(path))
        except ValueError as err:  # an encoder-only or decoder-only checkpoint
            raise ValueError(
                f"model '{spec}' ({path}) is not a seq2seq (encoder-decoder) checkpoint: {err}. For a BERT-layout "
                f"encoder use --set model=bert2bert:{spec}."
            ) from err
        return model, _auto_tokenizer(path)


def bert2bert(backbone: str) -> tuple[Any, Any]:
    """BERT2BERT (Rothe et al. 2020): encoder and decoder both warm-started from ``backbone``; the decoder gets
    causal self-attention and a new cross-attention; it starts from [CLS], ends with [SEP], pads with [PAD]."""
    from transformers import EncoderDecoderModel

    from bench.api.checkpoints import resolve_checkpoint

    path = str(resolve_checkpoint(backbone))
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(path, path)
    tok = _auto_tokenizer(path)
    _set_special_tokens(model, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    return model, tok


def _tiny(spec: str, tok: Any) -> Any:
    """A random 2-layer model over the MiniLM (BERT uncased) vocabulary: smoke runs without a download."""
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        BertConfig,
        EncoderDecoderConfig,
        EncoderDecoderModel,
    )

    t = TINY
    cls, sep, pad, vocab = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, len(tok)
    model: Any
    if spec == "tiny-bart":
        cfg = BartConfig(  # type: ignore[call-arg]  # forced_bos_token_id is a generation kwarg BartConfig takes
            vocab_size=vocab, d_model=t["hidden"], encoder_layers=t["layers"], decoder_layers=t["layers"],
            encoder_attention_heads=t["heads"], decoder_attention_heads=t["heads"], encoder_ffn_dim=t["ffn"],
            decoder_ffn_dim=t["ffn"], max_position_embeddings=t["positions"], pad_token_id=pad, bos_token_id=cls,
            eos_token_id=sep, decoder_start_token_id=cls, forced_bos_token_id=None, forced_eos_token_id=None,
        )
        model = BartForConditionalGeneration(cfg)
    else:
        kw = dict(vocab_size=vocab, hidden_size=t["hidden"], num_hidden_layers=t["layers"],
                  num_attention_heads=t["heads"], intermediate_size=t["ffn"], max_position_embeddings=t["positions"],
                  pad_token_id=pad)
        enc, dec = BertConfig(**kw), BertConfig(**kw, is_decoder=True, add_cross_attention=True)
        model = EncoderDecoderModel(EncoderDecoderConfig.from_encoder_decoder_configs(enc, dec))
    _set_special_tokens(model, cls, sep, pad)
    return model


def _set_special_tokens(model: Any, start: int, eos: int, pad: int) -> None:
    for cfg in (model.config, model.generation_config):
        cfg.decoder_start_token_id, cfg.eos_token_id, cfg.pad_token_id = start, eos, pad


def _auto_tokenizer(path: Any) -> Any:
    """The checkpoint's tokenizer. A WordPiece decoder keeps pieces apart ("king ?", "what ' s"): the QG and
    Quora references are BERT-basic-tokenized and the other BERT systems decode so (systems.backbone.tokenizer);
    the HF decoder's cleanup would glue punctuation ("king?") and cost n-gram matches."""
    from tokenizers import decoders
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    backend = getattr(tok, "backend_tokenizer", None)  # slow (Python) tokenizers have none
    if backend is not None and isinstance(backend.decoder, decoders.WordPiece):
        backend.decoder.cleanup = False
    return tok


def _start_id(hf: Any) -> int:
    start = hf.generation_config.decoder_start_token_id
    start = hf.config.decoder_start_token_id if start is None else start
    if start is None:
        raise ValueError(f"{type(hf).__name__}: no decoder_start_token_id in its config or generation config")
    return int(start)


def _eos_id(hf: Any, tok: Any) -> int | list[int]:
    eos = hf.generation_config.eos_token_id
    return tok.eos_token_id if eos is None else eos


def _pad_id(hf: Any, tok: Any) -> int:
    pad = tok.pad_token_id if tok.pad_token_id is not None else hf.config.pad_token_id
    if pad is None:
        raise ValueError(f"{type(hf).__name__}: the tokenizer and config define no pad token")
    return int(pad)


@cache
def _loss_module() -> type:
    """The training wrapper class, defined on first use so that importing this module needs no torch."""
    from torch import Tensor, nn

    from systems.training.losses import fairseq_smoothed_loss

    class Seq2SeqLoss(nn.Module):
        """Teacher-forced HF forward + fairseq's label-smoothed CE over the real target tokens (pad excluded).
        ``COMPILE_UNIT``: with ``compile=True`` the shared trainer compiles this forward for training only."""

        COMPILE_UNIT = True

        def __init__(self, hf: nn.Module, pad_id: int, eps: float) -> None:
            super().__init__()
            self.hf, self.pad_id, self.eps = hf, pad_id, eps

        def forward(self, batch: dict[str, Tensor]) -> Tensor:
            logits = self.hf(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                decoder_input_ids=batch["decoder_input_ids"],
                decoder_attention_mask=batch["decoder_attention_mask"],
                use_cache=False,
            ).logits
            return fairseq_smoothed_loss(
                logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1), self.eps, pad_id=self.pad_id
            )

    return Seq2SeqLoss


class _Collate:
    """(source ids, label ids) pairs -> padded tensors; the decoder reads ``[start] + labels[:-1]``."""

    def __init__(self, pad_id: int, start_id: int, multiple: int) -> None:
        self.pad, self.start, self.multiple = pad_id, start_id, multiple

    def __call__(self, items: list[tuple[list[int], list[int]]], rng: Any) -> dict[str, Any]:
        import torch

        from systems.training.batching import pad_length

        n = len(items)
        s_len = pad_length(max(len(s) for s, _ in items), self.multiple)
        t_len = pad_length(max(len(t) for _, t in items), self.multiple)
        src = torch.full((n, s_len), self.pad, dtype=torch.long)
        dec = torch.full((n, t_len), self.pad, dtype=torch.long)
        labels = torch.full((n, t_len), self.pad, dtype=torch.long)
        src_mask = torch.zeros((n, s_len), dtype=torch.long)
        dec_mask = torch.zeros((n, t_len), dtype=torch.long)
        for b, (s, t) in enumerate(items):
            src[b, : len(s)], src_mask[b, : len(s)] = torch.tensor(s), 1
            labels[b, : len(t)], dec_mask[b, : len(t)] = torch.tensor(t), 1
            dec[b, : len(t)] = torch.tensor([self.start, *t[:-1]])
        return {"input_ids": src, "attention_mask": src_mask, "decoder_input_ids": dec,
                "decoder_attention_mask": dec_mask, "labels": labels}


@contextlib.contextmanager
def _quiet_hf() -> Iterator[None]:
    """Loading without transformers' progress bars and load reports (BERT2BERT's "newly initialized
    cross-attention" table is expected, not news); restored afterwards."""
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def make(variant: str, budget: str, overrides: Mapping[str, Any] | None = None) -> HFSeq2SeqSystem:
    """``hf_seq2seq`` (any model, ``--set model=``), ``bart_large`` (fairseq's BART recipe) or
    ``bert2bert_minilm_l6`` (the offline cpu row) under a budget."""
    return HFSeq2SeqSystem(variant, budget, make_config(variant, budget, dict(overrides or {})))


def _source_window(window: str, task: TaskInfo) -> str:
    """The window a run on ``task`` really reads: answer windows exist only where examples carry an answer."""
    if window != "answer":
        return window
    return "answer" if task.family == "qg" else "head"


class _PlainPieces:
    """An HF tokenizer seen as ``systems.source_windows`` needs it: pieces without special tokens, ``sep_id``."""

    def __init__(self, tok: Any) -> None:
        if tok.sep_token_id is None:
            raise ValueError(f"source_window='answer' needs a separator token; {type(tok).__name__} has none "
                             "(use source_window=head)")
        self.tok, self.sep_id = tok, tok.sep_token_id
        # the special tokens the tokenizer puts around one sequence ([CLS] x [SEP], <s> x </s>), read off a probe
        probe = self.encode("a")
        full = list(tok.encode("a"))
        at = next(i for i in range(len(full)) if full[i : i + len(probe)] == probe)
        self.prefix, self.suffix = full[:at], full[at + len(probe) :]

    def encode(self, text: str) -> list[int]:
        # a whole paragraph may exceed the model's positions; the window crops it, so no length warning
        return list(self.tok.encode(text, add_special_tokens=False, verbose=False))

