"""What agents do to conversations, through `InboxService` on the real engine, Postgres and
Redis, no HTTP: replies that join the model's context, take-over and hand-back, private notes."""

import asyncio

import pytest

from backend.agents import service as agents
from backend.conversations.schemas import IdentityIn
from backend.errors import Conflict, NotFound
from backend.events.bus import EVENT_TYPES, NOTE_CREATED
from backend.turns.events import Done, Token
from backend.widget.routes import customer_sees
from tests.helpers import (
    PacedReplies,
    assert_released,
    done_of,
    new_agent,
    open_conversation,
    stored,
    take_turn,
)


async def agent_reply(services, conversation_id, agent, text):
    async with services.new_work() as work:
        return await services.inbox.reply(work, conversation_id, agent, text)


async def test_an_agent_reply_takes_the_conversation_and_joins_the_models_context(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    done_of(await take_turn(services, cid, "Where is my order?"))
    before = (await services.context.store.get(cid)).token_ids

    reply = await agent_reply(services, cid, agent, "Hi, I'm Sam. Let me check.")

    assert (reply.role, reply.seq, reply.author_agent_id) == ("agent", 3, agent.id)
    assert reply.token_ids == services.assembler.scripted_reply("Hi, I'm Sam. Let me check.")
    conversation, messages = await stored(services, cid)
    assert (conversation.status, conversation.assignee_id) == ("open", agent.id)
    assert conversation.handoff_reason == "agent" and conversation.first_human_reply_at is not None
    assert [m.role for m in messages] == ["user", "assistant", "agent"]
    # The model will see the agent's words as its own turn, appended to what it saw before.
    session = await services.context.store.get(cid)
    assert session.token_ids == [*before, *reply.token_ids] and session.message_count == 3
    await assert_released(services, cid)


async def test_a_canned_response_is_expanded_and_an_unknown_one_is_refused(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        await agents.create_canned(
            work.db, shortcode="poles", text="Tent poles are repaired free within 2 years.", agent=agent
        )

    sent = await agent_reply(services, cid, agent, "/poles")
    assert sent.text == "Tent poles are repaired free within 2 years."
    with pytest.raises(NotFound, match="no-such-code"):
        await agent_reply(services, cid, agent, "/no-such-code")
    _, messages = await stored(services, cid)
    assert [m.text for m in messages] == ["Tent poles are repaired free within 2 years."]
    await assert_released(services, cid)


async def test_take_over_hand_back_and_the_bot_resumes_with_its_cache(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services, context={"name": "Ada"})).conversation.id
    done_of(await take_turn(services, cid, "Where is my order?"))
    async with services.new_work() as work:
        taken = await services.inbox.take_over(work, cid, agent)
        assert (taken.status, taken.assignee_id) == ("open", agent.id)
    await agent_reply(services, cid, agent, "Hi Ada, I'm Sam. Let me check.")
    conversation, _ = await stored(services, cid)
    async with services.new_work() as work:
        context_before = await services.context.rebuild(work.db, conversation)

    async with services.new_work() as work:
        handed = await services.inbox.hand_back(work, cid)
        assert (handed.status, handed.assignee_id) == ("bot", None)
    resumed = done_of(await take_turn(services, cid, "Thanks. And the delivery time?"))

    # The agent's words are in the model's context, and the hand-back warmed all of it.
    assert resumed.prompt_tokens > len(context_before)
    assert resumed.cached_tokens >= len(context_before) - 32
    assert resumed.status == "bot"
    async with services.new_work() as work:
        with pytest.raises(Conflict, match="only an open conversation"):
            await services.inbox.hand_back(work, cid)
    await assert_released(services, cid)


async def test_notes_stay_private_and_out_of_the_models_context(services):
    agent = await new_agent(services)
    started = await open_conversation(services)
    cid = started.conversation.id
    done_of(await take_turn(services, cid, "My tent pole broke"))
    context_before = (await services.context.store.get(cid)).token_ids

    async with services.new_work() as work:
        note = await services.inbox.add_note(work, cid, agent, "VIP: offer express repair")
    assert note.agent_id == agent.id

    assert (await services.context.store.get(cid)).token_ids == context_before  # the model never sees it
    async with services.new_work() as work:
        _, messages, notes, _ = await services.inbox.transcript(work, cid)
        conversation = await services.customers.authorize(work, cid, started.customer_token)
        _, history = await services.customers.history(work, conversation)
    assert [n.text for n in notes] == ["VIP: offer express repair"]
    assert all("VIP" not in m.text for m in [*messages, *history])
    with pytest.raises(NotFound):
        async with services.new_work() as work:
            await services.inbox.add_note(work, "00000000-0000-0000-0000-000000000000", agent, "lost")


async def test_a_take_over_mid_reply_stops_the_bot(make_services, tiny_engine):
    # A reply streamed as written: the agent steps in once its first token is shown. Paced, so
    # that the reply is still being written when the take-over's stop arrives.
    services = await make_services(
        engine=PacedReplies(tiny_engine), max_reply_tokens=1300, answer_checks="off"
    )
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, "Tell me everything")

    events = []
    async for event in turn.events():
        events.append(event)
        if isinstance(event, Token) and len(events) == 2:  # the first token: an agent steps in
            async with services.new_work() as work:
                await services.inbox.take_over(work, cid, agent)

    done = done_of(events)
    assert isinstance(done, Done) and done.finish_reason == "interrupted"
    assert done.handoff and done.status == "open"
    assert 0 < done.completion_tokens < 1300
    await assert_released(services, cid)
    # The agent can reply at once; what the customer saw of the bot stays in the context.
    await agent_reply(services, cid, agent, "Sam here.")
    _, messages = await stored(services, cid)
    assert [(m.role, m.status) for m in messages] == [
        ("user", "complete"),
        ("assistant", "interrupted"),
        ("agent", "complete"),
    ]
    assert messages[1].text == done.text


async def test_a_canned_response_fills_in_the_customers_and_the_agents_names(services):
    agent = await new_agent(services)
    async with services.new_work() as work:
        await agents.create_canned(
            work.db,
            shortcode="hello-names",
            text="Hi {customer_name}, {agent_name} here. {order}",
            agent=agent,
        )
        identified = await services.customers.start(work, "shop-en", None, IdentityIn(name="Ada"))
    from_context = (await open_conversation(services, context={"name": "Grace"})).conversation.id
    unknown = (await open_conversation(services)).conversation.id

    sent = {
        cid: (await agent_reply(services, cid, agent, "/hello-names")).text
        for cid in (identified.conversation.id, from_context, unknown)
    }
    # The shop's identity first, then a name in the context; unknown braces stay as written.
    assert sent == {
        identified.conversation.id: f"Hi Ada, {agent.name} here. {{order}}",
        from_context: f"Hi Grace, {agent.name} here. {{order}}",
        unknown: f"Hi there, {agent.name} here. {{order}}",
    }


async def test_a_note_is_announced_to_agents_but_never_to_the_customer(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    subscription = await services.bus.subscribe()

    async with services.new_work() as work:
        note = await services.inbox.add_note(work, cid, agent, "Secret: refund approved")

    event = await asyncio.wait_for(anext(subscription), 10)
    assert (event.type, event.conversation_id) == (NOTE_CREATED, cid)
    assert event.data == {"note_id": note.id, "agent_id": agent.id}  # never the note's text
    assert NOTE_CREATED in EVENT_TYPES  # agents' streams and webhooks
    assert not customer_sees(cid, event)
