"""Text <-> fairseq token lines: bert-base-uncased WordPiece (default) or a trained sentencepiece model.

Both sides of every pair use one shared dictionary (the NAT recipes pass ``--share-all-embeddings``).
For WordPiece the fairseq dictionary is the BERT vocab itself, so ``[UNK]`` etc. stay ordinary
symbols and fairseq's own ``<s> <pad> </s> <unk>`` come first; ``<unk>`` doubles as the NAT mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

BERT_SPECIALS = frozenset({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
#: fairseq's own symbols; ``<unk>`` is also the NAT mask/placeholder, so a left-over one is not text
FAIRSEQ_SPECIALS = frozenset({"<s>", "<pad>", "</s>", "<unk>"})
SPM_MODEL = "spm.model"


def write_fairseq_dict(vocab_txt: Path, out: Path) -> Path:
    """A fairseq ``dict.txt`` (``symbol count`` per line) listing the WordPiece vocab in its order."""
    tokens = [line.rstrip("\n") for line in vocab_txt.open(encoding="utf-8")]
    bad = [t for t in tokens if not t or any(c.isspace() for c in t)]
    if bad:
        raise ValueError(
            f"{vocab_txt}: {len(bad)} vocab entries are empty or contain whitespace (e.g. {bad[0]!r}); "
            "fairseq dictionaries are whitespace-separated."
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(f"{t} 1\n" for t in tokens), encoding="utf-8")
    return out


class WordPieceLines:
    """Wordpieces joined by spaces (what ``fairseq-preprocess`` reads) and back to text (``##`` merged)."""

    kind = "wordpiece"

    def __init__(self, vocab_txt: Path | None = None) -> None:
        from systems.backbone.tokenizer import build_tokenizer, minilm_vocab_path

        self.vocab_txt = Path(vocab_txt) if vocab_txt is not None else minilm_vocab_path()
        self.tok = build_tokenizer(self.vocab_txt)

    def encode(self, texts: Sequence[str], max_len: int | None) -> list[str]:
        out = []
        for ids in self.tok.encode_batch(list(texts)):
            pieces = self.tok.convert_ids_to_tokens(ids[:max_len] if max_len else ids)
            out.append(" ".join(pieces))
        return out

    @staticmethod
    def decode(line: str) -> str:
        toks = [t for t in line.split() if t not in BERT_SPECIALS and t not in FAIRSEQ_SPECIALS]
        return " ".join(toks).replace(" ##", "").replace("##", "")

    def dictionary(self, out: Path) -> Path | None:
        return write_fairseq_dict(self.vocab_txt, out)

    def fingerprint(self) -> str:
        import hashlib

        return "wordpiece:" + hashlib.sha256(self.vocab_txt.read_bytes()).hexdigest()


class SentencePieceLines:
    """A unigram sentencepiece model trained on the training pairs (MIST's Quora baselines).

    The dictionary is then built by ``fairseq-preprocess --joined-dictionary`` from the training data.
    """

    kind = "sentencepiece"

    def __init__(self, model_path: Path) -> None:
        import sentencepiece as spm

        self.model_path = Path(model_path)
        self.sp: Any = spm.SentencePieceProcessor(model_file=str(self.model_path))

    @classmethod
    def train(cls, texts: Sequence[str], out_dir: Path, vocab_size: int) -> SentencePieceLines:
        import sentencepiece as spm

        out_dir.mkdir(parents=True, exist_ok=True)
        corpus = out_dir / "spm_train.txt"
        corpus.write_text("".join(t.replace("\n", " ").lower() + "\n" for t in texts), encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(out_dir / "spm"),
            vocab_size=vocab_size,
            model_type="unigram",
            character_coverage=1.0,
            hard_vocab_limit=False,
            minloglevel=2,
            bos_id=-1,
            eos_id=-1,
            pad_id=-1,
            unk_id=0,
            num_threads=1,
        )
        return cls(out_dir / SPM_MODEL)

    def encode(self, texts: Sequence[str], max_len: int | None) -> list[str]:
        out = []
        for t in texts:
            pieces = self.sp.encode(t.lower(), out_type=str)
            out.append(" ".join(pieces[:max_len] if max_len else pieces))
        return out

    @staticmethod
    def decode(line: str) -> str:
        toks = [t for t in line.split() if t not in FAIRSEQ_SPECIALS]
        return " ".join("".join(toks).replace("\u2581", " ").split())

    def dictionary(self, out: Path) -> Path | None:
        return None  # built by fairseq-preprocess from the data

    def fingerprint(self) -> str:
        import hashlib

        return "sentencepiece:" + hashlib.sha256(self.model_path.read_bytes()).hexdigest()
