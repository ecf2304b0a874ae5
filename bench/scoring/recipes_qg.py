"""The question-generation / paraphrase recipes (docs/protocols.md §2, §4): coco BLEU-1..4, METEOR, ROUGE-L.

They differ only in key, references and hypothesis preparation; all group by key with the last
prediction winning. ``ascii`` marks the Python-2 scripts (byte-string semantics).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.api.types import Example, Split
from bench.scoring import coco
from bench.scoring import meteor as met
from bench.scoring.errors import ScoringInputError
from bench.scoring.inputs import Lines, check_counts, check_hypotheses, check_references
from bench.scoring.recipe import Recipe, group_last
from bench.scoring.resample import ItemStats, mean_stats
from bench.scoring.session import ScoringSession
from bench.scoring.text import bert_basic_tokenize, fix_tokenization, lower, merge_wordpieces, mist_clean, strip_ws
from bench.scoring.types import Items

Fn = Callable[[str], str]
ExFn = Callable[[Example], str]


def _bleu_k(sums: np.ndarray, n: int, k: int) -> np.ndarray:
    """BLEU-k from summed statistics (the resampling ``SumsFn`` shape: sums, number of items)."""
    return coco.bleu_from_sums(sums, k)


def _field(name: str) -> ExFn:
    def get(ex: Example) -> str:
        if name not in ex.fields:
            raise ScoringInputError(f"Example {ex.id} has no field '{name}', which this recipe needs "
                                    "(use a squad_qg split from bench.data.load_split).")
        return ex.fields[name]

    return get


@dataclass(frozen=True)
class CocoRecipe(Recipe):
    """A qgevalcap-family recipe, described by its preparation functions."""

    name: str
    family: str
    key_desc: str
    refs_desc: str
    hyp_desc: str
    split_key: ExFn  # key from an Example
    split_ref: ExFn  # reference from an Example
    key_fn: Fn  # key file line -> key
    ref_fn: Fn  # reference file line -> reference
    hyp_fn: Fn
    legacy_lines: bool  # reads files with line[:-1] (Python-2 reference scripts)
    uses: tuple[str, ...] = ("source", "target")  # the Example fields read for splits
    metrics: tuple[str, ...] = ("bleu1", "bleu2", "bleu3", "bleu4", "meteor", "rougeL")
    uses_meteor: bool = True
    light_metrics: tuple[str, ...] = ("bleu1", "bleu2", "bleu3", "bleu4", "rougeL")

    def signature_body(self, source: str) -> str:
        key, refs = (self.key_desc, self.refs_desc) if source == "split" else ("file", "file")
        return f"key:{key}|refs:{refs}|agg:last|hyp:{self.hyp_desc}|meteor:1.5-coco"

    def prepare_split(self, hyps: Sequence[str], split: Split) -> Items:
        check_counts(len(hyps), len(split), "in-memory outputs", f"split {split.task}/{split.name}")
        notes = check_hypotheses(hyps, f"outputs for {split.task}/{split.name}",
                                 [ex.id for ex in split.examples])
        keys = [self.split_key(ex) for ex in split.examples]
        refs = [self.split_ref(ex) for ex in split.examples]
        items = group_last(keys, [self.hyp_fn(h) for h in hyps], refs)
        items.notes = notes
        return items

    def prepare_files(self, hyp: Lines, ref: Lines, key: Lines | None) -> Items:
        if key is None:
            raise ScoringInputError(f"Recipe '{self.name}' groups items by key: pass a key file (one key "
                                    "per reference line, e.g. du2017/src-test.txt for nqg/unilm).")
        check_counts(len(hyp.lines), len(ref.lines), hyp.path, ref.path)
        check_counts(len(key.lines), len(ref.lines), key.path + " (keys)", ref.path)
        h, r, k = (f.legacy() if self.legacy_lines else f.lines for f in (hyp, ref, key))
        notes = check_hypotheses(h, hyp.path)
        check_references(r, ref.path)
        for f, role in ((hyp, "hypothesis"), (ref, "reference"), (key, "key")):
            notes += f.notes(role, self.legacy_lines)
        items = group_last([self.key_fn(x) for x in k], [self.hyp_fn(x) for x in h],
                           [self.ref_fn(x) for x in r])
        items.notes = notes
        return items

    def _lines(self, items: Items) -> list[str]:
        return [met.score_line(h, r) for h, r in zip(items.hyps, items.refs, strict=True)]

    def submit(self, items: Items, session: ScoringSession) -> None:
        session.meteor_async(self._lines(items))

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        if len(items) == 0:
            raise ScoringInputError(f"Recipe '{self.name}': nothing to score (0 items).")
        own = session is None
        sess = session or ScoringSession()
        try:
            fut = sess.meteor_async(self._lines(items))
            cooked, rouge = _bleu_rouge(items, sess.bleu_cache, sess.rouge_cache, sess.refs_cache)
            try:
                stat_lines = fut.result()
            except Exception:
                sess.forget_failed()
                raise
        finally:
            if own:
                sess.close()
        values, stats = _bleu_rouge_stats(cooked, rouge)
        mstats = met.parse_stats(stat_lines)
        values["meteor"] = met.corpus_score(mstats)
        stats["meteor"] = ItemStats(met.pooled(mstats), lambda s, n: met.scores_from_stats(s))
        return {k: values[k] for k in self.metrics}, {k: stats[k] for k in self.metrics}, []

    def light_stats(self, items: Items, metric: str) -> ItemStats:
        """BLEU-k or ROUGE-L per item without starting METEOR (the same numbers :meth:`compute` gives)."""
        if metric not in self.light_metrics:
            return super().light_stats(items, metric)  # names the metric that needs the jar
        if metric == "rougeL":
            return mean_stats([coco.rouge_l(h, r) for h, r in zip(items.hyps, items.refs, strict=True)])
        cooked = [coco.cook_bleu(h, r) for h, r in zip(items.hyps, items.refs, strict=True)]
        return ItemStats(coco.bleu_rows(cooked), functools.partial(_bleu_k, k=int(metric[-1])))


def _bleu_rouge(items: Items, bleu_cache: dict, rouge_cache: dict, refs_cache: dict | None = None
                ) -> tuple[list, list[float]]:
    """Cooked BLEU statistics and ROUGE-L of each item (caches shared by the recipes of one session)."""
    cooked, rouge = [], []
    for h, r in zip(items.hyps, items.refs, strict=True):
        ck = (h, tuple(r))
        c = bleu_cache.get(ck)
        if c is None:
            c = bleu_cache[ck] = coco.cook_bleu(h, r, refs_cache)
        cooked.append(c)
        v = rouge_cache.get(ck)
        if v is None:
            v = rouge_cache[ck] = coco.rouge_l(h, r)
        rouge.append(v)
    return cooked, rouge


def _bleu_rouge_stats(cooked: list, rouge: list[float]) -> tuple[dict[str, float], dict[str, ItemStats]]:
    """Corpus BLEU-1..4 and ROUGE-L with their per-item statistics."""
    values: dict[str, float] = {}
    stats: dict[str, ItemStats] = {}
    bleu = coco.bleu_corpus(cooked)
    rows = coco.bleu_rows(cooked)
    for k in range(1, 5):
        values[f"bleu{k}"] = bleu[k - 1]
        stats[f"bleu{k}"] = ItemStats(rows, functools.partial(_bleu_k, k=k))
    values["rougeL"] = coco.rouge_l_corpus(rouge)
    stats["rougeL"] = mean_stats(rouge)
    return values, stats


def _same(x: str) -> str:
    return x


def _py2_key(x: str) -> str:
    return lower(strip_ws(x, True), True)


def _py3_key(x: str) -> str:
    return x.strip().lower()


def _bert_ref(ex: Example) -> str:
    return bert_basic_tokenize(ex.target).strip().lower()


_DU_KEY, _DU_REF = _field("du_key"), _field("du_ref")
_PARA_KEY = "answer[SEP]paragraph-lc(bench,no-key-file)"
_BERT_REFS = "raw-question-bert-basic-lc(no-wordpiece-file)"

NQG = CocoRecipe(
    name="nqg", family="qg", key_desc="du-sentence", refs_desc="du2017", hyp_desc="none",
    split_key=_DU_KEY, split_ref=_DU_REF, key_fn=_same, ref_fn=_same, hyp_fn=_same, legacy_lines=True,
    uses=("du_key", "du_ref"))

UNILM = CocoRecipe(
    name="unilm", family="qg", key_desc="du-sentence-strip-lc", refs_desc="du2017-strip",
    hyp_desc="fixtok-py2+lc-ascii",
    split_key=lambda ex: _py2_key(_DU_KEY(ex)), split_ref=lambda ex: strip_ws(_DU_REF(ex), True),
    key_fn=_py2_key, ref_fn=lambda x: strip_ws(x, True),
    hyp_fn=lambda h: lower(fix_tokenization(strip_ws(h, True), True), True), legacy_lines=True,
    uses=("du_key", "du_ref"))

UNILM_TOK = CocoRecipe(
    name="unilm-tok", family="qg", key_desc=_PARA_KEY, refs_desc=_BERT_REFS, hyp_desc="lc-ascii",
    split_key=lambda ex: _py2_key(ex.source), split_ref=_bert_ref,
    key_fn=_py2_key, ref_fn=lambda x: lower(merge_wordpieces(strip_ws(x, True)), True),
    hyp_fn=lambda h: lower(strip_ws(h, True), True), legacy_lines=True)

GLGE = CocoRecipe(
    name="glge", family="qg", key_desc=_PARA_KEY, refs_desc=_BERT_REFS, hyp_desc="fixtok-py3+lc",
    split_key=lambda ex: _py3_key(ex.source), split_ref=_bert_ref,
    key_fn=_py3_key, ref_fn=lambda x: x.strip().lower(),
    hyp_fn=lambda h: fix_tokenization(h.strip(), False).lower(), legacy_lines=False)

MIST = CocoRecipe(
    name="mist", family="qg", key_desc=_PARA_KEY, refs_desc=_BERT_REFS,
    hyp_desc="wp-merge+sep-del+remove_repeat+strip-lc",
    split_key=lambda ex: _py3_key(ex.source), split_ref=_bert_ref,
    key_fn=_py3_key, ref_fn=lambda x: x.strip().lower(),
    hyp_fn=lambda h: mist_clean(h).strip().lower(), legacy_lines=False)

MIST_QUORA = CocoRecipe(
    name="mist-quora", family="quora", key_desc="source-strip-lc", refs_desc="target-strip-lc",
    hyp_desc="wp-merge+sep-del+remove_repeat+fixtok-py3+lc",
    split_key=lambda ex: _py3_key(ex.source), split_ref=lambda ex: ex.target.strip().lower(),
    key_fn=_py3_key, ref_fn=lambda x: x.strip().lower(),
    hyp_fn=lambda h: fix_tokenization(mist_clean(h).strip(), False).lower(), legacy_lines=False)
