"""A customer's turn through `ChatTurns.take`, on the real engine, Postgres and Redis, no HTTP.

Every path ends with the turn's reply slot and lock let go, whether the bot replied, a
decision settled the turn, or the turn was refused.
"""

import pytest

from backend.engine.interface import EngineUnavailable, TokenDelta
from backend.errors import Conflict, ContextWindowFull
from backend.prompting.assembler import cacheable_tokens
from backend.turns.events import Accepted, Failed, Token, Waiting
from tests.helpers import (
    HeldReplies,
    WrappedEngine,
    assert_released,
    done_of,
    new_agent,
    open_conversation,
    prefix_tokens,
    stored,
    take_turn,
)

BLOCK = 32


class DiesMidReply(WrappedEngine):
    """The real engine, except that chosen replies break after their first token."""

    fail_next = False

    async def stream(self, prompt_ids, **options):
        async for item in self.inner.stream(prompt_ids, **options):
            yield item
            if self.fail_next and isinstance(item, TokenDelta):
                self.fail_next = False
                raise EngineUnavailable("the model engine failed: worker died")


async def test_a_bot_reply_is_streamed_settled_and_kept_hot(services):
    cid = (await open_conversation(services)).conversation.id
    events = await take_turn(services, cid, "Can I return a tent?")

    accepted, tokens, done = events[0], events[1:-1], done_of(events)
    assert accepted.reply_message_id == done.message_id
    assert tokens and all(isinstance(token, Token) for token in tokens)
    assert "".join(token.text for token in tokens) == done.text
    assert (done.status, done.handoff) == ("bot", False)
    assert done.completion_tokens >= 1 and done.finish_reason in ("stop", "length")
    # The bot's prefix was warmed when the services started: the first turn already hits it.
    prefix = services.bots["shop-en"].prefix.token_ids
    assert done.cached_tokens >= cacheable_tokens(len(prefix), BLOCK) - BLOCK

    conversation, (user, reply) = await stored(services, cid)
    assert conversation.message_count == 2 and conversation.status == "bot"
    assert (user.role, user.status, user.text, user.id) == (
        "user",
        "complete",
        "Can I return a tent?",
        accepted.user_message_id,
    )
    assert (reply.role, reply.status, reply.text) == (
        "assistant",
        "complete",
        done.text,
    )
    assert (reply.prompt_tokens, reply.cached_tokens) == (done.prompt_tokens, done.cached_tokens)
    # The session is kept hot, token for token what Postgres would rebuild.
    session = await services.context.store.get(cid)
    async with services.new_work() as work:
        assert session.token_ids == await services.context.rebuild(work.db, conversation)
    assert session.message_count == 2
    await assert_released(services, cid)


async def test_the_model_sees_the_matching_policy_lines_and_postgres_keeps_what_the_customer_wrote(
    make_services,
):
    question = "How long is the warranty on a tent?"
    for count in (0, 2):
        services = await make_services(relevant_lines=count)
        cid = (await open_conversation(services)).conversation.id
        await take_turn(services, cid, question)
        conversation, (user, _reply) = await stored(services, cid)
        assert user.text == question
        seen = services.assembler.format.tokenizer.decode(user.token_ids)
        assert ("Tents carry a 2-year warranty" in seen) == (count > 0)
        bot = services.bots["shop-en"].definition
        note = bot.reference.note(question, count)
        assert user.token_ids == services.assembler.user_message(question, note)
        # What the model saw is rebuilt from Postgres token for token.
        session = await services.context.store.get(cid)
        async with services.new_work() as work:
            assert session.token_ids == await services.context.rebuild(work.db, conversation)


async def test_each_turn_reuses_the_cache_of_everything_said_before(services):
    cid = (await open_conversation(services, "appliance-zh", {"姓名": "王先生"})).conversation.id
    first = done_of(await take_turn(services, cid, "空调可以免费安装吗？"))
    second = done_of(await take_turn(services, cid, "保修多久？"))
    assert second.prompt_tokens > first.prompt_tokens
    assert second.cached_tokens >= first.prompt_tokens - BLOCK
    await assert_released(services, cid)


