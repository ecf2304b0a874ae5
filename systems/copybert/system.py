"""The System adapter for the CopyBERT variants (registry factories at the bottom).

Module-level imports stay light; torch, the backbone and the trainer load inside methods.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.copybert.features import Feature, Layout
from systems.copybert.presets import CITATION, VARIANTS, CopyBERTConfig, apply_overrides, preset
from systems.presets import seeded_subset, without_head_window
from systems.saved_run import VOCAB, open_run, write_run_files

META = "copybert_model.json"
BEST = "best"
_QMARKS = re.compile(r"(?: \?)+")


class CopyBERTSystem(System):
    """Train with the offset-by-one teacher-forced NLL; decode with the reference beam search, batch 1.

    ``decode`` and ``decode_one`` run the same per-example search (the reference decodes with batch
    1, recomputing the whole sequence at every step), so they give the same text.
    """

    def __init__(self, cfg: CopyBERTConfig) -> None:
        self.cfg = cfg
        self.model: Any = None
        self.tok: Any = None
        self.layout: Layout | None = None
        self.train_result: dict[str, Any] | None = None
        self.head_missing: list[str] = []
        self.backbone_name = cfg.backbone
        self.loaded_from: dict[str, Any] | None = None

    #: a variant is its settings (backbone, copy mode): variants that resolve to the same ones share a model
    model_siblings = tuple(VARIANTS)
    #: search settings: a `--set no_repeat_ngram=3` run decodes the plain run's checkpoint
    decode_only_overrides = ("beam_size", "n_best", "max_decode_len", "decode_doc_stride", "decode_cache",
                             "length_penalty", "no_repeat_ngram")

    @property
    def needs_training(self) -> bool:  # type: ignore[override]  # a property where the base has a default
        """False when decoding another run's model (``init_from``): the harness then skips loading
        the training split, which such a run never reads."""
        return not self.cfg.init_from

    def models(self) -> Sequence[Any]:
        return [self.model] if self.model is not None else []

    # ------------------------------------------------------------------ describe
    def missing_weights(self) -> str | None:
        """The pretrained backbone when it has no offline copy (tiny smoke models and init_from runs load none)."""
        from bench.api.checkpoints import missing_checkpoint

        cfg = self.cfg
        return None if cfg.tiny or cfg.init_from else missing_checkpoint(cfg.backbone)

    def describe(self) -> SystemInfo:
        cfg = self.cfg
        paper_backbone = VARIANTS[cfg.variant][0]
        label = f"tiny({cfg.backbone} vocab)" if cfg.tiny else cfg.backbone
        if cfg.backbone != paper_backbone:
            label += f" (stands in for {paper_backbone})"
        config = without_head_window({k: v for k, v in asdict(cfg).items() if k not in ("variant", "budget")})
        if self.head_missing:
            config["mlm_head_missing"] = self.head_missing
        if self.train_result is not None:
            config["train"] = self.train_result
        if self.loaded_from is not None:
            config["loaded_from"] = self.loaded_from
        return SystemInfo(
            name=cfg.variant,
            family="AR",
            iterations="n",
            citation=CITATION,
            backbone=label,
            budget=cfg.budget,
            config=config,
        )

    # ------------------------------------------------------------------ building
    def _layout(self, tok: Any) -> Layout:
        cfg = self.cfg
        return Layout(
            cls_id=tok.cls_id,
            mask_id=tok.mask_id,
            sep_id=tok.sep_id,
            max_seq_length=cfg.max_seq_length,
            doc_stride=cfg.doc_stride,
            max_query_length=cfg.max_query_length,
            max_decode_length=cfg.max_decode_len,
            decode_doc_stride=cfg.decode_doc_stride,
            keep_out_of_span=cfg.keep_out_of_span_windows,
            source_window=cfg.source_window,
        )

    def _wrap(self, backbone: Any) -> Any:
        from systems.copybert.model import CopyBERT

        cfg = self.cfg
        return CopyBERT(
            backbone,
            copy=cfg.copy,
            copy_attention=cfg.copy_attention,
            normal_copy_columns=cfg.normal_copy_columns,
            scatter_segment_bug=cfg.normal_copy_scatter_bug,
        )

    def _build(self) -> tuple[Any, Any, dict[str, Any]]:
        import torch

        from systems.backbone import WordPieceTokenizer, build_tokenizer, load_backbone, tiny_backbone

        cfg = self.cfg
        torch.manual_seed(cfg.seed)
        if cfg.tiny:
            tok = build_tokenizer(lowercase=True if cfg.lowercase is None else cfg.lowercase)
            t = cfg.tiny
            backbone = tiny_backbone(
                vocab_size=tok.vocab_size,
                hidden=t["hidden"],
                layers=t["layers"],
                heads=t["heads"],
                intermediate=t["intermediate"],
                max_position=512,
                dropout=0.1,
                seed=cfg.seed,
            )
            model = self._wrap(backbone)
            return model, tok, {"name": f"tiny:{cfg.backbone}", "lowercase": tok.lowercase}
        backbone, tok, info = load_backbone(cfg.backbone)
        if cfg.lowercase is not None and cfg.lowercase != info["lowercase"]:
            tok = WordPieceTokenizer(Path(info["path"]) / VOCAB, lowercase=cfg.lowercase)
        model = self._wrap(backbone)
        self.head_missing = model.head.load_hf(info["head_state"])
        if (
            self.head_missing
        ):  # §1.8: SpanBERT may lack cls.predictions.* (only the tied decoder is pretrained)
            print(
                f"[copybert] {cfg.backbone}: MLM head tensors missing, randomly initialised: "
                f"{self.head_missing}",
                file=sys.stderr,
            )
        return model, tok, {"name": cfg.backbone, "lowercase": tok.lowercase}

    # ------------------------------------------------------------------ training
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with using_threads(self.cfg.threads):
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        if self.cfg.init_from:
            self.load(Path(self.cfg.init_from))
            return
        cfg = self.cfg
        model, tok, info = self._build()
        self.tok, self.layout = tok, self._layout(tok)
        train = seeded_subset(task.train, cfg.train_examples, cfg.seed)
        dev = seeded_subset(task.dev, cfg.dev_examples, cfg.seed)
        feats = [f for ex in train for f in self.layout.train_features(tok, ex)]
        dev_feats = [f for ex in dev for f in self.layout.train_features(tok, ex)]
        self._write_meta(workdir, model, tok, info, task.name)
        steps = cfg.steps if cfg.steps is not None else int(len(train) / cfg.batch_size * cfg.epochs)
        self.train_result = self._train(model, feats, dev_feats, max(steps, 1), workdir)
        self.train_result.update(
            n_train_examples=len(train), n_train_windows=len(feats), n_dev_windows=len(dev_feats)
        )
        self.model = model.eval()

    def _train(self, model: Any, feats: list[Feature], dev: list[Feature], steps: int, workdir: Path) -> dict:
        from safetensors.torch import load_model, save_model

        from systems.copybert.data import collate, dev_loss
        from systems.training import Trainer, train_config

        cfg = self.cfg
        best_dir = workdir / BEST
        best_file = best_dir / "best.json"
        best = json.loads(best_file.read_text()) if best_file.is_file() else {"step": 0, "dev_loss": None}

        def evaluate(done: int) -> None:
            loss = dev_loss(model, dev, cfg.dev_batch_size)
            model.train()
            with (workdir / "dev_log.jsonl").open("a") as fh:  # the record's training curve
                fh.write(json.dumps({"step": done, "dev_loss": loss}) + "\n")
            if best["dev_loss"] is None or loss < best["dev_loss"]:
                best.update(step=done, dev_loss=loss)
                best_dir.mkdir(exist_ok=True)
                save_model(model, str(best_dir / "model.safetensors"))
                best_file.write_text(json.dumps(best))

        def on_step(done: int, _loss: float) -> None:
            if dev and cfg.eval_every and (done % cfg.eval_every == 0 or done == steps):
                evaluate(done)

        tcfg = train_config(cfg, steps=steps, log_every=10, progress=cfg.budget != "smoke",  # quiet tests
                            device=self.device)
        result = Trainer(tcfg, workdir, on_step=on_step).fit(
            model,
            feats,
            lambda items, rng: collate(items, multiple=cfg.pad_multiple),
            lambda m, batch: m(**batch),
            lengths=[len(f.context) + len(f.question) for f in feats],
        )
        if best_file.is_file():  # dev-loss early stopping: keep the best checkpoint (reference)
            load_model(model, str(best_dir / "model.safetensors"))
        return {**result.to_json(), "losses": result.losses[-5:], "best": dict(best)}

    def _write_meta(self, workdir: Path, model: Any, tok: Any, info: dict[str, Any], task: str) -> None:
        config = asdict(self.cfg)
        written = workdir / META
        if written.is_file():  # a sibling variant resumes or reuses this model: it keeps its trainer's name
            config["variant"] = json.loads(written.read_text())["config"]["variant"]
        meta = {
            "config": config,
            "task": task,
            "backbone": info["name"],
            "lowercase": info["lowercase"],
            "backbone_config": model.backbone.config.to_hf(),
        }
        write_run_files(workdir, META, tok, meta)

    # ------------------------------------------------------------------ loading
    def load(self, workdir: Path) -> CopyBERTSystem:
        """Rebuild a finished run's model from its workdir (best dev-loss weights, else last checkpoint)."""
        run = open_run(Path(workdir), META, "CopyBERT", keys=("config",), best=BEST)
        if run.meta["config"]["copy"] != self.cfg.copy:
            raise ValueError(
                f"{run.workdir} holds a copy='{run.meta['config']['copy']}' model; "
                f"this system is copy='{self.cfg.copy}'"
            )
        self.tok = run.tokenizer()
        self.layout = self._layout(self.tok)
        self.model = run.load(self._wrap)
        self.loaded_from = run.provenance(run.meta["config"]["variant"])
        return self

    # ------------------------------------------------------------------ decoding
    def _require_model(self) -> None:
        if self.model is None:
            raise RuntimeError(
                f"{self.cfg.variant}: call fit(task, workdir) (or set init_from) before decoding"
            )

    def decode(self, examples: Sequence[Example]) -> list[str]:
        return [self.decode_one(ex) for ex in examples]

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self.refuse_forced_length(forced_length)
        self._require_model()
        assert self.layout is not None
        feat = self.layout.decode_feature(self.tok, example)
        return self.text(self.generate(feat))

    def search_config(self) -> Any:
        """The reference's beam search (§1.7) as the shared search's ``opennmt`` rule: ``[PAD]`` is never
        emitted (§1.4 ⚠), EOS is allowed from the first step, and the output drops the last token."""
        from systems.decoding import SearchConfig

        cfg, tok = self.cfg, self.tok
        return SearchConfig(
            beam_size=cfg.beam_size,
            max_len=cfg.max_decode_len,
            min_len=0,
            eos_id=tok.sep_id,
            length_penalty=cfg.length_penalty,
            no_repeat_ngram=cfg.no_repeat_ngram,
            forbidden=frozenset({tok.pad_id}),
            rule="opennmt",
            n_best=cfg.n_best,
        )

    def generate(self, feat: Feature) -> list[int]:
        """Beam search from a decoding window; returns the output wordpiece ids (§1.7 token rules)."""
        import torch

        from systems.copybert.data import CachedStepScorer, StepScorer
        from systems.decoding import PrefixSteps, search

        scorer = (CachedStepScorer if self.cfg.decode_cache else StepScorer)(self.model, feat)
        with torch.inference_mode(), using_threads(self.cfg.threads):
            return search(PrefixSteps(scorer), [()], 1, self.search_config())[0]

    def text(self, ids: Sequence[int]) -> str:
        """Wordpieces joined by spaces, repeated " ?" collapsed, then " ##" merged (as the eval script)."""
        toks = " ".join(self.tok.convert_ids_to_tokens(ids))
        toks = _QMARKS.sub(" ?", toks)
        return toks.replace(" ##", "").strip()



def make(variant: str, budget: str, overrides: Mapping[str, Any] | None = None) -> CopyBERTSystem:
    """Build a variant under a budget with overrides (the registry factories call this)."""
    return CopyBERTSystem(apply_overrides(preset(variant, check_budget(budget)), dict(overrides or {})))
