"""pycocoevalcap 1.2 metric cores with their per-item sufficient statistics kept.

BLEU: each item is cooked by pycocoevalcap's own ``cook_refs``/``cook_test``; the corpus value is
pycocoevalcap's ``BleuScorer.compute_score(option='closest')`` run over those cooked items (the
exact code ``Bleu(4).compute_score`` runs), and the per-item counts feed the bootstrap.
ROUGE-L: ``Rouge().calc_score`` per item, corpus = ``np.mean`` as pycocoevalcap does.
Per-item results are cached by (hypothesis, references) so a session that scores the same items
under several recipes pays once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BLEU_COLS = 10  # testlen, reflen(closest), guess1..4, correct1..4
_TINY, _SMALL = 1e-15, 1e-9


def _coco():
    from pycocoevalcap.bleu import bleu_scorer
    from pycocoevalcap.rouge.rouge import Rouge

    return bleu_scorer, Rouge()


def cook_bleu(hyp: str, refs: Sequence[str], refs_cache: dict | None = None) -> dict:
    """pycocoevalcap's cooked item; ``refs_cache`` (tuple of references -> their cooked form) cooks each set of
    references once however many hypotheses meet it (``cook_test`` only reads it)."""
    bleu_scorer, _ = _coco()
    if refs_cache is None:
        return bleu_scorer.cook_test(hyp, bleu_scorer.cook_refs(list(refs)))
    key = tuple(refs)
    cooked = refs_cache.get(key)
    if cooked is None:
        cooked = refs_cache[key] = bleu_scorer.cook_refs(list(refs))
    return bleu_scorer.cook_test(hyp, cooked)


def bleu_corpus(cooked: Sequence[dict]) -> list[float]:
    """BLEU-1..4 exactly as pycocoevalcap computes them from the cooked items."""
    bleu_scorer, _ = _coco()
    scorer = bleu_scorer.BleuScorer(n=4)
    scorer.ctest = list(cooked)
    scorer.crefs = [None] * len(cooked)  # only its length is used by compute_score
    score, _ = scorer.compute_score(option="closest", verbose=0)
    return [float(s) for s in score]


def bleu_rows(cooked: Sequence[dict]) -> np.ndarray:
    """N x 10 sufficient statistics (reflen resolved with the 'closest' rule, ties -> shorter)."""
    rows = np.zeros((len(cooked), BLEU_COLS))
    for i, c in enumerate(cooked):
        t = c["testlen"]
        rows[i, 0] = t
        rows[i, 1] = min((abs(r - t), r) for r in c["reflen"])[1]
        rows[i, 2:6] = c["guess"]
        rows[i, 6:10] = c["correct"]
    return rows


def bleu_from_sums(sums: np.ndarray, order: int) -> np.ndarray:
    """BLEU-``order`` from summed statistics (rows), pycocoevalcap's formula vectorised."""
    sums = np.atleast_2d(sums)
    bleu = np.ones(len(sums))
    for k in range(order):
        bleu = bleu * (sums[:, 6 + k] + _TINY) / (sums[:, 2 + k] + _SMALL)
    bleu = bleu ** (1.0 / order)
    ratio = (sums[:, 0] + _TINY) / (sums[:, 1] + _SMALL)
    with np.errstate(divide="ignore", over="ignore"):
        bp = np.where(ratio < 1, np.exp(1 - 1 / ratio), 1.0)
    return bleu * bp


def rouge_l(hyp: str, refs: Sequence[str]) -> float:
    _, rouge = _coco()
    return float(rouge.calc_score([hyp], list(refs)))


def rouge_l_corpus(per_item: Sequence[float]) -> float:
    return float(np.mean(np.array(per_item)))


