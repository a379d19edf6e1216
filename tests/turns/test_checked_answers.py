"""Checked before shown (`[answers] checks`): a reply held until it is written and checked; one
the checks doubt never reaches the customer, who gets the best-matching source lines quoted,
with the offer of a person; the staff see both. Through the turn on the real engine, its reply
text replaced on purpose (the tiny model writes only newlines)."""

from typing import Any

import pytest

from backend.prompting.definitions import BotDefinitionError, load_bot
from backend.turns import settlement
from backend.turns.events import Token, TurnEvent, TurnStream
from tests.helpers import HeldReplies, done_of, new_agent, open_conversation, stored, take_turn
from tests.turns.test_checks import Streams

QUESTION = "How long is the warranty on backpacks?"
WRONG = "The warranty on backpacks is 2 years."  # the policy: backpacks 3 years, tents 2
OTHER_FIGURE = "The warranty on backpacks lasts 45 days."  # 45 days: the returns line's figure
RIGHT = "All backpacks carry a 3-year warranty."


async def turn(make_services, tiny_engine, reply: str, checks: str, question: str = QUESTION):
    services = await make_services(engine=Streams(tiny_engine, reply), answer_checks=checks)
    cid = (await open_conversation(services)).conversation.id
    events = await take_turn(services, cid, question)
    shown = [event.text for event in events if isinstance(event, Token)]
    _, messages = await stored(services, cid)
    return shown, done_of(events), messages[-1]


@pytest.mark.parametrize("checks", ["balanced", "strict"])
async def test_a_doubted_reply_is_never_shown_its_source_is_quoted_instead(
    make_services, tiny_engine, checks
):
    shown, done, stored_reply = await turn(make_services, tiny_engine, WRONG, checks)

    assert len(shown) == 1 and "2 years" not in shown[0]  # nothing streamed before the checks
    assert shown[0].startswith("Here is what our policy says:") and "3-year warranty" in shown[0]
    assert "pass you to a colleague" in shown[0]
    assert done.withheld and done.text == shown[0] and done.doubt == "2 year where the policy says 3 year"
    assert done.shown_ms >= done.total_ms  # its first word once written and checked
    assert stored_reply.text == shown[0] and stored_reply.withheld_text == WRONG
    assert stored_reply.doubt == done.doubt


async def test_the_line_quoted_is_the_one_that_answers_in_other_words(make_services, tiny_engine):
    # The phone line shares no word with the question; by shared words alone, the lines that
    # share "can" (tents, orders) would be quoted. Ranked by meaning too, the phone line is.
    reply = "You can call us on +31 20 123 4567."
    shown, done, _ = await turn(make_services, tiny_engine, reply, "strict", "Is there a number I can call?")
    assert done.withheld and "123 4567" not in shown[0]
    assert shown[0].startswith("Here is what our policy says:") and "+31 10 555 0145" in shown[0]


async def test_a_reply_that_passes_is_shown_whole_once_checked(make_services, tiny_engine):
    shown, done, stored_reply = await turn(make_services, tiny_engine, RIGHT, "strict")
    assert shown == [RIGHT] and not done.withheld and done.doubt is None
    assert stored_reply.text == RIGHT and stored_reply.withheld_text is None


@pytest.mark.parametrize("reply", [RIGHT, WRONG])
async def test_the_checked_reply_or_its_quote_is_shown_before_it_is_stored(
    make_services, tiny_engine, monkeypatch, reply
):
    order: list[str] = []
    put, store = TurnStream.put, settlement.store_reply

    def put_logged(stream: TurnStream, event: TurnEvent) -> None:
        order.append(type(event).__name__)
        put(stream, event)

    async def store_logged(*args: Any, **kwargs: Any) -> Any:
        order.append("stored")
        return await store(*args, **kwargs)

    monkeypatch.setattr(TurnStream, "put", put_logged)
    monkeypatch.setattr(settlement, "store_reply", store_logged)
    shown, _, stored_reply = await turn(make_services, tiny_engine, reply, "strict")

    assert "".join(shown) == stored_reply.text  # the reply, or the quote in its place
    assert order.index("Token") < order.index("stored") < order.index("Done")


async def test_strict_wants_figures_from_the_lines_that_match_the_question(make_services, tiny_engine):
    # 45 days is in the policy (its returns line), not in the lines about warranties.
    shown, done, _ = await turn(make_services, tiny_engine, OTHER_FIGURE, "balanced")
    assert shown == [OTHER_FIGURE] and not done.withheld
    shown, done, _ = await turn(make_services, tiny_engine, OTHER_FIGURE, "strict")
    assert done.withheld and "45 days" not in shown[0]
    assert done.doubt.startswith("45 day is not in the lines that match the question")


