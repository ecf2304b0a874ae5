"""In-process decoding through fairseq's own generators, so batched decode and decode_one share one path.

NAT family: ``task.build_generator`` -> ``IterativeRefinementGenerator``; AR: ``SequenceGenerator``
(beam search). A counter on the decoder reports the passes of the latest call: refinement steps
(``forward_decoder`` calls) for the NAT family, beam-search steps for AR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
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
    import fairseq.checkpoint_utils
    import fairseq.tasks  # noqa: F401

    root.setLevel(level)
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)


def unfuse_attention(model: Any) -> None:
    """Before an int8 decode (systems.compute): every fairseq ``MultiheadAttention`` takes fairseq's own path,
    which calls its projections as modules. Its default path hands the projections' fp32 weights straight to
    ``F.multi_head_attention_forward``, past any quantized module; ``skip_embed_dim_check`` is fairseq's switch off
    that path (it was added for pruned models, whose projections torch's fused attention cannot take either)."""
    from fairseq.modules.multihead_attention import MultiheadAttention

    for module in model.modules():
        if isinstance(module, MultiheadAttention):
            module.skip_embed_dim_check = True


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
    """A model with its task, dictionary and generator (a verified checkpoint, or untrained weights)."""

    def __init__(self, cfg: FairseqConfig, model: Any, task: Any, lines: Any) -> None:
        self.cfg, self.lines, self.task = cfg, lines, task
        self.model = model.eval()  # the harness places it (FairseqSystem.models); inputs follow the model
        self.src_dict = self.task.source_dictionary
        self.tgt_dict = self.task.target_dictionary
        self.prepend_bos = not cfg.is_ar  # translation_lev loads sources with a leading <s>
        self.counter = PassCounter()
        if cfg.is_ar:  # SequenceGenerator calls model.decoder.forward (not __call__) once per step
            self.model.decoder.forward = self.counter.wrap(self.model.decoder.forward)
        else:  # the generator calls model.forward_decoder once per refinement pass
            self.model.forward_decoder = self.counter.wrap(self.model.forward_decoder)
        self.generator = self.task.build_generator([self.model], generator_namespace(cfg))
        self._forcer: Any = None
        self._forced_generator: Any = None
        self.last_target_tokens = 0  # target tokens (without <s>/</s>) of the last hypothesis decoded

    @classmethod
    def from_checkpoint(
        cls, cfg: FairseqConfig, checkpoint: Path, manifest: Manifest, dict_dir: Path, lines: Any
    ) -> FairseqDecoder:
        """Load a checkpoint this harness wrote, after its sha256 check."""
        import_fairseq_quietly()
        from fairseq import checkpoint_utils

        overrides = {"data": str(dict_dir), "source_lang": "src", "target_lang": "tgt"}
        state = load_verified_state(checkpoint, manifest, overrides)
        models, _model_cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [str(checkpoint)], arg_overrides=overrides, state=state
        )
        del state
        return cls(cfg, models[0], task, lines)

    def _tensors(self, texts: Sequence[str]) -> list[Any]:
        import torch

        out = []
        for line in self.lines.encode(texts, self.cfg.max_source_len):
            ids = self.src_dict.encode_line(line, add_if_not_exist=False, append_eos=True).long()
            if self.prepend_bos:
                ids = torch.cat([ids.new_tensor([self.src_dict.bos()]), ids])
            out.append(ids)
        return out

    def _sample(self, texts: Sequence[str]) -> Any:
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
        device = next(self.model.parameters()).device
        return utils.apply_to_sample(lambda t: t.to(device), sample)

    def _run(self, generator: Any, sample: Any) -> list[str]:
        import torch
        from fairseq import utils

        self.counter.reset()
        with torch.no_grad():
            hypos = self.task.inference_step(generator, [self.model], sample)
        out = [""] * len(hypos)
        d = self.tgt_dict
        for row, idx in enumerate(sample["id"].tolist()):
            tokens = utils.strip_pad(hypos[row][0]["tokens"].int().cpu(), d.pad())
            self.last_target_tokens = int(sum(t not in (d.bos(), d.eos()) for t in tokens.tolist()))
            out[idx] = self.lines.decode(d.string(tokens))
        return out

    def translate(self, texts: Sequence[str]) -> list[str]:
        """One generator call over ``texts`` (one batch); output text in input order."""
        return self._run(self.generator, self._sample(texts))

    def translate_forced(self, text: str, forced_length: int) -> str:
        """One example decoded to exactly ``forced_length`` target positions (see :mod:`.forcing`).

        Iterative systems run their preset's passes with early stopping off; the AR Transformer
        runs beam search with ``min_len = max_len``.
        """
        from systems.fairseq_nat.forcing import content_tokens

        content = content_tokens(forced_length)
        self._forced()
        gen = self._forced_generator
        if self.cfg.is_ar:  # exactly C tokens, then </s> (fairseq counts max_len without </s>)
            gen.max_len_a, gen.max_len_b, gen.min_len = 0, content, content
        self._forcer.target(content)
        try:
            return self._run(gen, self._sample([text]))[0]
        finally:
            self._forcer.target(None)

    def translate_forced_batch(self, texts: Sequence[str], forced_lengths: Sequence[int]) -> list[str]:
        """One generator call over ``texts``, row i forced to ``forced_lengths[i]`` (length-head families only:
        :data:`~systems.fairseq_nat.forcing.PER_ROW`); output in input order."""
        from systems.fairseq_nat.forcing import content_tokens

        self._forced()
        sample = self._sample(texts)
        contents = [content_tokens(forced_lengths[i]) for i in sample["id"].tolist()]  # the collater's row order
        if self.cfg.is_ar:  # the generator's own bounds; each row's exact length is the forcer's (see .forcing)
            gen = self._forced_generator
            gen.max_len_a, gen.max_len_b, gen.min_len = 0, max(contents), min(contents)
        self._forcer.target_rows(contents)
        try:
            return self._run(self._forced_generator, sample)
        finally:
            self._forcer.target(None)

    def _forced(self) -> None:
        """Build the length forcer and the fixed-passes generator on first use."""
        from systems.fairseq_nat.forcing import LengthForcer

        if self._forced_generator is None:
            d = self.tgt_dict
            self._forcer = LengthForcer(self.cfg.system, self.model, d.pad(), (d.bos(), d.pad(), d.eos(), d.unk()))
            fixed = replace(self.cfg, force_max_iter=True)
            self._forced_generator = self.task.build_generator([self.model], generator_namespace(fixed))

    @property
    def passes(self) -> int:
        return self.counter.count
