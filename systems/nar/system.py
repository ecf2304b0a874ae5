"""The System adapter for the encoder NAT / MIST variants (registry factories at the bottom).

Module-level imports stay light; torch, the backbone and the trainer load inside methods.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.nar.presets import CITATION, CPU_STAND_INS, TWINS, NARConfig, apply_overrides, preset
from systems.presets import BudgetSize, resolve_twin, seeded_subset
from systems.saved_run import CHECKPOINTS, VOCAB, open_run, write_run_files

META = "nar_model.json"


def _backbone_label(cfg: NARConfig) -> str:
    """What the encoder is, as tables show it: ``random:bert-base shape(...)`` for timing-only builds."""
    prefix = "random:" if cfg.random_init else ""
    if cfg.weights == "random" and cfg.shape:
        return f"{prefix}{cfg.shape} shape ({cfg.backbone} vocab, untrained; timing only)"
    return prefix + (f"tiny({cfg.backbone} vocab)" if cfg.tiny else cfg.backbone)


class NARSystem(System):
    """Encoder-only NAT (GLAT) or MIST over a BERT-layout backbone.

    ``decode`` is batched (sorted by source length); ``decode_one`` is batch size 1 and accepts
    ``forced_length`` (target length incl. ``[SEP]``) for the meter. ``last_iterations`` holds the
    number of target passes of the latest decode call. ``compute_type`` (systems.compute) is applied to the
    trained model when it is placed and before each decode, never while it trains.
    """

    supports_forced_length = True
    batched_decode = True
    supports_random_weights = True
    #: settings that change decoding only: `bench run --set decode=mist_iter` reuses the plain run's checkpoint
    decode_only_overrides = ("decode", "iterations", "remove_repeat", "decode_batch_size", "compute_type")

    def __init__(self, cfg: NARConfig, name: str | None = None) -> None:
        self.cfg = cfg
        #: the registered name: the variant, or its compute-type twin (``encoder_bert_int8``)
        self.name = name or cfg.variant
        self._compute: Any = None
        self.model: Any = None
        self.encoder: Any = None
        self.size: BudgetSize | None = None
        self.last_iterations = 0
        self.train_result: dict[str, Any] | None = None
        self.loaded_from: dict[str, Any] | None = None

    @property
    def needs_training(self) -> bool:  # type: ignore[override]  # a property where the base has a default
        """False when decoding another run's checkpoint (``init_from``) or timing the untrained
        architecture (``weights=random``): the harness then skips loading the training split (XSum's
        needs the full corpus, which a speed column does not)."""
        return not self.cfg.init_from and self.cfg.weights != "random"

    @property
    def cpu_stand_in(self) -> str | None:  # type: ignore[override]  # a property where the base has a default
        """The MiniLM-L6 variant of the same method (presets.CPU_STAND_INS): the MIST tables' cpu rows (a
        compute-type twin's is that variant's twin)."""
        stand_in = CPU_STAND_INS.get(self.cfg.variant)
        if stand_in is None or self.name == self.cfg.variant:
            return stand_in
        return f"{stand_in}{self.name[len(self.cfg.variant):]}"

    @property
    def model_siblings(self) -> tuple[str, ...]:  # type: ignore[override]  # a property where the base has a default
        """A compute-type twin decodes its variant's trained model (same training settings, same workdir)."""
        return (self.cfg.variant,) if self.name != self.cfg.variant else ()

    def missing_weights(self) -> str | None:
        """The pretrained backbone when it has no offline copy; random-init and ``init_from`` runs load none."""
        from bench.api.checkpoints import missing_checkpoint

        cfg = self.cfg
        if cfg.random_init or cfg.init_from or cfg.weights == "random":
            return None
        return missing_checkpoint(cfg.backbone)

    def models(self) -> Sequence[Any]:
        return [self.model] if self.model is not None else []

    def weights_footprint(self) -> Mapping[str, Any] | None:
        """At int8 the Linear weights are int8 buffers, not parameters: counted here at their width."""
        if self.cfg.compute_type != "int8":
            return None
        from systems.compute import int8_footprint

        return int8_footprint(self.models())

    def place(self, device: str) -> None:
        """Placement, then the compute type applied to the model placed (a compute type the device cannot run
        is refused here, before any training)."""
        super().place(device)
        self._decode_compute().prepare(self.model, self.device)

    def _decode_compute(self) -> Any:
        if self._compute is None:
            from systems.compute import DecodeCompute

            self._compute = DecodeCompute(self.cfg.compute_type, self.name,
                                          before_int8=lambda model: model.token_head.fold_bias())
        return self._compute

    # ------------------------------------------------------------------ describe
    def describe(self) -> SystemInfo:
        cfg = self.cfg
        iterative = cfg.decode != "single" and cfg.iterations > 1
        config = {k: v for k, v in asdict(cfg).items() if k not in ("variant", "budget")}
        if config["source_window"] is None:  # the budget's per-task choice (added later): unset keeps the
            del config["source_window"]  # training keys of the runs recorded before it valid
        if self.size is not None:
            config["size"] = asdict(self.size)
        if self.train_result is not None:
            config["train"] = self.train_result
        if self.loaded_from is not None:
            config["loaded_from"] = self.loaded_from
        return SystemInfo(
            name=self.name,
            family="semi-NAR" if iterative else "NAR",
            iterations=cfg.iterations if iterative else 1,
            citation=CITATION,
            backbone=_backbone_label(cfg),
            budget=cfg.budget,
            config=config,
        )

    def training_settings(self, task: TaskInfo) -> Mapping[str, Any]:
        """The config with the budget's per-task sizing resolved into ``size`` (updates, batch, lengths,
        examples, lr, source layout): ``--set lr=5e-4`` equal to the table's value trains the same model,
        and a change of the table moves the key (the workdir) instead of tripping the sizing guard."""
        config = dict(self.describe().config)
        if self.cfg.init_from:
            return config  # decodes another run's model: nothing of its own is trained
        try:
            size = self._size(task)
        except ValueError:
            return config  # no sizing for this task at this budget: fit says so
        for name in (f.name for f in fields(BudgetSize)):
            config.pop(name, None)
        return {**config, "size": asdict(size)}

    def _size(self, task: TaskInfo) -> BudgetSize:
        """The budget's sizing for ``task``; the paper budget takes the task's own length limits."""
        size = self.cfg.size_for(task.name)
        if self.cfg.budget != "paper":
            return size
        return replace(size, max_source_len=task.max_source_len, max_target_len=task.max_target_len)

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
        size = self.size = self._size(task)
        model, tok, bb_info = self._build_model()
        from systems.nar.data import Encoder
        from systems.training import DEV_CURVE_EXAMPLES

        self.encoder = Encoder(
            tok, size.max_source_len, size.max_target_len, self.cfg.test_extra, size.source_window
        )
        if self.cfg.weights == "random":  # timing only: the untrained architecture, nothing to learn from
            self._write_meta(workdir, model, tok, bb_info, task.name)
            self.train_result = {"steps": 0, "weights": "random"}
            self.model = model.eval()
            return
        train = seeded_subset(task.train, size.train_examples, self.cfg.seed)
        pairs = self.encoder.pairs(train)
        if self.cfg.static_mix:
            pairs = pairs + self._mixed_pairs(task, workdir, train)
        self._write_meta(workdir, model, tok, bb_info, task.name)
        dev = self.encoder.pairs(list(task.dev)[:DEV_CURVE_EXAMPLES])
        self.train_result = self._train(model, pairs, size, workdir, dev)
        self.model = model.eval()

    def _build_model(self):
        import torch

        from systems.backbone import build_tokenizer, load_backbone, tiny_backbone
        from systems.nar.model import NATModel

        cfg = self.cfg
        torch.manual_seed(cfg.seed)
        if cfg.tiny:
            tok = build_tokenizer()
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
            info = {"name": f"tiny:{cfg.backbone}", "lowercase": True, "vocab_path": None}
        else:
            backbone, tok, info = load_backbone(cfg.backbone)
            info = {
                "name": cfg.backbone,
                "lowercase": info["lowercase"],
                "vocab_path": str(Path(info["path"]) / VOCAB),
            }
            if cfg.random_init:  # --clear_bert_weight: BERT init over the loaded config
                backbone.apply(backbone._init_weights)
        return NATModel(backbone), tok, info

    def _write_meta(self, workdir: Path, model: Any, tok: Any, bb_info: dict[str, Any], task: str) -> None:
        """Everything :meth:`load` needs to rebuild this model from ``workdir`` alone."""
        assert self.size is not None
        meta = {
            "variant": self.cfg.variant,
            "budget": self.cfg.budget,
            "task": task,
            "backbone": bb_info["name"],
            "random_init": self.cfg.random_init,
            "lowercase": bb_info["lowercase"],
            "backbone_config": model.backbone.config.to_hf(),
            "max_source_len": self.size.max_source_len,
            "max_target_len": self.size.max_target_len,
            "size": asdict(self.size),
        }
        _refuse_stale_workdir(workdir / META, meta)
        write_run_files(workdir, META, tok, meta)

    def _train(
        self, model: Any, pairs: list[Any], size: BudgetSize, workdir: Path, dev: list[Any] | None = None
    ) -> dict[str, Any]:
        from systems.nar.data import collate
        from systems.nar.glat import GlatConfig
        from systems.nar.train import Specials, StepConfig, loss_terms
        from systems.training import Trainer, latest_checkpoint, train_config
        from systems.training.checkpoint import read_state

        cfg, enc = self.cfg, self.encoder
        step_cfg = StepConfig(
            mist=cfg.mist,
            alpha=cfg.alpha,
            beta=cfg.beta,
            label_smoothing=cfg.label_smoothing,
            max_source_len=size.max_source_len,
            glat=GlatConfig(
                enabled=cfg.glat,
                ratio=cfg.glat_ratio,
                anneal=cfg.glat_anneal,
                loss_on_unrevealed_only=cfg.glat_loss_on_unrevealed_only,
                share_dropout_seed=cfg.glat_share_dropout_seed,
            ),
        )
        sp = Specials(enc.pad, enc.cls, enc.sep, enc.mask)
        ckpts = workdir / CHECKPOINTS
        last = latest_checkpoint(ckpts)
        state = {"done": int(read_state(last).get("step", 0)) if last else 0}

        def loss_fn(m: Any, batch: dict[str, Any]) -> Any:
            inner = getattr(m, "module", m)
            return loss_terms(inner, batch, step_cfg, sp, progress=state["done"] / max(size.steps, 1))["loss"]

        def on_step(done: int, _loss: float) -> None:
            state["done"] = done

        assert size.lr is not None  # size_for resolved the task's learning rate
        tcfg = train_config(
            cfg,
            device=self.device,
            steps=size.steps,
            batch_size=size.batch_size,
            lr=size.lr,
            warmup=float(cfg.warmup),
            log_every=10,
            progress=cfg.budget != "smoke",  # a bar for real runs; tests stay quiet
        )
        result = Trainer(tcfg, workdir, on_step=on_step).fit(
            model,
            pairs,
            lambda items, rng: collate(items, rng, enc.pad, cfg.pad_multiple),
            loss_fn,
            lengths=[len(p.src) + len(p.tgt) for p in pairs],
            dev=dev,
        )
        return {**result.to_json(), "losses": result.losses[-5:], "n_pairs": len(pairs)}

    def _mixed_pairs(self, task: TaskInfo, workdir: Path, train: Sequence[Example]) -> list[Any]:
        """Static mixing (Tables 4-5): ``([CLS] Y_p [SEP] X[1:], Y)`` with Y_p decoded once, single pass,
        by the trained no-mixing model (``mix_from``; trained here under ``workdir/nomix`` if absent)."""
        from systems.nar.data import Pair, pad_batch
        from systems.nar.decode import SpecialIds, decode
        from systems.nar.mist import mist_source

        cache = workdir / "mixed_sources.json"
        base = self.encoder.pairs(train)
        if not cache.is_file():
            fp32 = replace(self.cfg, compute_type="float32")  # training data: the teacher's own fp32 decode
            if self.cfg.mix_from:
                teacher = NARSystem(fp32).load(Path(self.cfg.mix_from), via="mix_from")
            else:
                nomix = replace(fp32, static_mix=False, variant=self.cfg.variant + ":nomix")
                teacher = NARSystem(nomix)
                teacher.fit(task, workdir / "nomix")
            enc, m = teacher.encoder, teacher.model
            ids = SpecialIds(enc.pad, enc.cls, enc.sep, enc.mask)
            order = sorted(range(len(base)), key=lambda i: len(base[i].src))
            mixed: dict[int, list[int]] = {}
            bs = self.cfg.decode_batch_size
            for start in range(0, len(order), bs):
                chunk = order[start : start + bs]
                src, src_len = pad_batch([base[i].src for i in chunk], enc.pad)
                out = decode(m, src, src_len, ids, clamp=(self.cfg.length_min, self.cfg.length_max))
                assert self.size is not None  # set by fit
                new, new_len = mist_source(
                    src, src_len, out.tokens, out.lengths, self.size.max_source_len, enc.cls, enc.sep, enc.pad
                )
                for row, i in enumerate(chunk):
                    mixed[i] = new[row, : int(new_len[row])].tolist()
            cache.write_text(json.dumps([mixed[i] for i in range(len(base))]))
        sources = json.loads(cache.read_text())
        return [Pair(tuple(s), p.tgt) for s, p in zip(sources, base, strict=True)]

    # ------------------------------------------------------------------ loading
    def load(self, workdir: Path, via: str = "init_from") -> NARSystem:
        """Rebuild the trained model of another run (``init_from``/``mix_from``, named by ``via`` in
        errors): meta, vocab, latest checkpoint."""
        from systems.nar.data import Encoder
        from systems.nar.model import NATModel

        run = open_run(
            Path(workdir), META, "NAR", keys=("max_source_len", "max_target_len", "size", "variant"), via=via
        )
        meta = run.meta
        self.model = run.load(NATModel)
        self.size = BudgetSize(**meta["size"])  # runs recorded before source_window read as "head"
        self.encoder = Encoder(
            run.tokenizer(), meta["max_source_len"], meta["max_target_len"], self.cfg.test_extra,
            self.size.source_window,
        )
        self.loaded_from = run.provenance(meta["variant"])
        return self

    # ------------------------------------------------------------------ decoding
    def _require_model(self) -> None:
        if self.model is None:
            raise RuntimeError(
                f"{self.cfg.variant}: call fit(task, workdir) (or set init_from) before decoding"
            )

    def _decode_ids(self, sources: list[tuple[int, ...]], forced: list[int] | None = None) -> list[str]:
        import torch

        from systems.nar.data import pad_batch
        from systems.nar.decode import SpecialIds, decode

        enc, cfg = self.encoder, self.cfg
        ids = SpecialIds(enc.pad, enc.cls, enc.sep, enc.mask)
        compute = self._decode_compute()
        model = compute.prepare(self.model, self.device)  # a no-op once placed; fit+decode without place too
        src, src_len = (t.to(self.device) for t in pad_batch(sources, enc.pad))
        with torch.inference_mode(), using_threads(cfg.threads), compute.context(self.device):
            out = decode(
                model,
                src,
                src_len,
                ids,
                method=cfg.decode,
                iterations=cfg.iterations,
                max_source_len=enc.max_source_len,
                forced_length=torch.tensor(forced, device=self.device) if forced is not None else None,
                clamp=(cfg.length_min, cfg.length_max),
            )
        self.last_iterations = out.passes
        texts = []
        for row in out.tokens.tolist():
            text = enc.text(row)
            texts.append(_remove_repeat(text) if cfg.remove_repeat else text)
        return texts

    def decode(self, examples: Sequence[Example]) -> list[str]:
        self._require_model()
        sources = self.encoder.sources(examples, test=True)
        order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
        out: list[str] = [""] * len(sources)
        passes = []
        bs = self.cfg.decode_batch_size
        for start in range(0, len(order), bs):
            chunk = order[start : start + bs]
            for i, text in zip(chunk, self._decode_ids([sources[i] for i in chunk]), strict=True):
                out[i] = text
            passes.append(self.last_iterations or 0)
        self.last_iterations = max(passes, default=0)
        return out

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """One padded batch in the given order (the sweep buckets, not the system); row i forced to
        ``forced_lengths[i]``."""
        self._require_model()
        if forced_lengths is not None and len(forced_lengths) != len(examples):
            raise ValueError(f"{len(forced_lengths)} forced lengths for {len(examples)} examples; pass one per item.")
        sources = self.encoder.sources(examples, test=True)
        return self._decode_ids(sources, None if forced_lengths is None else [int(n) for n in forced_lengths])

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        self._require_model()
        src = self.encoder.sources([example], test=True)
        return self._decode_ids(src, [forced_length] if forced_length is not None else None)[0]


