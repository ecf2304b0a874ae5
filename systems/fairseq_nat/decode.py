"""In-process decoding through fairseq's own generators, so batched decode and decode_one share one path.

NAT family: ``task.build_generator`` -> ``IterativeRefinementGenerator``; AR: ``SequenceGenerator``
(beam search). A counter on the decoder reports the passes of the latest call: refinement steps
(``forward_decoder`` calls) for the NAT family, beam-search steps for AR.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from systems.fairseq_nat.checkpoints import Manifest, load_verified_state
from systems.fairseq_nat.flags import generator_namespace
from systems.fairseq_nat.presets import FairseqConfig


def import_fairseq_quietly() -> None:
    """Import fairseq without its side effect on logging (it sets the root logger to DEBUG with a handler)."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    for name in ("fairseq", "fairseq.tasks.text_to_speech"):
        logging.getLogger(name).setLevel(logging.WARNING)
    import fairseq.checkpoint_utils  # noqa: F401
    import fairseq.tasks  # noqa: F401

    root.setLevel(level)
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)


class PassCounter:
    """Counts decoder passes; ``reset`` before a generate call, read ``count`` after."""

    def __init__(self) -> None:
        self.count = 0

    def reset(self) -> None:
        self.count = 0

    def wrap(self, fn: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return fn(*args, **kwargs)

        return counted


class FairseqDecoder:
    """A verified checkpoint loaded with its task, dictionary and generator."""

    def __init__(
        self, cfg: FairseqConfig, checkpoint: Path, manifest: Manifest, dict_dir: Path, lines: Any
    ) -> None:
        import torch

        import_fairseq_quietly()
        from fairseq import checkpoint_utils

        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.cfg, self.lines = cfg, lines
        overrides = {"data": str(dict_dir), "source_lang": "src", "target_lang": "tgt"}
        state = load_verified_state(checkpoint, manifest, overrides)
        models, self.model_cfg, self.task = checkpoint_utils.load_model_ensemble_and_task(
            [str(checkpoint)], arg_overrides=overrides, state=state
        )
        del state
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = models[0].eval().to(self.device)
        self.src_dict = self.task.source_dictionary
        self.tgt_dict = self.task.target_dictionary
        self.prepend_bos = not cfg.is_ar  # translation_lev loads sources with a leading <s>
        self.counter = PassCounter()
        if cfg.is_ar:  # SequenceGenerator calls model.decoder.forward (not __call__) once per step
            self.model.decoder.forward = self.counter.wrap(self.model.decoder.forward)
        else:  # the generator calls model.forward_decoder once per refinement pass
            self.model.forward_decoder = self.counter.wrap(self.model.forward_decoder)
        self.generator = self.task.build_generator([self.model], generator_namespace(cfg))

    def _tensors(self, texts: Sequence[str]) -> list[Any]:
        import torch

        out = []
        for line in self.lines.encode(texts, self.cfg.max_source_len):
            ids = self.src_dict.encode_line(line, add_if_not_exist=False, append_eos=True).long()
            if self.prepend_bos:
                ids = torch.cat([ids.new_tensor([self.src_dict.bos()]), ids])
            out.append(ids)
        return out

    def translate(self, texts: Sequence[str]) -> list[str]:
        """One generator call over ``texts`` (one batch); output text in input order."""
        import torch
        from fairseq import utils
        from fairseq.data import LanguagePairDataset

        src = self._tensors(texts)
        ds = LanguagePairDataset(
            src,
            [len(s) for s in src],
            self.src_dict,
            left_pad_source=bool(getattr(self.task.cfg, "left_pad_source", True)),
        )
        sample = ds.collater([ds[i] for i in range(len(src))])
        sample = utils.move_to_cuda(sample) if self.device == "cuda" else sample
        self.counter.reset()
        with torch.no_grad():
            hypos = self.task.inference_step(self.generator, [self.model], sample)
        out = [""] * len(src)
        for row, idx in enumerate(sample["id"].tolist()):
            tokens = utils.strip_pad(hypos[row][0]["tokens"].int().cpu(), self.tgt_dict.pad())
            out[idx] = self.lines.decode(self.tgt_dict.string(tokens))
        return out

    @property
    def passes(self) -> int:
        return self.counter.count
