"""Decoding a converted model with ``ctranslate2.Translator``, on the device the harness placed the system on.

The decoding settings are ``fairseq_transformer``'s (beam, length penalty, no-repeat n-gram size, and the
generator's maximum length, ``min(max_len_a * src_len + max_len_b, max_positions - 1)`` over the padded
batch, with fairseq's ``min_len = 1``), so that at float32 and beam 1 the outputs equal fairseq's greedy ones.

The no-repeat n-gram rule is applied exactly where fairseq applies it (:func:`fairseq_blocks_ngrams`): fairseq
0.12's ``SequenceGenerator`` hands its whole padded token buffer to ``NGramRepeatBlock``, whose Python fallback
compares the buffer's last ``n - 1`` entries (padding) with the hypothesis and so bans nothing; only its CUDA
extension blocks. The harness's fairseq has no compiled extensions, so ``fairseq_transformer``'s outputs are
unblocked, and CTranslate2 gets ``no_repeat_ngram_size = 0`` to decode the same way.

Length-forced timing sets ``min_decoding_length = max_decoding_length = L``: L decoder steps, the work fairseq's
generator does for ``forced_length`` L (L - 1 content tokens, then the step that emits ``</s>``). The option is
batch-wide, so a batch of forced items is split into one call per distinct length (:meth:`translate_forced`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from systems.fairseq_ct2.presets import CT2Settings
from systems.fairseq_nat.presets import FairseqConfig

#: fairseq's default ``--max-target-positions`` for the transformer archs (the cap when a preset sets none)
DEFAULT_MAX_POSITIONS = 1024


def ct2_device(device: str) -> tuple[str, int]:
    """A torch device string as CTranslate2's ``(device, device_index)``: ``cuda:1`` -> ``("cuda", 1)``; every
    CPU device (the placement test's ``cpu:1`` too) is CTranslate2's one ``cpu``."""
    kind, _, index = str(device).partition(":")
    if kind == "cuda":
        return "cuda", int(index or 0)
    if kind == "cpu":
        return "cpu", 0
    raise ValueError(f"CTranslate2 runs on cpu or cuda, not '{device}'; run with --device cpu or --device cuda")


def cuda_problem() -> str | None:
    """None when CTranslate2 can use a GPU here; else one line saying why not (its CUDA libraries did not
    load, or it sees no GPU), for ``make gpu-check`` and for a run placed on a GPU."""
    from systems.fairseq_ct2.convert import require_ctranslate2

    ctranslate2 = require_ctranslate2()
    try:
        count = ctranslate2.get_cuda_device_count()
    except Exception as err:  # a missing libcublas surfaces as any of several errors
        return f"CTranslate2 cannot load its CUDA libraries ({str(err).splitlines()[0]}); time it on the CPU"
    if count == 0:
        return ("CTranslate2 sees no CUDA device (its CUDA 12 libraries did not load, or no GPU is visible); "
                "time it on the CPU")
    return None


def fairseq_blocks_ngrams(device: str) -> bool:
    """Whether fairseq's generator really applies ``--no-repeat-ngram-size`` on ``device`` (see the module
    docstring): only through its CUDA extension, on a GPU."""
    if ct2_device(device)[0] != "cuda":
        return False
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    return bool(NGramRepeatBlock(3).use_extension)


class CT2Decoder:
    """One converted model, its tokenisation (``lines``: the fairseq run's WordPiece or SentencePiece), and a
    translator built lazily for the current device, compute type and threads."""

    def __init__(self, model_dir: Path, cfg: FairseqConfig, settings: CT2Settings, lines: Any) -> None:
        self.model_dir, self.cfg, self.settings, self.lines = Path(model_dir), cfg, settings, lines
        self._key: tuple[Any, ...] | None = None
        self._translator: Any = None
        self.no_repeat_ngram_size = 0  # what fairseq's generator applies on the current device
        self.steps = 0  # decoder steps of the latest call (the longest hypothesis of the batch, plus </s>)

    # ------------------------------------------------------------------ the translator
    def compute_type(self, device: str) -> str:
        return self.settings.resolved_compute_type(ct2_device(device)[0])

    def translator(self, device: str, threads: int | None) -> Any:
        """The translator for ``device`` and ``threads`` (rebuilt only when one of them changes)."""
        from systems.fairseq_ct2.convert import require_ctranslate2

        ctranslate2 = require_ctranslate2()
        kind, index = ct2_device(device)
        compute = self.compute_type(device)
        intra = self.settings.intra_threads or threads or _process_threads()
        key = (kind, index, compute, intra, self.settings.inter_threads)
        if key == self._key:
            return self._translator
        if kind == "cuda" and (problem := cuda_problem()):
            raise RuntimeError(f"{problem}: --device cpu")
        supported = ctranslate2.get_supported_compute_types(kind, index)
        if compute not in supported:
            raise ValueError(f"CTranslate2 has no {compute} kernels on this {kind} (it has: "
                             f"{', '.join(sorted(supported))}); --set compute_type=<one of them>")
        self._translator = None  # free the old model before loading the new one (GPU memory)
        self._translator = ctranslate2.Translator(str(self.model_dir), device=kind, device_index=index,
                                                  compute_type=compute, intra_threads=intra,
                                                  inter_threads=self.settings.inter_threads)
        self._key = key
        self.no_repeat_ngram_size = self.cfg.no_repeat_ngram_size if fairseq_blocks_ngrams(device) else 0
        return self._translator

    # ------------------------------------------------------------------ decoding
    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Source pieces as fairseq's ``encode_line`` reads them (CTranslate2 appends ``</s>`` itself)."""
        return [line.split() for line in self.lines.encode(texts, self.cfg.max_source_len)]

    def max_length(self, sources: Sequence[Sequence[str]]) -> int:
        """fairseq's ``SequenceGenerator`` limit for this batch: from the padded source length (with ``</s>``)."""
        src_len = max(len(s) for s in sources) + 1
        cap = (self.cfg.max_target_positions or DEFAULT_MAX_POSITIONS) - 1
        return max(1, min(int(self.cfg.max_len_a * src_len + self.cfg.max_len_b), cap))

    def translate(self, texts: Sequence[str], device: str, threads: int | None) -> list[str]:
        """One CTranslate2 call over ``texts`` (one batch); output text in input order."""
        sources = self.tokens(texts)
        limit = self.max_length(sources)
        return self._run(sources, device, threads, min_length=1, max_length=limit)

    def translate_forced(self, texts: Sequence[str], lengths: Sequence[int], device: str,
                         threads: int | None) -> list[str]:
        """Each text decoded to exactly its forced length; one call per distinct length (the option is the
        batch's), so a batch of N items with k lengths costs k calls, not N."""
        sources = self.tokens(texts)
        out = [""] * len(texts)
        steps = 0
        for length in sorted(set(lengths)):
            idx = [i for i, n in enumerate(lengths) if n == length]
            texts_l = self._run([sources[i] for i in idx], device, threads, min_length=length, max_length=length)
            for i, text in zip(idx, texts_l, strict=True):
                out[i] = text
            steps += self.steps
        self.steps = steps
        return out

    def _run(self, sources: list[list[str]], device: str, threads: int | None, *, min_length: int,
             max_length: int) -> list[str]:
        translator = self.translator(device, threads)
        results = translator.translate_batch(
            sources,
            beam_size=self.cfg.beam,
            length_penalty=self.cfg.lenpen,
            no_repeat_ngram_size=self.no_repeat_ngram_size,
            min_decoding_length=min_length,
            max_decoding_length=max_length,
        )
        hyps = [r.hypotheses[0] for r in results]
        self.steps = max((len(h) + (len(h) < max_length) for h in hyps), default=0)  # + the </s> step
        return [self.lines.decode(" ".join(h)) for h in hyps]


def _process_threads() -> int:
    """The process's thread count (``bench run --threads`` sets torch's and OpenMP's to the same number)."""
    import torch

    return torch.get_num_threads()
