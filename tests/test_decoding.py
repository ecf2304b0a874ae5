"""Greedy and beam search against exhaustive search on a toy prefix-dependent model."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from systems.decoding import SearchConfig, beam_search, blocked_ngram_tokens, greedy_search  # noqa: E402

V, EOS = 4, 0


class ToyModel:
    """log p(next | prefix) from a seeded RNG keyed by the prefix: fully prefix-dependent."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def logp(self, prefix: tuple[int, ...]) -> torch.Tensor:
        g = torch.Generator().manual_seed(hash((self.seed, prefix)) % (2**31))
        return torch.randn(V, generator=g).log_softmax(-1)

    def step(self, state: list[tuple[int, ...]], prev: torch.Tensor | None):
        if prev is not None:
            state = [p + (int(t),) for p, t in zip(state, prev.tolist(), strict=True)]
        return torch.stack([self.logp(p) for p in state]), state

    def reorder(self, state: list[tuple[int, ...]], index: torch.Tensor) -> list[tuple[int, ...]]:
        return [state[i] for i in index.tolist()]


def exhaustive(model: ToyModel, max_len: int, lp: float) -> list[int]:
    best, best_s = None, float("-inf")
    for n in range(0, max_len + 1):
        for body in itertools.product(range(1, V), repeat=n):
            s = sum(float(model.logp(body[:i])[body[i]]) for i in range(n))
            if n < max_len:
                s += float(model.logp(body)[EOS])
            score = s / (max(n, 1) ** lp) if lp else s
            if score > best_s:
                best, best_s = list(body), score
    return best


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("lp", [0.0, 1.0])
def test_wide_beam_equals_exhaustive_search(seed: int, lp: float) -> None:
    model = ToyModel(seed)
    cfg = SearchConfig(beam_size=64, max_len=3, min_len=0, eos_id=EOS, length_penalty=lp)
    assert beam_search(model, [()], 1, cfg)[0] == exhaustive(model, 3, lp)


def test_greedy_is_the_argmax_chain_and_batched_rows_are_independent() -> None:
    model = ToyModel(3)
    cfg = SearchConfig(beam_size=1, max_len=6, min_len=0, eos_id=EOS)
    prefix: tuple[int, ...] = ()
    expect = []
    for _ in range(6):
        tok = int(model.logp(prefix).argmax())
        if tok == EOS:
            break
        expect.append(tok)
        prefix += (tok,)
    assert greedy_search(model, [()], 1, cfg)[0] == expect
    assert greedy_search(model, [(), (), ()], 3, cfg) == [expect] * 3


def test_min_len_and_beam_one_equals_greedy() -> None:
    model = ToyModel(7)
    for seed in range(10):
        model = ToyModel(seed)
        cfg = SearchConfig(beam_size=1, max_len=5, min_len=3, eos_id=EOS)
        out = greedy_search(model, [()], 1, cfg)[0]
        assert len(out) >= 3 and EOS not in out
        assert beam_search(model, [()], 1, cfg)[0] == out


def test_beam_results_do_not_depend_on_batch_neighbours() -> None:
    cfg = SearchConfig(beam_size=3, max_len=5, min_len=0, eos_id=EOS)

    class Two(ToyModel):  # row-dependent model: rows carry their own seed in the prefix head
        def logp(self, prefix: tuple[int, ...]) -> torch.Tensor:
            return ToyModel(prefix[0]).logp(prefix[1:])

    two = Two(0)
    alone = [beam_search(two, [(s,)], 1, cfg)[0] for s in (1, 2)]
    assert beam_search(two, [(1,), (2,)], 2, cfg) == alone


def test_ngram_blocking() -> None:
    assert blocked_ngram_tokens([5, 6, 7, 5, 6], 3, frozenset()) == {7}
    assert blocked_ngram_tokens([5, 6, 7, 5, 6], 3, frozenset({6})) == set()  # ignored word in the prefix
    assert blocked_ngram_tokens([1, 1], 1, frozenset()) == {1}

    class Loop:  # always prefers token 1: without blocking the output is 1 1 1 1 ...
        def step(self, state, prev):
            lp = torch.tensor([[-9.0, -0.1, -2.0, -3.0]]).expand(len(state), -1).clone()
            return lp, state

        def reorder(self, state, index):
            return [state[i] for i in index.tolist()]

    for k in (1, 2):
        cfg = SearchConfig(beam_size=k, max_len=8, min_len=6, eos_id=EOS, no_repeat_ngram=2)
        out = (greedy_search if k == 1 else beam_search)(Loop(), [()] * 1, 1, cfg)[0]
        grams = [tuple(out[i : i + 2]) for i in range(len(out) - 1)]
        # every bigram is new; it stops (EOS) once all continuations of the last token are used up
        assert len(grams) == len(set(grams)) and out[:2] == [1, 1] and len(out) == 6, out


def test_one_search_with_a_rule_per_reference() -> None:
    """UniLM, CopyBERT and ERNIE-GEN decode through this one search; only the beam rule of their reference code
    differs (an unknown rule is refused), and CopyBERT's reference rule searches one input at a time."""
    from systems.decoding import RULES, PrefixSteps

    assert RULES == ("fairseq", "opennmt", "paddle")
    with pytest.raises(ValueError, match="rule='beam'"):
        SearchConfig(rule="beam")
    model = ToyModel(2)
    cfg = SearchConfig(beam_size=2, max_len=4, min_len=0, eos_id=EOS, rule="opennmt", n_best=2)
    with pytest.raises(ValueError, match="one input at a time"):
        beam_search(model, [(), ()], 2, cfg)
    prefix = PrefixSteps(lambda prefixes: torch.stack([model.logp(p) for p in prefixes]))
    assert beam_search(prefix, [()], 1, cfg) == beam_search(model, [()], 1, cfg)
    # on a beam wide enough to keep everything, a raw-score search finds the exhaustive best (opennmt's output
    # would drop the last token of a hypothesis the length cut, as its reference does)
    for seed, rule in itertools.product(range(5), ("fairseq", "paddle")):
        wide = SearchConfig(beam_size=64, max_len=3, min_len=0, eos_id=EOS, rule=rule)
        assert beam_search(ToyModel(seed), [()], 1, wide)[0] == exhaustive(ToyModel(seed), 3, 0.0), (seed, rule)