def _remove_repeat(text: str) -> str:
    from bench.api.text import remove_repeat

    return remove_repeat(text)



def make(variant: str, budget: str, overrides: Mapping[str, Any] | None = None) -> NARSystem:
    """Build a variant (or its compute-type twin, presets.TWINS) under a budget with overrides (the registry
    factories call this)."""
    base, settings = resolve_twin(variant, dict(overrides or {}), TWINS)
    return NARSystem(apply_overrides(preset(base, check_budget(budget)), settings), name=variant)





def _refuse_stale_workdir(meta_path: Path, meta: dict[str, Any]) -> None:
    """A workdir trained under another sizing (a preset changed since) must not be resumed as if it were
    this run's: its checkpoints would silently stand for the new budget."""
    if not meta_path.is_file():
        return
    old = json.loads(meta_path.read_text(encoding="utf-8"))
    old_size, new_size = old.get("size") or {}, meta["size"]
    changed = {k: (old_size[k], v) for k, v in new_size.items() if k in old_size and old_size[k] != v}
    if changed:
        from bench.api.errors import UserError

        diff = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
        raise UserError(
            f"{meta_path.parent} was trained with another sizing ({diff}), e.g. because the preset changed "
            "since; delete that workdir (or set $BENCH_CACHE elsewhere) to train this run afresh."
        )
