"""A held reply shown a sentence at a time (`turns/release.py`): each sentence once the reply up
to it has passed the checks, before the rest is written; a later sentence the checks doubt is
never shown, and the source lines are quoted after what was. Through the turn on the real
engine, its reply replaced by scripted pieces (the tiny model writes only newlines)."""

import asyncio
from types import SimpleNamespace

import pytest

from backend.engine.interface import GenerationResult, SampleProgress, TokenDelta
from backend.turns.agreement import Samples, enough_tokens
from backend.turns.events import Done, Token
from backend.turns.release import token_pieces
from backend.turns.sentences import (
    clause_ended_before,
    clause_ends_with,
    completes_sentence,
    ended_before,
    ends_with,
    first_sentence,
)
from tests.helpers import WrappedEngine, done_of, open_conversation, stored

QUESTION = "How long is the warranty on backpacks?"
RIGHT = "All backpacks carry a 3-year warranty."
WRONG_NEXT = " The warranty on backpacks is 2 years."  # the policy: backpacks 3 years, tents 2
RIGHT_NEXT = " Zips are covered too."


class Pieces(WrappedEngine):
    """A reply written as the given pieces; its end waits until the test lets it go. Each
    piece is one token, or the tokens `encode` makes of it (drafted tokens come several to a step)."""

    def __init__(self, inner, pieces: list[str]):
        super().__init__(inner)
        self.pieces = pieces
        self.go = asyncio.Event()
        self.encode = None

    async def stream(self, prompt_ids, **options):
        if not str(options.get("request_id", "")).startswith("reply-"):
            async for item in self.inner.stream(prompt_ids, **options):
                yield item
            return
        for n, piece in enumerate(self.pieces):
            await asyncio.sleep(0.01)  # a step of the engine
            yield TokenDelta(piece, self.encode(piece) if self.encode else [100 + n])
        await self.go.wait()
        ids = [100 + n for n in range(len(self.pieces))]
        yield GenerationResult("".join(self.pieces), ids, "stop", len(prompt_ids), 0, 0.01, 0.02)


async def first_then_rest(make_services, tiny_engine, pieces: list[str], **settings):
    """The turn's events up to its first token (the reply not yet ended), and the rest."""
    engine = Pieces(tiny_engine, pieces)
    if settings.get("one_request_at_a_time"):
        engine.go.set()  # nothing is checked, so nothing shown, until the reply has ended
    services = await make_services(engine=engine, answer_checks="strict", **settings)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, QUESTION)
    events = turn.events()
    before = []
    async for event in events:
        before.append(event)
        if isinstance(event, (Token, Done)):
            break
    engine.go.set()
    rest = [event async for event in events]
    _, messages = await stored(services, cid)
    return before, rest, messages[-1]


def test_a_sentence_ends_at_a_stop_and_a_space_not_inside_a_figure():
    assert ended_before("warranty.", " Zips") and ends_with("warranty. ") and ends_with("好的。")
    assert ends_with("Hello:\n") and not ended_before("3.", "5") and not ends_with("3.")
    assert not ended_before("Yes", "!") and not ended_before("", " ")
    assert completes_sentence("a year.", " The") and completes_sentence("", "三年。")
    assert not completes_sentence("within 3", ".5 years")
    assert first_sentence("Yes, within 3.5 years. Not after.") == "Yes, within 3.5 years."
    assert first_sentence("可以。但是要申请。") == "可以。" and first_sentence("No") == "No"


def test_a_clause_ends_at_a_comma_and_a_space_not_inside_a_figure():
    assert clause_ended_before("No,", " you") and clause_ends_with("within 14 days, ")
    assert clause_ends_with("可以，")
    assert clause_ends_with("Note: ") and not clause_ended_before("3,", "000") and not clause_ends_with("3,")
    assert not clause_ends_with("warranty. ") and not clause_ended_before("", " ")


async def test_a_checked_sentence_is_shown_before_the_reply_ends(make_services, tiny_engine):
    before, rest, stored_reply = await first_then_rest(
        make_services, tiny_engine, ["All backpacks carry", " a 3-year warranty.", RIGHT_NEXT]
    )
    assert isinstance(before[-1], Token) and before[-1].text == RIGHT  # the reply has not ended
    tokens = [event.text for event in rest if isinstance(event, Token)]
    done = done_of([*before, *rest])
    assert tokens == [RIGHT_NEXT] and done.text == RIGHT + RIGHT_NEXT and not done.withheld
    assert stored_reply.text == done.text and stored_reply.withheld_text is None


