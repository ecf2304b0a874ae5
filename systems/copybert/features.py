"""SQuAD examples -> CopyBERT sequences: run_squad-style tokenisation, answer span, windows (§1.2).

A :class:`Feature` is one window: ``context = [CLS] p_window [MASK]`` plus, for training, the
question ``q_1..q_Q [SEP]``. Pure Python over a WordPiece tokenizer (no torch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.api.types import Example


@dataclass(frozen=True)
class Feature:
    context: tuple[int, ...]  # [CLS] paragraph-window [MASK]
    answer: tuple[int, int]  # inclusive answer span in sequence positions; (0, 0) when out of window
    question: tuple[int, ...] = ()  # q_1..q_Q [SEP] (empty at decoding time)

    @property
    def ids(self) -> tuple[int, ...]:
        return self.context + self.question


@dataclass(frozen=True)
class Parsed:
    """A paragraph as wordpieces with the answer's wordpiece span (``None`` when it cannot be located)."""

    pieces: tuple[int, ...]
    span: tuple[int, int] | None


def _is_ws(c: str) -> bool:
    return c in " \t\r\n" or ord(c) == 0x202F


def example_parts(ex: Example) -> tuple[str, str, int | None]:
    """(paragraph, answer, answer char start) from ``fields``, else from ``"answer [SEP] paragraph"``."""
    f = ex.fields
    if "paragraph" in f and "answer" in f:
        start = f.get("answer_start")
        try:
            return f["paragraph"], f["answer"], int(start) if start not in (None, "") else None
        except ValueError:
            return f["paragraph"], f["answer"], None
    if "[SEP]" not in ex.source:
        raise ValueError(
            f"example {ex.id}: CopyBERT needs fields paragraph/answer or a source 'answer [SEP] paragraph'"
        )
    answer, paragraph = (s.strip() for s in ex.source.split("[SEP]", 1))
    return paragraph, answer, None


def parse(tok: Any, paragraph: str, answer: str, answer_start: int | None) -> Parsed:
    """Whitespace words -> wordpieces (as run_squad), answer char span -> improved wordpiece span."""
    words: list[str] = []
    char_to_word: list[int] = []
    prev_ws = True
    for c in paragraph:
        if _is_ws(c):
            prev_ws = True
        else:
            if prev_ws:
                words.append(c)
            else:
                words[-1] += c
            prev_ws = False
        char_to_word.append(len(words) - 1)
    if answer_start is None or paragraph[answer_start : answer_start + len(answer)] != answer:
        found = paragraph.find(answer) if answer else -1
        answer_start = found if found >= 0 else None
    per_word = tok.encode_batch(words) if words else []
    pieces: list[int] = []
    word_start: list[int] = []
    for ids in per_word:
        word_start.append(len(pieces))
        pieces.extend(ids)
    if answer_start is None or not answer or not pieces:
        return Parsed(tuple(pieces), None)
    w0 = max(char_to_word[answer_start], 0)
    w1 = max(char_to_word[min(answer_start + len(answer) - 1, len(paragraph) - 1)], w0)
    t0 = word_start[w0]
    t1 = (word_start[w1 + 1] - 1) if w1 + 1 < len(word_start) else len(pieces) - 1
    return Parsed(tuple(pieces), _improve_span(pieces, t0, t1, tok.encode(answer)))


def _improve_span(pieces: Sequence[int], start: int, end: int, answer: Sequence[int]) -> tuple[int, int]:
    """run_squad's ``_improve_answer_span``: the tightest sub-span whose pieces equal the answer's."""
    target = list(answer)
    for s in range(start, end + 1):
        for e in range(end, s - 1, -1):
            if list(pieces[s : e + 1]) == target:
                return s, e
    return start, end


def doc_spans(n: int, max_tokens: int, stride: int) -> list[tuple[int, int]]:
    """run_squad sliding windows ``(start, length)``; the last one ends at the paragraph end."""
    if max_tokens < 1 or stride < 1:
        raise ValueError(
            f"paragraph window of {max_tokens} wordpieces (stride {stride}): raise max_seq_length or lower "
            "max_query_length / max_decode_len (CopyBERT presets, systems/copybert/presets.py)"
        )
    spans, start = [], 0
    while True:
        length = min(n - start, max_tokens)
        spans.append((start, length))
        if start + length >= n:
            return spans
        start += min(length, stride)


