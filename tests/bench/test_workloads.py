"""The benchmark's workloads and its count of cacheable tokens."""

from backend.bench import workloads
from backend.bench.load import cacheable


def test_cacheable_counts_full_blocks_and_leaves_the_last_prompt_token():
    assert cacheable(657, 680, 32) == 640
    assert cacheable(700, 680, 32) == 672  # the whole prompt was seen: all but its last token
    assert cacheable(0, 680, 32) == 0


def test_workloads_are_distinct_and_reproducible():
    article = workloads.article(100)
    assert len({c.turns[0] for c in article.conversations}) == 100
    assert workloads.support(1.0, 30) == workloads.support(1.0, 30)
    support = workloads.support(2.0, 60)
    assert support.requests > len(support.conversations) > support.requests / 2  # mostly new ones
    for conversation in support.conversations:
        assert list(conversation.arrivals) == sorted(conversation.arrivals)
    assert all(c.bot is None for c in workloads.random_documents(3).conversations)