@pytest.mark.parametrize("one_at_a_time", [False, True])
async def test_a_doubted_sentence_is_never_shown_the_source_is_quoted_after_what_was(
    make_services, tiny_engine, one_at_a_time
):
    before, rest, stored_reply = await first_then_rest(
        make_services, tiny_engine, [RIGHT, WRONG_NEXT], one_request_at_a_time=one_at_a_time
    )
    tokens = [event.text for event in [*before, *rest] if isinstance(event, Token)]
    done = done_of([*before, *rest])
    assert tokens[0] == RIGHT and not any("2 years" in token for token in tokens)
    assert done.withheld and done.doubt == "2 year where the policy says 3 year"
    assert done.text == "".join(tokens) and done.text.startswith(RIGHT + "\n\nHere is what our policy says:")
    assert "pass you to a colleague" in done.text
    assert stored_reply.text == done.text and stored_reply.withheld_text == RIGHT + WRONG_NEXT


class Gradual:
    """Samples written a piece at a time, each piece when the test says."""

    def __init__(self):
        self.step = asyncio.Event()

    async def sample(self, prompt_ids, *, n, progress: SampleProgress, **options):
        for _ in range(4):
            await self.step.wait()
            self.step.clear()
            for index in range(n):
                progress.add(index, f"{index}:4 words. ", 8, ended=False)
        return progress.texts()


async def test_the_reply_so_far_waits_for_samples_as_long_as_it_needs():
    engine = Gradual()
    message = SimpleNamespace(
        context_ids=[1, 2],
        user=SimpleNamespace(id=1),
        bot=SimpleNamespace(cache_salt=None),
        conversation=SimpleNamespace(id="c"),
    )
    samples = Samples(engine, message, 2)
    waiting = asyncio.create_task(samples.texts_so_far(8))  # needs enough_tokens(8) == 16 each
    assert enough_tokens(8) == 16
    for _ in range(2):
        await asyncio.sleep(0.01)
        assert not waiting.done()
        engine.step.set()
    assert await waiting == ["0:4 words. 0:4 words. ", "1:4 words. 1:4 words. "]
    samples.cancel()


async def test_a_figure_no_continuation_can_take_back_stops_the_reply_there(make_services, tiny_engine):
    # The figure is wrong whatever follows: the reply is stopped (its end is never let go).
    engine, events, stored_reply = await stopped(
        make_services, tiny_engine, [WRONG_NEXT.strip(), *[" More"] * 20]
    )
    done = done_of(events)
    assert not engine.go.is_set() and done.finish_reason == "doubted" and done.withheld
    assert done.text.startswith("Here is what our policy says:") and done.doubt.startswith("2 year")
    assert not any("2 years" in event.text for event in events if isinstance(event, Token))
    assert stored_reply.withheld_text.startswith(WRONG_NEXT.strip() + " More")


async def test_a_wrong_figure_stops_the_reply_at_its_clause_before_its_sentence_ends(
    make_services, tiny_engine
):
    # The sentence never ends; the figure is whole at the comma, and wrong whatever follows.
    pieces = ["The warranty on backpacks is 2 years,", " and", *[" more"] * 20]
    engine, events, stored_reply = await stopped(make_services, tiny_engine, pieces)
    done = done_of(events)
    assert not engine.go.is_set() and done.finish_reason == "doubted" and done.withheld
    assert done.doubt.startswith("2 year") and "2 years" not in done.text
    assert stored_reply.withheld_text.startswith("The warranty on backpacks is 2 years, and")


def test_a_piece_of_several_tokens_is_cut_after_each_whole_character():
    # Tokens 1-4 read "No", ", ", "we" and half of "é"; 5 ends it and a space.
    texts = {1: b"No", 2: b", ", 3: b"we", 4: b"\xc3", 5: b"\xa9 "}

    def decode(ids):
        return b"".join(texts[i] for i in ids).decode(errors="replace")

    pieces = token_pieces(TokenDelta("No, weé ", [1, 2, 3, 4, 5]), decode)
    assert [(p.text, p.token_ids) for p in pieces] == [("No", [1]), (", ", [2]), ("we", [3]), ("é ", [4, 5])]
    # Its first character began in the piece before: it is left whole.
    assert token_pieces(TokenDelta("é ", [5]), decode) == [TokenDelta("é ", [5])]
    assert token_pieces(TokenDelta("?é ", [4, 5]), decode) == [TokenDelta("?é ", [4, 5])]


async def test_an_end_inside_a_piece_of_several_tokens_is_checked_there(make_services, tiny_engine):
    # The comma after the wrong figure comes in the middle of one step's drafted tokens.
    engine = Pieces(tiny_engine, ["The warranty on backpacks is 2 years, and more", *[" more"] * 20])
    services = await make_services(engine=engine, answer_checks="strict")
    engine.encode = services.assembler.format.encode_text
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, QUESTION)
    done = done_of(await asyncio.wait_for(collect(turn.events()), timeout=30))
    assert not engine.go.is_set() and done.finish_reason == "doubted" and done.doubt.startswith("2 year")


