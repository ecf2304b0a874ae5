"""The System adapter for the six fairseq baselines (registry factories at the bottom).

Module-level imports stay light: fairseq and torch load only inside ``fit``/decoding, so listing
systems or importing ``bench`` never needs the optional ``[fairseq]`` extra.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.api.system import System, SystemInfo, check_budget
from bench.api.threads import using_threads
from bench.api.types import Example, TaskInfo
from systems.fairseq_nat.flags import decoder_passes, generate_args, recipe_args, size_args, train_command
from systems.fairseq_nat.presets import CITATIONS, TWINS, FairseqConfig, apply_overrides, preset
from systems.presets import resolve_twin, seeded_subset

CHECKPOINTS = "checkpoints"
DICTS = "dicts"
META = "fairseq_run.json"

INSTALL_HINT = (
    "fairseq is not installed. It is the optional extra [fairseq]: pip install -e '.[fairseq]' "
    "(see the Makefile target for the cached wheel build)."
)


def require_fairseq() -> None:
    try:
        from systems.fairseq_nat.decode import import_fairseq_quietly

        import_fairseq_quietly()
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err


class FairseqSystem(System):
    """One fairseq model: binarise (cached) -> fairseq-train (subprocess) -> in-process generation.

    ``last_iterations`` holds the decoder passes of the latest decode call (the meter reads it).
    With ``weights=random`` the recipe's architecture is built untrained in-process instead
    (:mod:`.untrained`), for speed columns; ``decode_one(example, forced_length=L)`` then times it
    at the reference length (:mod:`.forcing`). ``compute_type`` (systems.compute) is applied to the loaded
    model when it is placed and before each decode; fairseq-train never sees it.
    """

    supports_forced_length = True
    supports_random_weights = True
    requires_modules = ("fairseq",)
    install_command = "make fairseq"
    #: generator settings only: `bench run --set iterations=4` (or a shorter max_len_b) decodes the plain
    #: run's checkpoint instead of training again (bench.runs.training_spec)
    decode_only_overrides = (
        "iterations", "iteration_convention", "force_max_iter", "eos_penalty", "length_beam", "beam", "lenpen",
        "no_repeat_ngram_size", "max_len_a", "max_len_b", "decode_batch_size", "checkpoint", "compute_type",
    )

    def __init__(self, cfg: FairseqConfig, name: str | None = None) -> None:
        self.cfg = cfg
        #: the registered name: the system, or its compute-type twin (``fairseq_nat_int8``)
        self.name = name or cfg.system
        self._compute: Any = None
        self.decoder: Any = None
        self.train_result: dict[str, Any] | None = None
        self.data_info: dict[str, Any] | None = None
        self.deviations: list[str] = []
        self.last_iterations = 0
        self.workdir: Path | None = None

    @property
    def model_siblings(self) -> tuple[str, ...]:  # type: ignore[override]  # a property where the base has a default
        """A compute-type twin decodes its system's trained model (same training settings, same workdir)."""
        return (self.cfg.system,) if self.name != self.cfg.system else ()

    @property
    def needs_training(self) -> bool:  # type: ignore[override]  # a property where the base has a default
        """False for untrained WordPiece models: their dictionary is the BERT vocab, no data needed."""
        return self.cfg.weights != "random" or self.cfg.vocab == "sentencepiece"

    #: config entries describe() derives from decode-only settings: not part of what training resolves to
    DERIVED_DECODE_FIELDS = ("fairseq_generate_args", "iter_decode_max_iter", "iterations_mapping")

    def training_settings(self, task: TaskInfo) -> Mapping[str, Any]:
        """The config without the generator flags derived from decode-only settings: `--set eos_penalty=1`
        (or `iterations`, `beam`, ...) decodes the plain run's model instead of keying a new workdir."""
        return {k: v for k, v in self.describe().config.items() if k not in self.DERIVED_DECODE_FIELDS}

    # ------------------------------------------------------------------ describe
    def describe(self) -> SystemInfo:
        cfg = self.cfg
        config: dict[str, Any] = {k: v for k, v in asdict(cfg).items() if k not in ("system", "budget")}
        config["fairseq_train_args"] = recipe_args(cfg) + size_args(cfg)
        config["fairseq_generate_args"] = generate_args(cfg)
        if not cfg.is_ar:
            config["iter_decode_max_iter"] = cfg.max_iter
            config["iterations_mapping"] = (
                "NAT: one pass (--iter-decode-max-iter 0)"
                if cfg.system == "fairseq_nat"
                else f"'{cfg.iterations} iterations' read as {cfg.iteration_convention}: "
                f"--iter-decode-max-iter {cfg.max_iter} = at most {cfg.max_iter + 1} decoder passes"
                + (" (forced)" if cfg.force_max_iter else " (adaptive early stop)")
            )
        if cfg.weights == "random":
            config["weights_note"] = (
                "untrained: the recipe's architecture with seeded random weights, built without fairseq-train; "
                "outputs are meaningless, for length-forced timing only"
            )
        for key, val in (("train", self.train_result), ("data", self.data_info)):
            if val is not None:
                config[key] = val
        if self.deviations:
            config["deviations"] = list(self.deviations)
        return SystemInfo(
            name=self.name,
            family=cfg.family,  # type: ignore[arg-type]
            iterations=decoder_passes(cfg),
            citation=CITATIONS[cfg.system],
            backbone="none (random init, fairseq)" + (", untrained" if cfg.weights == "random" else ""),
            budget=cfg.budget,
            config=config,
        )

    def models(self) -> Sequence[Any]:
        return [self.decoder.model] if self.decoder is not None else []

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
        self._decode_compute().prepare(self.decoder.model if self.decoder is not None else None, self.device)

    def _decode_compute(self) -> Any:
        if self._compute is None:
            from systems.compute import DecodeCompute
            from systems.fairseq_nat.decode import unfuse_attention

            self._compute = DecodeCompute(self.cfg.compute_type, self.name, before_int8=unfuse_attention)
        return self._compute

    @contextlib.contextmanager
    def _decoding(self, forced: bool = False) -> Iterator[Any]:
        """The decoder, its model at the run's compute type (prepared once), inside the run's threads and the
        compute type's context (autocast on a GPU)."""
        dec = self._need_model(forced=forced)
        compute = self._decode_compute()
        compute.prepare(dec.model, self.device)
        with using_threads(self.cfg.threads), compute.context(self.device):
            yield dec

    # ------------------------------------------------------------------ training
    def fit(self, task: TaskInfo, workdir: Path) -> None:
        with using_threads(self.cfg.threads):  # fairseq-train and -preprocess inherit its OpenMP/MKL setting
            self._fit(task, workdir)

    def _fit(self, task: TaskInfo, workdir: Path) -> None:
        require_fairseq()
        import torch

        from systems.fairseq_nat.data import binarise
        from systems.fairseq_nat.train import run_training

        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        cfg = self.cfg
        if cfg.max_source_len is None or cfg.max_target_len is None:
            cfg = replace(
                cfg,
                max_source_len=cfg.max_source_len or task.max_source_len,
                max_target_len=cfg.max_target_len or task.max_target_len,
            )
        cpu = torch.device(self.device).type != "cuda"  # the harness placed this system; fairseq obeys
        if cpu and cfg.fp16:
            cfg = replace(cfg, fp16=False)
            self.deviations.append("fp16 off: trained on the CPU (the recipe trains in fp16 on a GPU)")
        self.cfg = cfg
        if cfg.weights == "random":
            self._build_untrained(task, workdir)
            return
        train = seeded_subset(task.train, cfg.train_examples, cfg.seed)
        dev = seeded_subset(task.dev, cfg.dev_examples, cfg.seed)
        if not train or not dev:
            raise ValueError(
                f"{cfg.system}: task '{task.name}' needs non-empty train and dev splits to train."
            )
        data = binarise(cfg, train, dev)
        self.data_info = {
            "key": data.key,
            "dir": str(data.bin_dir),
            "train_pairs": data.n_train,
            "valid_pairs": data.n_valid,
            "vocab": data.vocab,
        }
        dict_dir = workdir / DICTS
        dict_dir.mkdir(exist_ok=True)
        for name in ("dict.src.txt", "dict.tgt.txt"):
            shutil.copyfile(data.bin_dir / name, dict_dir / name)
        if data.spm_model is not None:
            shutil.copyfile(data.spm_model, dict_dir / data.spm_model.name)
        save_dir = workdir / CHECKPOINTS
        args = train_command(cfg, str(data.bin_dir), str(save_dir), cpu)
        recipe = json.dumps(recipe_args(cfg) + size_args(cfg))
        self.train_result = run_training(args, recipe, data.key, save_dir, cfg.max_update,
                                         extra_env=gpu_env(self.device))
        (workdir / META).write_text(json.dumps({"config": asdict(cfg), "data": self.data_info}, indent=1))
        self.workdir = workdir
        self.load(workdir)

    # ------------------------------------------------------------------ loading
    def load(self, workdir: Path) -> None:
        """Load this run's checkpoint (``cfg.checkpoint``: best, else last) after its hash check."""
        from systems.fairseq_nat.checkpoints import Manifest
        from systems.fairseq_nat.decode import FairseqDecoder

        save_dir = Path(workdir) / CHECKPOINTS
        manifest = Manifest(save_dir)
        path = save_dir / f"checkpoint_{self.cfg.checkpoint}.pt"
        if not path.is_file() and self.cfg.checkpoint == "best":
            self.deviations.append("decoded checkpoint_last.pt: no checkpoint_best.pt (validation disabled?)")
            path = save_dir / "checkpoint_last.pt"
        if not path.is_file():
            raise FileNotFoundError(f"No fairseq checkpoint {path}; run fit() first.")
        self.decoder = FairseqDecoder.from_checkpoint(
            self.cfg, path, manifest, Path(workdir) / DICTS, self._lines(Path(workdir))
        )
        if self.train_result is not None:
            self.train_result["decoded_checkpoint"] = {
                "file": path.name,
                "sha256": manifest.files[path.name]["sha256"],
            }

    def _build_untrained(self, task: TaskInfo, workdir: Path) -> None:
        """``weights=random``: the recipe's model, untrained, over the dictionary a trained run would use."""
        from systems.fairseq_nat.decode import FairseqDecoder
        from systems.fairseq_nat.untrained import build_untrained, write_wordpiece_dicts

        cfg = self.cfg
        dict_dir = workdir / DICTS
        dict_dir.mkdir(exist_ok=True)
        if cfg.vocab == "sentencepiece":  # the dictionary comes from the training data: binarise it
            from systems.fairseq_nat.data import binarise

            train = seeded_subset(task.train, cfg.train_examples, cfg.seed)
            dev = seeded_subset(task.dev, cfg.dev_examples, cfg.seed)
            if not train or not dev:
                raise ValueError(f"{cfg.system}: weights=random with vocab=sentencepiece needs train/dev splits.")
            data = binarise(cfg, train, dev)
            for name in ("dict.src.txt", "dict.tgt.txt"):
                shutil.copyfile(data.bin_dir / name, dict_dir / name)
            if data.spm_model is not None:
                shutil.copyfile(data.spm_model, dict_dir / data.spm_model.name)
            self.data_info = {"key": data.key, "vocab": data.vocab}
        else:
            write_wordpiece_dicts(dict_dir)
            self.data_info = {"vocab": "wordpiece (bert-base-uncased vocab, no data needed)"}
        model, fs_task = build_untrained(cfg, dict_dir)
        self.train_result = None
        self.deviations.append("weights=random: untrained model, no fairseq-train (timing only)")
        self.workdir = workdir
        self.decoder = FairseqDecoder(cfg, model, fs_task, self._lines(workdir))

    def _lines(self, workdir: Path) -> Any:
        from systems.fairseq_nat.vocab import SPM_MODEL, SentencePieceLines, WordPieceLines

        if self.cfg.vocab == "sentencepiece":
            return SentencePieceLines(workdir / DICTS / SPM_MODEL)
        return WordPieceLines()

    # ------------------------------------------------------------------ decoding
    def _need_model(self, forced: bool = False) -> Any:
        if self.decoder is None:
            raise RuntimeError(f"{self.cfg.system}: call fit() (or load(workdir)) before decoding.")
        if self.cfg.weights == "random" and not forced:
            raise RuntimeError(
                f"{self.cfg.system} has weights=random (untrained): its free outputs are meaningless and their "
                "lengths arbitrary. Time it length-forced (bench latency --length-forced) or drop weights=random."
            )
        return self.decoder

    def decode(self, examples: Sequence[Example]) -> list[str]:
        """Batched (sorted by source length so batches pad little); output in input order."""
        order = sorted(range(len(examples)), key=lambda i: len(examples[i].source))
        out = [""] * len(examples)
        bs = max(1, self.cfg.decode_batch_size)
        with self._decoding() as dec:
            for start in range(0, len(order), bs):
                idx = order[start : start + bs]
                for i, text in zip(idx, dec.translate([examples[i].source for i in idx]), strict=True):
                    out[i] = text
                self.last_iterations = dec.passes
        return out

    @property
    def batched_decode(self) -> bool:  # type: ignore[override]
        """Free decoding is one generator call per batch; length-forced (random weights) only for the
        length-head families, whose forced length is a per-row decision."""
        from systems.fairseq_nat.forcing import PER_ROW

        return self.cfg.weights != "random" or self.cfg.system in PER_ROW

    def decode_batch(self, examples: Sequence[Example], forced_lengths: Sequence[int] | None = None) -> list[str]:
        """One generator call in the given order; length-forced rows each get their own length where the
        family forces per row, else item by item (:attr:`batched_decode` says which)."""
        from systems.fairseq_nat.forcing import PER_ROW

        self._need_model(forced=forced_lengths is not None)
        if forced_lengths is not None and self.cfg.system not in PER_ROW:
            return super().decode_batch(examples, forced_lengths)
        if forced_lengths is not None and len(forced_lengths) != len(examples):
            raise ValueError(f"{len(forced_lengths)} forced lengths for {len(examples)} examples; pass one per item.")
        texts = [ex.source for ex in examples]
        with self._decoding(forced=forced_lengths is not None) as dec:
            out = dec.translate(texts) if forced_lengths is None else dec.translate_forced_batch(texts, forced_lengths)
        self.last_iterations = dec.passes
        return out

    def decode_one(self, example: Example, forced_length: int | None = None) -> str:
        """Batch size 1; ``forced_length`` (target positions incl. ``</s>``) forces the output length
        and fixes the iteration count (:mod:`systems.fairseq_nat.forcing`), for length-forced timing."""
        with self._decoding(forced=forced_length is not None) as dec:
            if forced_length is None:
                text = dec.translate([example.source])[0]
            else:
                text = dec.translate_forced(example.source, forced_length)
        self.last_iterations = dec.passes
        return text


def gpu_env(device: str) -> dict[str, str]:
    """The child ``fairseq-train`` sees exactly the run's GPU (as its ``cuda:0``), so it neither picks
    another one nor spreads over every visible GPU; nothing for a CPU run (``--cpu`` says it)."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return {}
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    index = dev.index or 0
    return {"CUDA_VISIBLE_DEVICES": visible[index] if index < len(visible) else str(index)}


def make(system: str, budget: str, overrides: Mapping[str, Any] | None = None) -> FairseqSystem:
    """``system`` (or its compute-type twin, presets.TWINS) under ``budget`` with field overrides (``seed`` maps to
    fairseq's ``--seed``)."""
    base, settings = resolve_twin(system, dict(overrides or {}), TWINS)
    cfg = apply_overrides(preset(base, check_budget(budget)), settings)
    return FairseqSystem(cfg, name=system)