async def test_off_streams_as_written_and_only_flags(make_services, tiny_engine):
    shown, done, stored_reply = await turn(make_services, tiny_engine, WRONG, "off")
    assert len(shown) > 1 and "".join(shown) == WRONG  # streamed piece by piece
    assert done.doubt and not done.withheld and stored_reply.text == WRONG


def test_an_unknown_answers_setting_names_the_file_the_line_and_what_is_accepted(prompts_copy):
    bot_toml = prompts_copy / "shop-en" / "bot.toml"
    bot_toml.write_text(bot_toml.read_text() + '\n[answers]\nchecks = "loose"\n')
    line = len(bot_toml.read_text().splitlines())
    with pytest.raises(BotDefinitionError) as refused:
        load_bot(prompts_copy / "shop-en")
    assert str(refused.value) == (
        f"{bot_toml}, line {line}: [answers] checks = 'loose'; accepted: 'strict', 'balanced', 'off'"
    )


@pytest.mark.default_model
async def test_on_the_default_model_a_doubted_reply_reaches_the_widget_only_as_the_quote(
    shop_en_services, default_engine
):
    services = await shop_en_services(engine=Streams(default_engine, WRONG), answer_checks="strict")
    cid = (await open_conversation(services)).conversation.id
    events = await take_turn(services, cid, QUESTION)
    shown = "".join(event.text for event in events if isinstance(event, Token))
    assert "2 years" not in shown and "3-year warranty" in shown and done_of(events).withheld


async def test_strict_withholds_a_reply_that_grants_what_its_line_denies(make_services, tiny_engine):
    services = await make_services(
        engine=Streams(
            tiny_engine, "Yes, you can use both the 10% welcome code and the 15% newsletter code."
        ),
        answer_checks="strict",
    )
    cid = (await open_conversation(services)).conversation.id
    done = done_of(
        await take_turn(services, cid, "Can I use the welcome code together with the newsletter code?")
    )
    assert done.withheld and "cannot be combined" in done.text
    assert "the line that matches the question best says the opposite" in done.doubt


async def test_strict_withholds_a_reply_that_only_restates_the_question(make_services, tiny_engine):
    echo = "If you return a jacket, you get your money back."
    services = await make_services(engine=Streams(tiny_engine, echo), answer_checks="strict")
    cid = (await open_conversation(services)).conversation.id
    events = await take_turn(services, cid, "If I return a jacket, do I get my money back?")
    shown, done = "".join(e.text for e in events if isinstance(e, Token)), done_of(events)
    assert done.withheld and echo not in shown and shown.startswith("Here is what our policy says:")
    assert done.doubt == "restates the question and adds nothing from the sources"


async def test_strict_withholds_a_yes_where_nothing_in_the_sources_is_about_the_question(
    make_services, tiny_engine
):
    services = await make_services(
        engine=Streams(tiny_engine, "Yes, we deliver there."), answer_checks="strict"
    )
    cid = (await open_conversation(services)).conversation.id
    done = done_of(await take_turn(services, cid, "Do you deliver to Canada?"))
    assert done.withheld and done.text.startswith("I'm sorry, our policy doesn't say")
    assert (
        "colleague" in done.text
        and done.doubt == "answers yes or no where nothing in the sources is about the question"
    )


async def test_an_answer_shown_names_the_policy_line_it_stands_on(make_services, tiny_engine):
    _, done, stored_reply = await turn(make_services, tiny_engine, RIGHT, "strict")
    line = "All jackets and backpacks carry a 3-year warranty against manufacturing defects."
    assert done.sources == [{"id": "policy", "title": "Our policy", "url": None, "passage": line}]
    assert stored_reply.sources == done.sources
    _, withheld, _ = await turn(make_services, tiny_engine, WRONG, "strict")
    assert withheld.sources is None  # its quote is its own source


async def test_a_held_reply_a_person_cuts_short_shows_nothing(make_services, tiny_engine):
    engine = HeldReplies(tiny_engine)
    services = await make_services(engine=engine, answer_checks="strict", max_reply_tokens=64)
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, "Tell me everything")
    async with services.new_work() as work:  # the agent steps in before a word is written
        await services.inbox.take_over(work, cid, agent)
    engine.go.set()
    events = [event async for event in turn.events()]
    assert not [event for event in events if isinstance(event, Token)]  # never checked: not shown
    done = done_of(events)
    assert done.finish_reason == "interrupted" and done.text == ""
