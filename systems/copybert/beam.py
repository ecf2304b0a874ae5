"""The reference beam search (``qg_utils/beam_search.py``, OpenNMT-derived; SYSTEMS.md §1.7).

Beam 5, slots 2..K start at −inf; score = cumulative log-prob with no length penalty during the
search; n-gram blocking and min-length stay off (disabled in the reference). A slot that emits
``[SEP]`` is finished: the hypothesis is stored and the slot's next-step scores are set to −1e10.
The search stops when the top slot has finished and ``n_best`` hypotheses exist, or after
``max_length`` tokens (``[SEP]`` included); the final pick maximises ``score / (1 + length)``.

Two knobs leave the reference for budgets whose models loop (both off by default, so the paper preset
decodes as the reference): ``length_penalty`` is the exponent of that final normalisation (1: the
reference's per-token average, which favours long looping hypotheses; 0: the raw cumulative score), and
``no_repeat_ngram`` blocks a token that would repeat an n-gram of the hypothesis (UniLM's blocking).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from systems.decoding import block_repeated_ngrams

DEAD = -1e10


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]  # generated tokens, the final [SEP] included when finished
    score: float  # cumulative log-prob
    finished: bool

    @property
    def normalised(self) -> float:
        """The reference's final score (``length_penalty`` 1)."""
        return self.rescored(1.0)

    def rescored(self, length_penalty: float) -> float:
        return self.score / (1 + len(self.tokens)) ** length_penalty  # +1 counts the [MASK] slot


StepFn = Callable[[Sequence[Sequence[int]]], Tensor]


def beam_search(
    step: StepFn,
    sep_id: int,
    blocked: Sequence[int] = (0,),
    beam_size: int = 5,
    n_best: int = 20,
    max_length: int = 20,
    length_penalty: float = 1.0,
    no_repeat_ngram: int = 0,
) -> tuple[Hypothesis, list[Hypothesis]]:
    """``step(prefixes)`` returns next-token log-probs ``[len(prefixes), V]``; returns (best, collected)."""
    prefixes: list[tuple[int, ...]] = [()] * beam_size
    scores = torch.full((beam_size,), float("-inf"))
    scores[0] = 0.0
    finished: list[Hypothesis] = []
    top_done = False
    for _ in range(max_length):
        logp = step(prefixes).float().cpu().clone()
        if blocked:
            logp[:, list(blocked)] = float("-inf")  # pad id 0 would vanish from the mask (§1.4 ⚠)
        if no_repeat_ngram > 0:
            block_repeated_ngrams(logp, prefixes, no_repeat_ngram)
        cand = scores[:, None] + logp
        for i, prefix in enumerate(prefixes):
            if prefix and prefix[-1] == sep_id:
                cand[i] = DEAD
        vocab = cand.shape[1]
        best, flat = cand.view(-1).topk(beam_size)
        prev = (flat // vocab).tolist()
        toks = (flat % vocab).tolist()
        prefixes = [prefixes[p] + (t,) for p, t in zip(prev, toks, strict=True)]
        scores = best
        for i, t in enumerate(toks):
            if t == sep_id:
                finished.append(Hypothesis(prefixes[i], float(scores[i]), True))
        if toks[0] == sep_id:
            top_done = True
        if top_done and len(finished) >= n_best:
            break
    i = 0
    while len(finished) < n_best and i < beam_size:  # OpenNMT sort_finished(minimum=n_best)
        if prefixes[i][-1] != sep_id:
            finished.append(Hypothesis(prefixes[i], float(scores[i]), False))
        i += 1
    finished.sort(key=lambda h: -h.score)
    best_hyp = max(finished, key=lambda h: h.rescored(length_penalty))
    return best_hyp, finished


def output_tokens(hyp: Hypothesis, drop: Sequence[int]) -> list[int]:
    """Segment-1 tokens minus ``[MASK]`` and minus the **last** token (normally ``[SEP]``; a real token
    when the length limit was hit, as in the reference), then leftover specials in ``drop`` removed."""
    return [t for t in hyp.tokens[:-1] if t not in drop]
