"""When an agent hands a conversation back, the bot answers what the customer asked meanwhile:
one reply to the last waiting message, through the turn's own stages; if it cannot, the
agent is told. On the real engine, Postgres and Redis, no HTTP."""

from backend.conversations.models import MessageRole, MessageStatus
from backend.events.bus import MESSAGE_CREATED, Event
from backend.widget.routes import customer_sees
from tests.helpers import assert_released, done_of, new_agent, open_conversation, stored, take_turn


async def handed_over_with_waiting_messages(services, *texts):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    done_of(await take_turn(services, cid, "Where is my order?"))
    async with services.new_work() as work:
        await services.inbox.take_over(work, cid, agent)
    for text in texts:
        await take_turn(services, cid, text)  # waits for the person: no reply
    return cid


async def hand_back(services, cid):
    async with services.new_work() as work:
        await services.inbox.hand_back(work, cid)
        return await services.turns.answer_waiting(work, cid)


async def test_the_bot_answers_the_last_waiting_message_once_with_its_context_append_only(services):
    cid = await handed_over_with_waiting_messages(services, "Hello?", "Is anyone there? Order 1042.")
    _, waiting = await stored(services, cid)

    answer = await hand_back(services, cid)
    assert answer.waiting == 2
    assert answer.answering_message_id == waiting[-1].id
    assert answer.unanswered_reason is None
    await services.turns.drain()

    conversation, messages = await stored(services, cid)
    assert [m.role for m in messages[-3:]] == [MessageRole.USER, MessageRole.USER, MessageRole.ASSISTANT]
    reply = messages[-1]
    assert reply.status == MessageStatus.COMPLETE and reply.token_ids
    # Its prompt is everything said so far, and the hand-back's warm-up or the turns before cached it.
    history = sum(len(m.token_ids) for m in messages[:-1]) + len(conversation.context_token_ids)
    assert reply.prompt_tokens > history
    assert reply.cached_tokens and reply.cached_tokens >= history // 2
    # The session kept hot is what Postgres rebuilds: the context stayed append-only.
    async with services.new_work() as work:
        rebuilt = await services.context.rebuild(work.db, conversation)
    assert (await services.context.store.get(cid)).token_ids == rebuilt
    await assert_released(services, cid)
    # The customer's live stream carries it (the widget shows each reply once).
    assert customer_sees(cid, Event(MESSAGE_CREATED, cid, {"role": "assistant", "message_id": reply.id}))


async def test_nothing_waiting_means_no_reply(services):
    cid = await handed_over_with_waiting_messages(services)
    answer = await hand_back(services, cid)
    assert (answer.waiting, answer.answering_message_id, answer.unanswered_reason) == (0, None, None)
    await services.turns.drain()
    _, messages = await stored(services, cid)
    assert messages[-1].role == MessageRole.ASSISTANT and len(messages) == 2


async def test_without_an_engine_the_agent_is_told_the_messages_are_unanswered(services):
    cid = await handed_over_with_waiting_messages(services, "Hello? Order 1042.")
    current = services.engine.current
    services.engine.detach()
    try:
        answer = await hand_back(services, cid)
    finally:
        services.engine.attach(current)
    assert answer.waiting == 1 and answer.answering_message_id is None
    assert answer.unanswered_reason is not None
    assert answer.unanswered_reason.startswith("the bot could not answer: the model is still loading")
    conversation, messages = await stored(services, cid)
    assert conversation.status == "bot"  # handed back all the same
    assert messages[-1].role == MessageRole.USER
    await assert_released(services, cid)