async def test_a_customer_asking_for_a_person_is_handed_over(services):
    cid = (await open_conversation(services)).conversation.id
    events = await take_turn(services, cid, "I want to talk to a real person please")

    handover = services.bots["shop-en"].definition.handoff.message
    accepted, token, done = events  # the reply's own tokens, held for the gate, never went out
    assert isinstance(accepted, Accepted) and accepted.reply_message_id == done.message_id
    assert token == Token(handover)
    assert (done.text, done.status, done.handoff) == (handover, "open", True)
    conversation, messages = await stored(services, cid)
    assert conversation.status == "open" and conversation.handoff_reason == "customer_request"
    assert [(m.role, m.status) for m in messages] == [
        ("user", "complete"),
        ("assistant", "complete"),
    ]
    assert messages[1].id == done.message_id and messages[1].text == handover
    assert (await services.context.store.get(cid)).message_count == 2
    await assert_released(services, cid)


async def test_a_conversation_a_human_has_waits_for_them(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        await services.inbox.take_over(work, cid, agent)

    accepted, waiting = await take_turn(services, cid, "Hello? Anyone there?")

    assert isinstance(accepted, Accepted) and accepted.reply_message_id is None
    assert waiting == Waiting("open")
    conversation, messages = await stored(services, cid)
    assert conversation.status == "open" and conversation.assignee_id == agent.id
    assert [(m.role, m.text) for m in messages] == [("user", "Hello? Anyone there?")]
    await assert_released(services, cid)


async def test_a_full_context_window_refuses_the_message_and_stores_nothing(make_services, tiny_settings):
    window = prefix_tokens(tiny_settings) + 140  # room for a short turn, not for a long one
    services = await make_services(max_model_len=window)
    cid = (await open_conversation(services)).conversation.id
    done_of(await take_turn(services, cid, "Hello"))

    with pytest.raises(ContextWindowFull, match=rf"context window \({window} tokens\)"):
        await take_turn(services, cid, "tell me everything " * 40)

    conversation, messages = await stored(services, cid)
    assert conversation.message_count == 2 and len(messages) == 2
    await assert_released(services, cid)


async def test_a_second_turn_while_one_is_running_is_a_conflict(make_services, tiny_engine):
    engine = HeldReplies(tiny_engine)
    services = await make_services(engine=engine)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        running = await services.turns.take(work, cid, "first")

    with pytest.raises(Conflict, match="still being written"):
        await take_turn(services, cid, "second")

    engine.go.set()
    done = done_of([event async for event in running.events()])
    _, messages = await stored(services, cid)
    assert [(m.role, m.text) for m in messages] == [
        ("user", "first"),
        ("assistant", done.text),
    ]
    await assert_released(services, cid)


async def test_a_failed_reply_keeps_the_message_and_a_retry_works(make_services, tiny_engine):
    engine = DiesMidReply(tiny_engine)
    # Without the model's judges no first words are held (the tiny model's newline might yet
    # become an "I don't know" to quote a line for), and streamed as written (no answer checks):
    # the one token written is shown.
    services = await make_services(engine=engine, model_judges=False, answer_checks="off")
    cid = (await open_conversation(services)).conversation.id
    engine.fail_next = True

    accepted, *tokens, failed = await take_turn(services, cid, "Where is my parcel?")

    assert isinstance(accepted, Accepted) and len(tokens) == 1
    assert isinstance(failed, Failed) and failed.code == "generation_failed"
    assert "your message is saved" in failed.detail
    await assert_released(services, cid)

    retry = done_of(await take_turn(services, cid, "Where is my parcel?"))
    _, messages = await stored(services, cid)
    assert [(m.role, m.status) for m in messages] == [
        ("user", "complete"),
        ("assistant", "failed"),
        ("user", "complete"),
        ("assistant", "complete"),
    ]
    assert messages[3].text == retry.text and "worker died" in messages[1].error
    # The failed reply added nothing to the context, and the cache still serves the bot's
    # prefix (657 tokens: 20 full blocks) and what follows it.
    assert retry.cached_tokens >= 640
    await assert_released(services, cid)