@pytest.mark.parametrize("one_at_a_time", [False, True])
async def test_a_yes_is_read_by_its_whole_first_sentence_not_its_first_clause(
    make_services, tiny_engine, one_at_a_time
):
    # "Yes," alone grants where the line denies; the sentence it opens restricts it.
    codes = "Can I use the welcome code together with the newsletter code?"
    pieces = ["Yes,", " but", " discount codes", " cannot be combined."]
    engine = Pieces(tiny_engine, pieces)
    engine.go.set()
    services = await make_services(engine=engine, answer_checks="strict", one_request_at_a_time=one_at_a_time)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, codes)
    done = done_of(await asyncio.wait_for(collect(turn.events()), timeout=30))
    assert not done.withheld and done.text == "".join(pieces)


async def test_a_doubt_before_anything_is_shown_stops_the_reply_there(make_services, tiny_engine):
    # Mostly words the matching lines do not have: a doubt a continuation could lift once
    # something is shown, but the reply would open with these words whatever followed.
    opening = "Backpacks carry a warranty with free express delivery and gift wrapping."
    engine, events, _ = await stopped(make_services, tiny_engine, [opening, *[" More"] * 20])
    done = done_of(events)
    assert not engine.go.is_set() and done.finish_reason == "doubted" and done.withheld
    assert "of what it says is in the lines" in done.doubt
    tokens = [event.text for event in events if isinstance(event, Token)]
    assert len(tokens) == 1 and tokens[0].startswith("Here is what our policy says:")


async def test_an_opening_that_says_nothing_yet_waits_for_the_sentence_that_does(make_services, tiny_engine):
    # "Sure!" adds nothing to the question, so the checks doubt it; but it asserts nothing
    # either, and the reply it opens is shown once the next sentence passes.
    opening = "Sure! All backpacks carry a 3-year warranty."
    before, rest, _ = await first_then_rest(
        make_services, tiny_engine, ["Sure!", " All backpacks carry a 3-year warranty.", RIGHT_NEXT]
    )
    assert isinstance(before[-1], Token) and before[-1].text == opening  # the reply has not ended
    done = done_of([*before, *rest])
    assert not done.withheld and done.text == opening + RIGHT_NEXT


@pytest.mark.parametrize(
    ("question", "opening", "doubt"),
    [
        # The yes grants where the best line denies ("cannot be combined"): whatever follows.
        (
            "Can I use the welcome code together with the newsletter code?",
            "Yes, you can use both codes.",
            "says the opposite",
        ),
        # Nothing the sources say backs the yes; it only restates the question.
        (
            "Can I pick up my order at your warehouse in Rotterdam?",
            "Yes, you can pick up your order.",
            "restates the question",
        ),
        # Saying it does not know is its answer: what follows offers a person, or guesses.
        (
            "Can I swap the jacket for a size bigger?",
            "I'm sorry, our policy doesn't say, so I don't know.",
            "of what it says is in the lines",
        ),
    ],
)
async def test_a_doubted_answer_stops_the_reply_at_its_first_sentence(
    make_services, tiny_engine, question, opening, doubt
):
    # A plain yes or no, or "I don't know", is read by its first sentence, what the customer
    # acts on: once it is written, no continuation changes it.
    engine, events, stored_reply = await stopped(
        make_services, tiny_engine, [opening, *[" More"] * 20], question
    )
    done = done_of(events)
    assert not engine.go.is_set() and done.finish_reason == "doubted" and done.withheld
    assert doubt in done.doubt and done.text.startswith("Here is what our policy says:")
    assert stored_reply.withheld_text.startswith(opening)


async def stopped(make_services, tiny_engine, pieces: list[str], question: str = QUESTION):
    """A turn whose reply is written as `pieces` and never let end: the engine, the turn's
    events, and the reply as stored."""
    engine = Pieces(tiny_engine, pieces)
    services = await make_services(engine=engine, answer_checks="strict")
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        turn = await services.turns.take(work, cid, question)
    events = await asyncio.wait_for(collect(turn.events()), timeout=30)
    _, messages = await stored(services, cid)
    return engine, events, messages[-1]


async def collect(events):
    return [event async for event in events]


async def test_a_reply_that_opens_with_yes_or_no_is_shown_only_whole(make_services, tiny_engine):
    before, rest, stored_reply = await first_then_rest(
        make_services, tiny_engine, ["Yes, backpacks are covered.", WRONG_NEXT, *[" More"] * 20]
    )  # stopped at the wrong figure: nothing waits for its end
    events = [*before, *rest]
    tokens = [event.text for event in events if isinstance(event, Token)]
    assert len(tokens) == 1 and tokens[0].startswith("Here is what our policy says:")
    assert done_of(events).withheld and stored_reply.withheld_text.startswith("Yes, backpacks")
