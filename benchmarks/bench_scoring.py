"""Wall time of scoring the full Du test under all QG recipes in one call vs one plain METEOR pass.

The plain pass is what every reference script pays per run and per recipe: pycocoevalcap's
``Meteor()`` (JVM start + paraphrase table) and ``compute_score`` on the nqg grouping. The
all-recipes call (nqg, unilm, unilm-tok, glge, mist: BLEU, METEOR, ROUGE-L, 1,000-sample bootstrap
CIs) must stay under 2x that. Exit status 1 if it does not.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

QG_RECIPES = ["nqg", "unilm", "unilm-tok", "glge", "mist"]


def main() -> int:
    from bench.data import data_dir, load_split
    from bench.scoring import score_all
    from bench.scoring.inputs import read_lines

    root = Path(data_dir())
    split = load_split("squad_qg", "test")
    hyps = read_lines(root / "qg_outputs" / "nqg-du2017-test.txt").lines
    src = read_lines(root / "du2017" / "src-test.txt").legacy()
    tgt = read_lines(root / "du2017" / "tgt-test.txt").legacy()

    from pycocoevalcap.meteor.meteor import Meteor

    res, gts = {}, defaultdict(list)
    for k, r, h in zip(src, tgt, hyps, strict=True):
        res[k] = [h]
        gts[k].append(r)
    t0 = time.perf_counter()
    meteor = Meteor()
    plain_score, _ = meteor.compute_score(dict(gts), res)
    plain = time.perf_counter() - t0
    del meteor

    t0 = time.perf_counter()
    scores = score_all(hyps, split, recipes=QG_RECIPES)
    both = time.perf_counter() - t0

    for sc in scores:
        print(f"  {sc}  (n={sc.n_items})")
    print(f"plain pycocoevalcap METEOR pass (JVM start + 6,652 items): {plain:7.1f} s  METEOR={plain_score:.5f}")
    print(f"all {len(QG_RECIPES)} QG recipes, one call (BLEU+METEOR+ROUGE-L, CIs): {both:7.1f} s")
    ratio = both / plain
    ok = ratio < 2.0
    print(f"ratio {ratio:.2f}x (limit 2.00x): {'OK' if ok else 'TOO SLOW'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
