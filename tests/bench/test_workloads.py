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


def test_the_speculative_scenario_asks_distinct_questions_at_each_concurrency():
    loads = workloads.speculative(100, [0.5, 1.0, 2.0], 30)
    concurrency = {w.part: len(w.conversations) for w in loads if w.part.startswith("c")}
    assert concurrency == {f"c{c}": c for c in workloads.CONCURRENCY}
    assert all(w.requests >= 8 for w in loads if w.part.startswith("c"))
    assert [w.part for w in loads[len(concurrency) :]] == ["article", "support", "support", "support"]
    asked = [text for w in loads for c in w.conversations for text in c.turns]
    assert len(asked) == len(set(asked))  # no reply is a cache hit of another part's
    assert {w.label for w in loads} >= {"speculative:c1", "speculative:article", "speculative:support@2"}
