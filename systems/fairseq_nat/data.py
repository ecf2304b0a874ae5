"""Binarise a task's train/dev pairs with ``fairseq-preprocess``, cached by content hash.

The cache key covers the selected examples (their canonical split hash), the truncation lengths
and the vocabulary, so every system trained on the same data with the same vocabulary shares one
binarised copy, and any change to the data or the vocabulary gets a fresh one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.api.paths import cache_root
from bench.api.types import Example
from systems.fairseq_nat.flags import preprocess_command
from systems.fairseq_nat.presets import FairseqConfig
from systems.fairseq_nat.proc import run_tool
from systems.fairseq_nat.vocab import SPM_MODEL, SentencePieceLines, WordPieceLines

FORMAT = 1  # bump when the binarised layout changes
DONE = "DONE.json"


def cache_base() -> Path:
    """``$BENCH_CACHE/fairseq`` or ``<repo>/.cache/fairseq``."""
    return cache_root() / "fairseq"


@dataclass(frozen=True)
class BinData:
    """A binarised data directory (``fairseq-preprocess --destdir``) and how it was made."""

    bin_dir: Path
    key: str
    vocab: str
    spm_model: Path | None
    n_train: int
    n_valid: int


def _split_hash(examples: Sequence[Example]) -> str:
    from bench.api.types import split_sha256

    return split_sha256(examples)


def data_key(cfg: FairseqConfig, train: Sequence[Example], dev: Sequence[Example], vocab_id: str) -> str:
    spec = {
        "format": FORMAT,
        "train": _split_hash(train),
        "dev": _split_hash(dev),
        "max_source_len": cfg.max_source_len,
        "max_target_len": cfg.max_target_len,
        "vocab": vocab_id,
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _pairs(lines_src: list[str], lines_tgt: list[str]) -> tuple[list[str], list[str]]:
    """Drop pairs with an empty side (fairseq would train on a bare eos)."""
    keep = [(s, t) for s, t in zip(lines_src, lines_tgt, strict=True) if s.strip() and t.strip()]
    return [s for s, _ in keep], [t for _, t in keep]


def binarise(
    cfg: FairseqConfig,
    train: Sequence[Example],
    dev: Sequence[Example],
    say: Callable[[str], None] = print,
    root: Path | None = None,
) -> BinData:
    """Tokenise and binarise ``train``/``dev`` (cached); returns where fairseq-train should read."""
    from filelock import FileLock

    root = root or cache_base()
    if cfg.vocab == "wordpiece":
        vocab_id = WordPieceLines().fingerprint()
    elif cfg.vocab == "sentencepiece":
        vocab_id = f"sentencepiece:unigram:{cfg.spm_vocab_size}"
    else:
        raise ValueError(f"vocab must be 'wordpiece' or 'sentencepiece', got {cfg.vocab!r}")
    key = data_key(cfg, train, dev, vocab_id)
    final = root / key[:24]
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{key[:24]}.lock")):
        if not (final / DONE).is_file():
            shutil.rmtree(final, ignore_errors=True)
            tmp = root / f"{key[:24]}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            say(f"[fairseq] binarising {len(train)} train / {len(dev)} valid pairs ({cfg.vocab}) -> {final}")
            _build(cfg, train, dev, tmp)
            tmp.rename(final)
    meta = json.loads((final / DONE).read_text())
    spm = final / SPM_MODEL
    return BinData(
        final / "bin", key, cfg.vocab, spm if spm.is_file() else None, meta["n_train"], meta["n_valid"]
    )


def _build(cfg: FairseqConfig, train: Sequence[Example], dev: Sequence[Example], out: Path) -> None:
    raw = out / "raw"
    raw.mkdir(parents=True)
    if cfg.vocab == "sentencepiece":
        texts = [ex.source for ex in train] + [ex.target for ex in train]
        lines: WordPieceLines | SentencePieceLines = SentencePieceLines.train(texts, out, cfg.spm_vocab_size)
    else:
        lines = WordPieceLines()
    counts = {}
    for name, exs in (("train", train), ("valid", dev)):
        src = lines.encode([ex.source for ex in exs], cfg.max_source_len)
        tgt = lines.encode([ex.target for ex in exs], cfg.max_target_len)
        src, tgt = _pairs(src, tgt)
        if not src:
            raise ValueError(f"No non-empty {name} pairs to binarise (after tokenisation).")
        (raw / f"{name}.src").write_text("".join(s + "\n" for s in src), encoding="utf-8")
        (raw / f"{name}.tgt").write_text("".join(t + "\n" for t in tgt), encoding="utf-8")
        counts[f"n_{name}"] = len(src)
    srcdict = lines.dictionary(out / "vocab.dict.txt")
    args = preprocess_command(
        str(raw / "train"), str(raw / "valid"), str(out / "bin"), None if srcdict is None else str(srcdict)
    )
    run_tool("preprocess", args, out / "preprocess.log")
    (out / DONE).write_text(json.dumps({**counts, "vocab": cfg.vocab}, indent=1))
