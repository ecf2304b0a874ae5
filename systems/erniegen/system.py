"""The System adapter for ERNIE-GEN fine-tuning (registry factories at the bottom).

Module-level imports stay light; torch, the backbone and the trainer load inside methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.erniegen.presets import CITATION, ErnieGenConfig, apply_overrides, preset
from systems.presets import seeded_subset, without_head_window
from systems.saved_run import open_run, write_run_files

ATTN = "[ATTN]"
META = "erniegen_model.json"


class ErnieGenSystem(System):
    """ERNIE-GEN seq2seq fine-tuning: two-stream infilling training, cached infilling decoding."""

    #: the shared trainer scores dev for the curve only and keeps the last checkpoint
    selects_on_dev = False
    batched_decode = True  # decode_batch is one padded batch

    def __init__(self, cfg: ErnieGenConfig) -> None:
        self.cfg = cfg
        self.model: Any = None
        self.encoder: Any = None
        self.train_result: dict[str, Any] | None = None
        self.backbone_note = ""
        self.loaded_from: dict[str, Any] | None = None

    #: search settings: a `--set no_repeat_ngram=3` run decodes the plain run's model (``max_decode_len`` is
    #: not one of them: it sizes the training source's room in the position table, ``_encoder``)
    decode_only_overrides = ("beam_size", "length_penalty", "no_repeat_ngram", "decode_batch_size")

    @property
    def needs_training(self) -> bool:  # type: ignore[override]  # a property where the base has a default
        """False when decoding another run's model (``init_from``): the harness then skips loading
        the training split, which such a run never reads."""
        return not self.cfg.init_from

    def models(self) -> Sequence[Any]:
        return [self.model] if self.model is not None else []

    # ------------------------------------------------------------------ describe
    def missing_weights(self) -> str | None:
        """The pretrained backbone when it has no offline copy (the tiny smoke model and init_from runs load none)."""
        from bench.api.checkpoints import missing_checkpoint

        cfg = self.cfg
        return None if cfg.backbone == "tiny" or cfg.init_from else missing_checkpoint(cfg.backbone)

    def describe(self) -> SystemInfo:
        cfg = self.cfg
        config = without_head_window({k: v for k, v in asdict(cfg).items() if k not in ("variant", "budget")})
        if self.train_result is not None:
            config["train"] = self.train_result
        if self.loaded_from is not None:
            config["loaded_from"] = self.loaded_from
        if cfg.budget == "paper":
            backbone = f"{cfg.backbone} (ERNIE-GEN Paddle checkpoint converted with systems.erniegen.paddle)"
        elif cfg.budget == "cpu":
            backbone = "minilm-l6 + added [ATTN] token (cpu budget stand-in for the ERNIE-GEN checkpoint)"
        else:
            backbone = "tiny random encoder over the bert-base-uncased vocab + [ATTN] (smoke budget)"
        return SystemInfo(
            name=cfg.variant,
            family="AR",
            iterations="n",
            citation=CITATION,
            backbone=backbone,
            budget=cfg.budget,
            config=config,
        )

    # ------------------------------------------------------------------ model
    def _build(self) -> tuple[Any, Any]:
        """(ErnieGen model, tokenizer) for the configured backbone, with [ATTN] in the vocab."""
        import torch

        from systems.backbone import WordPieceTokenizer, build_tokenizer, load_backbone, tiny_backbone
        from systems.erniegen.model import ErnieGen, set_dropout

        cfg = self.cfg
        torch.manual_seed(cfg.seed)
        n_types = cfg.tgt_type_id + 1
        head_state: dict[str, Any] = {}
        if cfg.backbone == "tiny":
            base = build_tokenizer()
            vocab = [base.id_to_token[i] for i in range(base.vocab_size)] + [ATTN]
            t = cfg.tiny
            bb = tiny_backbone(
                vocab_size=len(vocab), hidden=t["hidden"], layers=t["layers"], heads=t["heads"],
                intermediate=t["intermediate"], max_position=512, type_vocab_size=n_types, seed=cfg.seed,
            )
            lowercase = True
        else:
            bb, base, info = load_backbone(cfg.backbone, type_vocab_size=n_types)
            head_state = info["head_state"]
            lowercase = info["lowercase"]
            vocab = [base.id_to_token[i] for i in range(base.vocab_size)]
            if ATTN not in base.vocab:
                vocab.append(ATTN)
                add_token(bb, init_from=base.mask_id)
                self.backbone_note = f"[ATTN] appended as id {len(vocab) - 1}, initialised from [MASK]"
        tok = WordPieceTokenizer(vocab, lowercase=lowercase, extra_special=[ATTN])
        model = ErnieGen(bb, attn_id=tok.vocab[ATTN], tgt_type_id=cfg.tgt_type_id)
        if head_state:
            head_state = _pad_head_bias(head_state, bb.config.vocab_size)
            model.head.load_hf(head_state)
        set_dropout(model, cfg.dropout)
        return model, tok

    def _encoder(self, tok: Any, max_position: int) -> Any:
        from systems.erniegen.data import Encoder

        cfg = self.cfg
        # continuous positions: source + target (or decode steps) must fit the position table
        room = max_position - max(cfg.max_target_len, cfg.max_decode_len + 1)
        return Encoder(tok, min(cfg.max_source_len, room), cfg.max_target_len, cfg.tgt_type_id, cfg.source_window)

    # ------------------------------------------------------------------ training
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with using_threads(self.cfg.threads):
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        from systems.erniegen.data import collate, scored
        from systems.training import DEV_CURVE_EXAMPLES, Trainer, paddle_smoothed_loss, train_config

        cfg = self.cfg
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        if cfg.init_from:
            self.load(Path(cfg.init_from))
            return
        model, tok = self._build()
        self.encoder = enc = self._encoder(tok, model.backbone.config.max_position)
        train = seeded_subset(task.train, cfg.train_examples, cfg.seed)
        pairs = enc.pairs(train)
        steps = cfg.steps if cfg.steps is not None else max(1, int(cfg.epochs * len(pairs)) // cfg.batch_size)
        meta = {"variant": cfg.variant, "budget": cfg.budget, "task": task.name, "steps": steps,
                "n_pairs": len(pairs), "backbone_config": model.backbone.config.to_hf(), "note": self.backbone_note,
                "lowercase": tok.lowercase, "tgt_type_id": cfg.tgt_type_id}
        write_run_files(workdir, META, tok, meta)
        v, pad, eps = model.backbone.config.vocab_size, tok.pad_id, cfg.label_smoothing

        def loss_fn(m: Any, batch: dict[str, Any]) -> Any:
            mask, labels = scored(batch["labels"], batch["tgt_len"])
            # the 30k-word head runs on the scored query rows only
            logits = m(batch["src"], batch["src_types"], batch["src_len"], batch["tgt_in"], batch["tgt_len"], rows=mask)
            return paddle_smoothed_loss(logits, labels[mask], eps)

        tcfg = train_config(
            cfg, steps=steps, schedule="paddle", optimizer="adamw", eps=1e-8, log_every=10,
            progress=cfg.budget != "smoke", device=self.device,
        )
        result = Trainer(tcfg, workdir).fit(
            model,
            pairs,
            lambda items, rng: collate(items, rng, pad, cfg.noise_prob, v, cfg.pad_multiple),
            loss_fn,
            lengths=[len(p.src) + len(p.tgt) for p in pairs],
            dev=enc.pairs(list(task.dev)[:DEV_CURVE_EXAMPLES]),
        )
        self.train_result = {**result.to_json(), "losses": result.losses[-5:], "n_pairs": len(pairs)}
        self.model = model.eval()

    # ------------------------------------------------------------------ loading
    def load(self, workdir: Path) -> ErnieGenSystem:
        """Rebuild a finished run's model from its workdir (its last checkpoint) for decoding.

        The decoding settings (beam, length penalty, lengths) are this system's; the model's
        shape (vocabulary with [ATTN], target segment id) is the saved run's.
        """
        from systems.erniegen.model import ErnieGen

        run = open_run(Path(workdir), META, "ERNIE-GEN", keys=("variant", "tgt_type_id"))
        type_id = run.meta["tgt_type_id"]
        if type_id != self.cfg.tgt_type_id:
            raise ValueError(
                f"{run.workdir / META}: the model was trained with tgt_type_id={type_id}; "
                f"decode it with --set tgt_type_id={type_id}"
            )
        tok = run.tokenizer(extra_special=[ATTN])
        if ATTN not in tok.vocab:
            raise ValueError(f"{run.workdir}/vocab.txt has no {ATTN} token: not an ERNIE-GEN run's vocabulary")
        self.model = run.load(lambda bb: ErnieGen(bb, attn_id=tok.vocab[ATTN], tgt_type_id=type_id))
        self.encoder = self._encoder(tok, self.model.backbone.config.max_position)
        self.loaded_from = run.provenance(run.meta["variant"])
        return self

    # ------------------------------------------------------------------ decoding
    def _decode_pairs(self, srcs: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[str]:
        import torch

        from systems.erniegen.data import pad_rows
        from systems.erniegen.decode import DecodeIds, infilling_decode

        enc, cfg = self.encoder, self.cfg
        ids, src_len = pad_rows([s for s, _ in srcs], enc.pad)
        types, _ = pad_rows([t for _, t in srcs], 0)
        dev = next(self.model.parameters()).device
        with torch.inference_mode(), using_threads(cfg.threads):
            out = infilling_decode(
                self.model, ids.to(dev), types.to(dev), src_len.to(dev), DecodeIds(enc.cls, enc.sep),
                beam_size=cfg.beam_size, alpha=cfg.length_penalty, max_len=cfg.max_decode_len,
                no_repeat_ngram=cfg.no_repeat_ngram,
            )
        return [enc.text(row) for row in out]

    def _require_model(self) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.cfg.variant}: call fit(task, workdir) (or set init_from) before decoding")

    def decode(self, examples: Sequence[Example]) -> list[str]:
        self._require_model()
        srcs = [self.encoder.example_source(ex) for ex in examples]
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i][0]))
        out = [""] * len(srcs)
        bs = self.cfg.decode_batch_size
        for start in range(0, len(order), bs):
            chunk = order[start : start + bs]
            for i, text in zip(chunk, self._decode_pairs([srcs[i] for i in chunk]), strict=True):
                out[i] = text
        return out

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """One padded batch in the given order (no length forcing: refused as in :meth:`decode_one`)."""
        self.refuse_forced_length(None if forced_lengths is None else len(forced_lengths))
        self._require_model()
        return self._decode_pairs([self.encoder.example_source(ex) for ex in examples])

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        self._require_model()
        return self._decode_pairs([self.encoder.example_source(example)])[0]


def add_token(backbone: Any, init_from: int) -> None:
    """Grow the word embeddings by one row (the new token's id is the old vocab size)."""
    import torch
    from torch import nn

    old = backbone.embeddings.word_embeddings
    new = nn.Embedding(old.num_embeddings + 1, old.embedding_dim, padding_idx=old.padding_idx)
    with torch.no_grad():
        new.weight[:-1] = old.weight
        new.weight[-1] = old.weight[init_from]
    backbone.embeddings.word_embeddings = new
    backbone.config.vocab_size = new.num_embeddings


def _pad_head_bias(state: dict[str, Any], vocab_size: int) -> dict[str, Any]:
    import torch

    key = "cls.predictions.bias"
    if key in state and state[key].shape[0] < vocab_size:
        b = state[key]
        state = {**state, key: torch.cat([b, b.new_zeros(vocab_size - b.shape[0])])}
    return state



def make(variant: str, budget: str, overrides: Mapping[str, Any] | None = None) -> ErnieGenSystem:
    """Build a variant under a budget with overrides (the registry factories call this)."""
    return ErnieGenSystem(apply_overrides(preset(variant, check_budget(budget)), dict(overrides or {})))
