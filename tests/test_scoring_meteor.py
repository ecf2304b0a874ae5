"""The long-lived METEOR process: Python pooling equals the jar's EVAL; one JVM per session."""

import numpy as np
import pytest

from bench.api.types import Example, Split
from bench.scoring import ScoringSession, score_all, score_split
from bench.scoring.meteor import MeteorProcess, corpus_score, parse_stats, score_line, scores_from_stats

ITEMS = [
    ("the cat sat on the mat", ["the cat sat on the mat"]),  # perfect: its chunk is not pooled
    ("a cat is sitting on a mat", ["the cat sat on the mat", "there is a cat on the mat"]),
    ("", ["what is the capital of france ?"]),  # empty hypothesis
    ("which city is the capital of france ?", ["what is the capital of france ?"]),
    ("running dogs", ["the dog runs"]),  # stem match
    ("Héllo , wörld !", ["hello world"]),
]


@pytest.fixture(scope="module")
def session():
    with ScoringSession() as s:  # one JVM for the whole module
        yield s


def test_python_pooling_equals_the_jar_eval(session):
    proc: MeteorProcess = session._process()
    lines = proc.stats([score_line(h, r) for h, r in ITEMS])
    proc.start()
    raw = proc._proc  # ask the same JVM for its own EVAL answer
    raw.stdin.write(("EVAL ||| " + " ||| ".join(lines) + "\n").encode())
    raw.stdin.flush()
    java_items = [float(raw.stdout.readline()) for _ in lines]
    java_corpus = float(raw.stdout.readline())
    stats = parse_stats(lines)
    assert np.allclose(scores_from_stats(stats), java_items, rtol=0, atol=1e-15)
    assert abs(corpus_score(stats) - java_corpus) < 1e-15
    assert stats[0, 20] == 1.0 and java_items[0] > 0.99  # the perfect item (one chunk)


def test_score_line_matches_pycocoevalcap_cleanup():
    assert score_line("a  b", ["r1", "r2"]) == "SCORE ||| r1 ||| r2 ||| a b"


def _tiny_split() -> Split:
    exs = []
    for i, (_h, refs) in enumerate(ITEMS[1:5]):
        exs.append(Example(id=str(i), source=f"answer {i} [SEP] paragraph {i}", target=refs[0],
                           fields={"du_key": f"sentence {i}", "du_ref": refs[0]}))
    return Split(task="squad_qg", name="test", examples=tuple(exs), sha256="0" * 64)


def test_one_jvm_serves_several_recipes_and_runs(session):
    split = _tiny_split()
    hyps = [h for h, _ in ITEMS[1:5]]
    s = session
    first = score_all(hyps, split, session=s, bootstrap=50)
    sent = s.meteor_lines_sent
    again = score_split("nqg", hyps, split, session=s, bootstrap=50)
    assert s.meteor_starts == 1
    assert s.meteor_lines_sent == sent  # identical items are never re-sent to Java
    names = [x.recipe for x in first]
    assert names == ["nqg", "unilm", "unilm-tok", "glge", "mist", "sacrebleu"]
    assert again.metrics == first[0].metrics
    assert all(x.signature.startswith(("qg:", "bleu:")) for x in first)
    assert len({x.signature for x in first}) == len(first)
