"""WMT's all-pairs cluster rule with Holm's correction, on p-values given by hand (no scoring)."""

from __future__ import annotations

import pytest

from bench.report.clusters import form_clusters, holm


def _p(table: dict[tuple[int, int], float], default: float = 0.001):
    return lambda a, b: table.get((a, b), default)


def test_holm_matches_the_textbook_step_down() -> None:
    # m = 3: 3 * 0.01, max(0.03, 2 * 0.02), max(0.04, 1 * 0.04)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped
    assert holm([]) == []


def test_a_boundary_needs_every_pair_across_it_to_differ() -> None:
    # 0 beats 1 clearly, but 0 and 2 are not separated: neighbour chaining would draw 0 | 1 2, all pairs must not
    c = form_clusters(3, _p({(0, 1): 0.001, (0, 2): 0.4, (1, 2): 0.5}))
    assert c.spans == ((0, 2),)
    assert c.boundaries[0].p == 0.4 and not c.boundaries[0].drawn  # the largest p of the pairs it separates


def test_clusters_are_spans_between_drawn_boundaries() -> None:
    c = form_clusters(4, _p({(0, 1): 0.3, (2, 3): 0.6}))
    assert c.spans == ((0, 1), (2, 3))
    assert [b.drawn for b in c.boundaries] == [False, True, False]
    assert c.span_of(1) == (0, 1) and c.span_of(3) == (2, 3)


def test_the_correction_can_remove_a_boundary_an_uncorrected_test_draws() -> None:
    # three boundaries at p = 0.02: each significant alone, none after Holm (3 * 0.02 = 0.06)
    c = form_clusters(4, _p({}, default=0.02))
    assert all(b.p == 0.02 and b.p_holm == pytest.approx(0.06) for b in c.boundaries)
    assert c.spans == ((0, 3),)
    assert form_clusters(4, _p({}, default=0.02), alpha=0.1).spans == ((0, 0), (1, 1), (2, 2), (3, 3))


def test_each_pair_is_asked_once_and_the_result_is_deterministic() -> None:
    asked: list[tuple[int, int]] = []

    def p(a: int, b: int) -> float:
        asked.append((a, b))
        return 0.001

    first = form_clusters(5, p)
    assert sorted(asked) == [(a, b) for a in range(5) for b in range(a + 1, 5)]
    assert first == form_clusters(5, lambda a, b: 0.001)
    assert form_clusters(1, p).spans == ((0, 0),) and form_clusters(0, p).spans == ()
