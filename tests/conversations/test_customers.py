"""A customer's other steps through `CustomerConversations`: start a conversation, open it with
the token, read it back."""

import pytest

from backend.errors import Forbidden, NotFound, PayloadTooLarge
from backend.tokens import digest
from tests.helpers import done_of, open_conversation, stored, take_turn


async def test_a_conversation_starts_with_the_bots_greeting_and_a_token_kept_only_as_a_digest(services):
    started = await open_conversation(services, "shop-en", {"name": "Ada"})

    bot = services.bots["shop-en"]
    assert started.greeting == bot.definition.greeting
    conversation, messages = await stored(services, started.conversation.id)
    assert (conversation.status, conversation.message_count, messages) == ("bot", 0, [])
    assert conversation.bot_id == bot.bot_id and conversation.prompt_version_id == bot.prompt_version_id
    assert conversation.customer_token_hash == digest(started.customer_token) != started.customer_token
    assert conversation.context == {"name": "Ada"}
    assert conversation.context_token_ids == services.assembler.customer_context(
        bot.definition, {"name": "Ada"}
    )


async def test_an_unknown_bot_or_a_context_too_long_for_the_model_is_refused(make_services):
    services = await make_services(max_model_len=1024)
    with pytest.raises(NotFound, match="known bots: appliance-zh, shop-en"):
        await open_conversation(services, "no-such-bot")
    with pytest.raises(PayloadTooLarge, match="context window"):
        await open_conversation(services, "shop-en", {"notes": "lots to say " * 200})


async def test_only_the_customers_own_token_opens_the_conversation(services):
    mine, theirs = await open_conversation(services), await open_conversation(services)
    cid = mine.conversation.id
    async with services.new_work() as work:
        assert (await services.customers.authorize(work, cid, mine.customer_token)).id == cid
        for wrong in (theirs.customer_token, "", mine.customer_token[:-1]):
            with pytest.raises(Forbidden):
                await services.customers.authorize(work, cid, wrong)
        with pytest.raises(NotFound):
            await services.customers.authorize(
                work, "00000000-0000-0000-0000-000000000000", mine.customer_token
            )


async def test_the_history_is_the_greeting_then_every_message_in_order(services):
    started = await open_conversation(services, "appliance-zh")
    cid = started.conversation.id
    first = done_of(await take_turn(services, cid, "空调可以免费安装吗？"))
    second = done_of(await take_turn(services, cid, "保修多久？"))

    async with services.new_work() as work:
        conversation = await services.customers.authorize(work, cid, started.customer_token)
        greeting, messages = await services.customers.history(work, conversation)

    assert greeting == started.greeting == "您好，请问有什么可以帮您？"
    assert [(m.role, m.text) for m in messages] == [
        ("user", "空调可以免费安装吗？"),
        ("assistant", first.text),
        ("user", "保修多久？"),
        ("assistant", second.text),
    ]
    assert [m.seq for m in messages] == [1, 2, 3, 4]