def answer_span(parsed: Parsed, room: int) -> tuple[int, int]:
    """``(start, length)`` of the window of ``room`` pieces that holds the answer with about a third of the
    room before it (``systems.source_windows.answer_window``'s placement); the whole paragraph when it fits.
    An answer longer than the room starts the window."""
    if parsed.span is None:
        raise ValueError("answer_span needs a located answer")
    n = len(parsed.pieces)
    if n <= room:
        return 0, n
    first, last = parsed.span
    after = n - first
    before = min(first, max((room - (last - first + 1)) // 3, room - after))
    start = first - max(before, 0)
    return start, room


@dataclass(frozen=True)
class Layout:
    """Special ids and sizes: ``max_seq_length`` 384, ``doc_stride`` 128, ``max_query_length`` 64."""

    cls_id: int
    mask_id: int
    sep_id: int
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    max_decode_length: int = 20
    decode_doc_stride: int = 1390
    keep_out_of_span: bool = True
    # head: the reference's windows (sliding ones for training, first-or-last for decoding) | answer: one
    # window per example with the answer inside, for a budget whose sequences are shorter than paragraphs
    source_window: str = "head"

    @property
    def answer_room(self) -> int:
        """The paragraph room of an ``answer`` window, for training and decoding alike: what is left after
        the longest question (training's or decoding's, ``[SEP]`` included) and ``[CLS]``/``[MASK]``.

        The reference sizes a training window by its own question (``max_seq_length - len(q) - 3``), so a
        long paragraph fills the sequence and the question's end is always the sequence's last position:
        the model learns to stop there, not when the question is done. Decoding without the gold length
        (which would leak the target) then runs such questions to the length limit: 417 of the 435
        long-paragraph questions among the first 500 dev questions at the first 2,400-update calibration
        point. A fixed room carries no such signal. ``head`` windows keep the reference's sizing."""
        return self.max_seq_length - 2 - max(self.max_query_length + 1, self.max_decode_length)

    def window(self, parsed: Parsed, start: int, length: int, question: tuple[int, ...]) -> Feature:
        pieces = parsed.pieces[start : start + length]
        context = (self.cls_id, *pieces, self.mask_id)
        span = parsed.span
        if span is not None and span[0] >= start and span[1] < start + length:
            answer = (span[0] - start + 1, span[1] - start + 1)  # +1 for [CLS]
        else:
            answer = (0, 0)
        return Feature(context, answer, question)

    def train_features(self, tok: Any, ex: Example) -> list[Feature]:
        """All windows of one training example (out-of-span ones too, as the reference code keeps them)."""
        paragraph, answer, start = example_parts(ex)
        parsed = parse(tok, paragraph, answer, start)
        q = tuple(tok.encode(ex.fields.get("question", ex.target)))[: self.max_query_length]
        question = (*q, self.sep_id)
        if self.source_window == "answer" and parsed.span is not None:
            return [self.window(parsed, *answer_span(parsed, self.answer_room), question)]
        room = self.max_seq_length - len(q) - 3
        feats = [
            self.window(parsed, s, n, question)
            for s, n in doc_spans(len(parsed.pieces), room, self.doc_stride)
        ]
        if not self.keep_out_of_span:
            feats = [f for f in feats if f.answer != (0, 0)] or feats[:1]
        return feats

    def decode_feature(self, tok: Any, ex: Example) -> Feature:
        """The single decoding window: the first if it holds the answer, else the last (§1.2, stride 1390).

        The window is sized for the longest decodable question (``max_decode_length`` incl.
        ``[SEP]``), not the gold question's length as in the reference, which would leak the target.
        """
        paragraph, answer, start = example_parts(ex)
        parsed = parse(tok, paragraph, answer, start)
        if self.source_window == "answer" and parsed.span is not None:
            return self.window(parsed, *answer_span(parsed, self.answer_room), ())
        room = self.max_seq_length - 2 - self.max_decode_length
        spans = doc_spans(len(parsed.pieces), room, self.decode_doc_stride)
        first = self.window(parsed, *spans[0], ())
        return first if first.answer != (0, 0) or len(spans) == 1 else self.window(parsed, *spans[-1], ())
