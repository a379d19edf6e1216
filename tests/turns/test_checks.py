"""Checks of a finished reply, through the turn on the real engine: a reply whose figures the
policy contradicts is stored with why, announced, and hands over where the bot says so; a
note's heading the model repeated is taken out of what the customer reads."""

import asyncio

from backend.engine.interface import GenerationResult, TokenDelta
from backend.turns.checks import Review, review_reply
from backend.turns.events import Token
from tests.helpers import WrappedEngine, done_of, open_conversation, stored, take_turn

WRONG = "The warranty on backpacks is 2 years."  # the policy: backpacks 3 years, tents 2


class Says(WrappedEngine):
    """The real engine's reply, its text replaced by `text` (token ids stay the model's)."""

    def __init__(self, inner, text: str):
        super().__init__(inner)
        self.text = text

    async def stream(self, prompt_ids, **options):
        async for item in self.inner.stream(prompt_ids, **options):
            if isinstance(item, TokenDelta):
                yield TokenDelta("", item.token_ids)
            elif isinstance(item, GenerationResult):
                yield GenerationResult(
                    self.text, *[getattr(item, f) for f in list(item.__dataclass_fields__)[1:]]
                )
            else:
                yield item


class Streams(Says):
    """As `Says`, with the text streamed across the model's token deltas, a piece on each."""

    async def stream(self, prompt_ids, **options):
        items = [item async for item in super().stream(prompt_ids, **options)]
        deltas = [item for item in items if isinstance(item, TokenDelta)]
        size = -(-len(self.text) // max(len(deltas), 1))
        for n, delta in enumerate(deltas):
            yield TokenDelta(self.text[n * size : (n + 1) * size], delta.token_ids)
        yield items[-1]


async def test_a_reply_the_policy_contradicts_is_flagged_with_why(make_services, tiny_engine):
    # Streamed as written (`checks = "off"`): flagged after it, not withheld (test_checked_answers.py).
    services = await make_services(engine=Says(tiny_engine, WRONG), answer_checks="off")
    cid = (await open_conversation(services)).conversation.id

    done = done_of(await take_turn(services, cid, "How long is the warranty on backpacks?"))

    assert done.doubt == "2 year where the policy says 3 year" and not done.handoff
    _, messages = await stored(services, cid)
    assert messages[-1].doubt == done.doubt and messages[-1].text == WRONG


async def test_a_right_reply_is_not_flagged(make_services, tiny_engine):
    services = await make_services(engine=Says(tiny_engine, "Backpacks carry a three-year warranty."))
    cid = (await open_conversation(services)).conversation.id
    done = done_of(await take_turn(services, cid, "How long is the warranty on backpacks?"))
    assert done.doubt is None
    _, messages = await stored(services, cid)
    assert messages[-1].doubt is None


async def test_a_bot_that_hands_over_on_doubt_does(make_services, tiny_engine, prompts_copy):
    bot_toml = prompts_copy / "shop-en" / "bot.toml"
    bot_toml.write_text(
        bot_toml.read_text(encoding="utf-8").replace("[handoff]\n", "[handoff]\non_doubt = true\n")
    )
    services = await make_services(engine=Says(tiny_engine, WRONG), prompts_dir=prompts_copy)
    cid = (await open_conversation(services)).conversation.id

    done = done_of(await take_turn(services, cid, "How long is the warranty on backpacks?"))

    assert done.handoff and done.status == "open" and done.doubt
    conversation, _ = await stored(services, cid)
    assert conversation.handoff_reason == "doubt"


async def test_a_repeated_note_heading_is_not_what_the_customer_reads(make_services, tiny_engine):
    heading = "The policy lines that best match the customer's next message:"
    line = "- Backpacks carry a 3-year warranty."
    services = await make_services(engine=Says(tiny_engine, f"{heading}\n{line}"))
    cid = (await open_conversation(services)).conversation.id

    done = done_of(await take_turn(services, cid, "How long is the warranty on backpacks?"))

    assert done.text == line
    _, messages = await stored(services, cid)
    assert messages[-1].text == line


async def test_a_note_heading_never_reaches_the_customers_stream(make_services, tiny_engine):
    heading = "The policy lines that best match the customer's next message:"
    line = "- Backpacks carry a 3-year warranty."
    for checks in ("off", "strict"):  # streamed as written, or shown whole once checked
        services = await make_services(
            engine=Streams(tiny_engine, f"{heading}\n{line}"), answer_checks=checks
        )
        cid = (await open_conversation(services)).conversation.id
        events = await take_turn(services, cid, "How long is the warranty on backpacks?")
        streamed = "".join(event.text for event in events if isinstance(event, Token))
        assert streamed.strip() == line and "policy lines" not in streamed
        assert done_of(events).text == line


async def test_the_checks_time_is_what_the_customer_waits_for_all_of_them():
    # They run at once: their time is the longest one's, not the sum (Done.shown_ms adds it).
    def takes(seconds: float, doubt: str):
        async def check(engine, message, reply):
            await asyncio.sleep(seconds)
            return Review(doubts=(doubt,), seconds=seconds)

        return check

    checks = [takes(0.2, "one"), takes(0.2, "two"), takes(0.1, "three")]
    review = await review_reply(checks, None, None, None)
    assert review.doubts == ("one", "two", "three")
    assert 0.2 <= review.seconds < 0.4
