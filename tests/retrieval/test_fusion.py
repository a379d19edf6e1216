"""Reciprocal rank fusion: ranks, not scores, decide."""

from backend.retrieval.fusion import K, fused


def test_a_passage_both_rankings_place_high_comes_first():
    words = [3.0, None, 1.0, 2.0]  # BM25: the second passage shares no word with the query
    meaning = [0.9, 0.95, 0.1, 0.5]  # cosines
    scores = fused(words, meaning)
    assert scores[1] == 1 / (K + 4) + 1 / (K + 1)  # missed by words: ranked after all it found
    assert sorted(range(4), key=lambda i: -scores[i]) == [0, 1, 3, 2]


def test_only_ranks_count_not_the_scales_of_the_scores():
    assert fused([10.0, 5.0, 1.0], [0.3, 0.2, 0.1]) == fused([1000.0, 1.0, 0.5], [0.9, 0.8, -0.5])


def test_ties_within_a_ranking_go_by_position():
    assert fused([1.0, 1.0]) == [1 / (K + 1), 1 / (K + 2)]
