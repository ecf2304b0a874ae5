"""Output statistics that tell a model that learned from one that emits near-constant text.

A degenerate run can score above zero (BLEU rewards the frequent n-grams of a constant output),
so a score alone is not evidence. Every run record carries these figures and ``bench table``,
the leaderboard and ``bench run`` flag a run as degenerate when

- its most frequent output is more than 2 % of all outputs, or
- its distinct-output ratio is below half the references' distinct ratio on the same examples
  (Quora's test references are 72.8 % distinct, SQuAD's 99.4 %).

Lengths are whitespace tokens of the detokenised outputs. ``at_max_len`` is the share of outputs
as long as the longest output: a decoder that runs into its length cap shows up as a large share
there without the harness having to know each system's cap.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from bench.api.text import clip_repr

MOST_FREQUENT_LIMIT = 0.02
DISTINCT_FRACTION_OF_REFERENCES = 0.5


def _trigram_repeat_rate(tokens: Sequence[str]) -> float:
    """Share of an output's trigrams that already occurred earlier in the same output."""
    grams = [tuple(tokens[i : i + 3]) for i in range(len(tokens) - 2)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def output_stats(outputs: Sequence[str], references: Sequence[str]) -> dict[str, Any]:
    """The statistics of one run's outputs against the references of the same examples."""
    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs for {len(references)} references")
    n = len(outputs)
    if n == 0:
        return {"n": 0}
    counts = Counter(o.strip() for o in outputs)
    top, top_n = counts.most_common(1)[0]
    toks = [o.split() for o in outputs]
    lengths = [len(t) for t in toks]
    ref_len = sum(len(r.split()) for r in references) / n
    longest = max(lengths)
    stats = {
        "n": n,
        "distinct_ratio": len(counts) / n,
        "reference_distinct_ratio": len({r.strip() for r in references}) / n,
        "most_frequent": top,
        "most_frequent_share": top_n / n,
        "length_ratio": (sum(lengths) / n) / ref_len if ref_len else 0.0,
        "repeated_trigram_rate": sum(_trigram_repeat_rate(t) for t in toks) / n,
        "at_max_len": (sum(1 for x in lengths if x == longest) / n) if longest else 0.0,
    }
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in stats.items()}


def degeneracy(stats: Mapping[str, Any] | None) -> list[str]:
    """The reasons a run counts as degenerate (empty: it does not, or there are no statistics)."""
    if not stats or not stats.get("n"):
        return []
    reasons = []
    share = stats["most_frequent_share"]
    if share > MOST_FREQUENT_LIMIT and round(share * stats["n"]) > 1:  # one output repeated, not one of few
        reasons.append(
            f"most frequent output is {share:.1%} of outputs (> {MOST_FREQUENT_LIMIT:.0%}): "
            f"{clip_repr(str(stats['most_frequent']))}"
        )
    distinct, ref = stats["distinct_ratio"], stats["reference_distinct_ratio"]
    if distinct < DISTINCT_FRACTION_OF_REFERENCES * ref:
        reasons.append(f"{distinct:.1%} distinct outputs, below half the references' {ref:.1%}")
    return reasons


def summary(stats: Mapping[str, Any]) -> str:
    """One line for a footnote or a warning."""
    return (
        f"{stats['distinct_ratio']:.1%} distinct (references {stats['reference_distinct_ratio']:.1%}), "
        f"most frequent {stats['most_frequent_share']:.1%} ({clip_repr(str(stats['most_frequent']))}), "
        f"length ×{stats['length_ratio']:.2f} of the references, "
        f"repeated trigrams {stats['repeated_trigram_rate']:.1%}, at max length {stats['at_max_len']:.1%}"
    )
