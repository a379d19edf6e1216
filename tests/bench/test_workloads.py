"""The benchmark's workloads and its count of cacheable tokens."""

import pytest

from backend.bench import capacity, workloads
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


def test_the_knowledge_runs_ask_the_same_questions_first():
    questions = [f"question {i}?" for i in range(30)]
    on = workloads.knowledge(questions, single=8, concurrency=[2, 4], rounds=2, first_concurrent=8)
    off = workloads.knowledge(
        questions,
        single=3,
        concurrency=[2],
        rounds=1,
        first_concurrent=8,
        offsets_of=[2, 4],
        offsets_rounds=2,
    )
    asked = {w.part: [c.turns[0] for c in w.conversations] for w in on}
    assert {w.part: w.concurrency for w in on} == {"c1": 1, "c2": 2, "c4": 4}
    assert [len(asked[p]) for p in ("c1", "c2", "c4")] == [8, 4, 8]
    flat = [q for part in asked.values() for q in part]
    assert len(flat) == len(set(flat))  # every question a new one
    off_asked = {w.part: [c.turns[0] for c in w.conversations] for w in off}
    assert off_asked["c1"] == asked["c1"][:3] and off_asked["c2"] == asked["c2"][:2]
    assert all(c.bot == workloads.KNOWLEDGE_BOT for w in on for c in w.conversations)
    # Past the eval questions, numbered again with the number first: no shared block of its own.
    assert workloads.knowledge_question(questions, 31) == "Account TB-10031: question 1?"


def test_the_retrieval_conversations_ask_consecutive_questions():
    questions = [f"question {i}?" for i in range(30)]
    load = workloads.knowledge_retrieval(questions, 2, 6)
    assert load.concurrency is None and load.part == "retrieval"
    assert [c.turns for c in load.conversations][1] == tuple(f"question {i}?" for i in range(6, 12))


def test_the_help_center_bot_s_questions_come_from_its_eval_cases():
    from backend.bench.questions import eval_questions
    from backend.config import PROJECT_ROOT

    asked = eval_questions(PROJECT_ROOT / "prompts" / workloads.KNOWLEDGE_BOT)
    assert len(asked) >= 30 and len(set(asked)) == len(asked)
    assert "Can I talk to a real person please?" not in asked  # the bot would hand over


def test_capacity_messages_are_long_distinct_and_fit_the_widget():
    texts = [capacity.long_message(c, t, 3600) for c in range(40) for t in range(2)]
    assert all(3000 <= len(text) <= 3600 for text in texts)
    assert len({text[:40] for text in texts}) == len(texts)  # distinct from the first words
    assert capacity.long_message(3, 1, 3600) == capacity.long_message(3, 1, 3600)
    assert "NW-04003" in capacity.follow_up(3)


def test_the_capacity_plan_needs_room_for_every_checkpoint_s_returning_customers():
    capacity.CapacityPlan((16, 20, 24), returning=2)
    with pytest.raises(ValueError, match="growing"):
        capacity.CapacityPlan((20, 16), returning=1)
    with pytest.raises(ValueError, match="first count"):
        capacity.CapacityPlan((4, 8, 12), returning=2)


def test_bench_prompts_keep_the_bots_asked_for_and_move_a_help_center_out_of_the_prefix(tmp_path):
    from backend.bench.servers import bench_prompts
    from backend.config import PROJECT_ROOT
    from backend.prompting.definitions import load_bots

    copy = bench_prompts(PROJECT_ROOT / "prompts", tmp_path / "p", only=["shop-en"])
    assert set(load_bots(copy)) == {"shop-en"} and (copy / "_judges").is_dir()
    copy = bench_prompts(PROJECT_ROOT / "prompts", tmp_path / "q", retrieval=[workloads.KNOWLEDGE_BOT])
    bots = load_bots(copy)
    assert bots[workloads.KNOWLEDGE_BOT].knowledge_settings.max_prefix_tokens == 0
    assert bots["shop-en"].knowledge_settings.max_prefix_tokens is None
    assert all(bot.handoff.max_unanswered == 1000000 for bot in bots.values())
    # The handoff judges are still asked, but hand a benchmark conversation over only when all but certain.
    from backend.prompting.judge_prompts import shared_judge_prompts

    for language in ("en", "zh"):
        judges = shared_judge_prompts(copy, language, ("handoff", "offer_accepted"))
        assert {judge.threshold for judge in judges.values()} == {0.99}
