"""Agreement of samples (`[answers] samples`): replies sampled from the reply's own prompt in
one request, compared on what they assert (a plain yes or no, figures); a reply most samples
do not repeat is not shown."""

import asyncio
from types import SimpleNamespace

import pytest

from backend.engine.interface import SampleProgress
from backend.prompting.definitions import BotDefinitionError, load_bot
from backend.prompting.openings import Opening, Openings
from backend.turns.agreement import (
    MAX_SAMPLE_TOKENS,
    Claims,
    Samples,
    agreement,
    agreement_needed,
    claims_of,
    claims_so_far,
    enough_tokens,
    settled_so_far,
)
from tests.helpers import done_of, open_conversation, take_turn
from tests.turns.test_checks import Says

OPENINGS = Openings(yes=("Yes",), no=("No",))
QUESTION = "How long is the warranty on backpacks?"
RIGHT = "All backpacks carry a 3-year warranty."


def test_claims_are_the_yes_or_no_and_the_figures():
    assert claims_of("Yes, within 30 days.", OPENINGS) == Claims(Opening.YES, frozenset({("30", "day")}))
    assert claims_of("Item 2 of the list.", OPENINGS).empty  # short bare numbers are no claim
    assert claims_of("We can help.", None).empty


def test_agreement_counts_samples_that_assert_the_same():
    reply = claims_of("No, returns take 30 days.", OPENINGS)
    samples = [claims_of(text, OPENINGS) for text in ("No: 30 days.", "Yes, 30 days.", "No, 14 days.", "No.")]
    assert agreement(reply, samples) == 0.25  # only the first says no and 30 days
    assert agreement(claims_of("Returns take 30 days.", OPENINGS), samples) == 0.5  # no yes or no to match


def test_a_yes_or_no_needs_more_samples_behind_it_than_a_figure():
    # Half of the samples repeat a guessed yes or no by chance; a guessed figure, rarely.
    assert agreement_needed(claims_of("Returns take 30 days.", OPENINGS)) == 0.5
    assert agreement_needed(claims_of("No, returns take 30 days.", OPENINGS)) == 0.75
    assert agreement_needed(claims_of("Yes.", OPENINGS)) == 0.75


def test_a_sample_still_being_written_asserts_only_what_it_cannot_take_back():
    assert claims_so_far("No", OPENINGS).opening is Opening.UNDECIDED  # "No," or "Nothing"
    assert claims_so_far("No, within 3", OPENINGS) == Claims(Opening.NO, frozenset())  # "3" or "30"
    assert claims_so_far("within 30 days and", OPENINGS).figures == {("30", "day")}
    assert claims_so_far("It costs 120 ", OPENINGS).empty  # its unit may follow
    assert claims_so_far("It costs EUR 4.", OPENINGS).empty  # "4." or "4.95"
    assert claims_so_far("Within 30 days.", OPENINGS).figures == {("30", "day")}
    reply = claims_of("No, within 30 days.", OPENINGS)
    for whole in ("No, within 30 days.", "No, within 300 days.", "Nothing within 30 days.", "No: 30.5 days"):
        for end in range(len(whole) + 1):
            if reply.backed_by(claims_so_far(whole[:end], OPENINGS)):  # then the whole sample does
                assert reply.backed_by(claims_of(whole, OPENINGS)), (whole, end)


def test_samples_settle_the_comparison_once_the_rest_of_them_cannot_change_it():
    yes = claims_of("Yes, you can.", OPENINGS)  # needs 3 of 4 samples
    still = [False] * 4
    assert not settled_so_far(yes, ["Yes,", "Yes,", "N", ""], still, OPENINGS, 0.75)
    assert settled_so_far(yes, ["Yes,", "Yes,", "Yes, b", ""], still, OPENINGS, 0.75)  # backed
    assert settled_so_far(yes, ["Yes,", "No,", "We ", ""], still, OPENINGS, 0.75)  # two cannot
    figure = claims_of("It is 30 days.", OPENINGS)  # needs 2 of 4
    assert not settled_so_far(figure, ["It is 3", "14 days", "", ""], still, OPENINGS, 0.5)
    assert settled_so_far(figure, ["It is 3", "14 days", "", ""], [True, True, True, False], OPENINGS, 0.5)
    assert settled_so_far(figure, ["It is 30 days.", "30 days and", "", ""], still, OPENINGS, 0.5)


class Gradual:
    """Samples written a piece at a time, each piece when the test says."""

    def __init__(self, pieces: list[str]):
        self.pieces, self.step = pieces, asyncio.Event()

    async def sample(self, prompt_ids, *, n, progress: SampleProgress, **options):
        for piece in self.pieces:
            await self.step.wait()
            self.step.clear()
            for index in range(n):
                progress.add(index, piece, 8, ended=False)
        return progress.texts()


async def test_samples_that_back_the_reply_already_end_its_wait():
    engine = Gradual(["Backpacks: 3", " years, ", "and more.", " Much more."])
    message = SimpleNamespace(
        context_ids=[1],
        user=SimpleNamespace(id=1),
        bot=SimpleNamespace(cache_salt=None),
        conversation=SimpleNamespace(id="c"),
    )
    samples = Samples(engine, message, 2)
    reply = claims_of(RIGHT, OPENINGS)

    def settled(written: list[str], ended: list[bool]) -> bool:
        return settled_so_far(reply, written, ended, OPENINGS, 0.5)

    waiting = asyncio.create_task(samples.texts(40, settled))  # 50 tokens each, unless backed sooner
    for _ in range(2):
        await asyncio.sleep(0.01)
        assert not waiting.done()  # "3" may yet be "30"
        engine.step.set()
    assert await asyncio.wait_for(waiting, 5) == ["Backpacks: 3 years, "] * 2
    samples.cancel()


class Sampled(Says):
    """A scripted reply, and scripted samples (each sample request recorded)."""

    def __init__(self, inner, text: str, samples: list[str]):
        super().__init__(inner, text)
        self.samples = samples
        self.asked: list[dict] = []

    async def sample(self, prompt_ids, **options):
        self.asked.append(options)
        return self.samples[: options["n"]]


async def turn_with_samples(make_services, tiny_engine, samples: list[str], **settings):
    engine = Sampled(tiny_engine, RIGHT, samples)
    services = await make_services(engine=engine, answer_checks="strict", answer_samples=4, **settings)
    cid = (await open_conversation(services)).conversation.id
    return services, engine, done_of(await take_turn(services, cid, QUESTION))


async def test_a_reply_the_samples_repeat_is_shown(make_services, tiny_engine):
    samples = ["It is a 3-year warranty.", "3 years.", "Backpacks: 3 years.", "Two years."]
    _, engine, done = await turn_with_samples(make_services, tiny_engine, samples)
    assert not done.withheld and done.text == RIGHT
    assert engine.asked[0]["n"] == 4 and engine.asked[0]["temperature"] > 0
    # Once the reply is written, its samples need only about as many tokens as it has.
    assert engine.asked[0]["enough"]() == enough_tokens(done.completion_tokens)


def test_samples_need_about_as_many_tokens_as_the_reply():
    assert enough_tokens(40) == 50  # a quarter more: phrasings differ in length
    assert enough_tokens(2) == 16 and enough_tokens(500) == MAX_SAMPLE_TOKENS


async def test_a_reply_the_samples_do_not_repeat_is_not_shown(make_services, tiny_engine):
    samples = ["2 years.", "It is 5 years.", "Backpacks: 3 years.", "Two years."]
    _, _, done = await turn_with_samples(make_services, tiny_engine, samples)
    assert done.withheld and done.doubt == "25% of 4 samples assert what it asserts"
    assert done.text.startswith("Here is what our policy says:")


async def test_samples_are_asked_for_while_the_engine_drafts(make_services, tiny_engine):
    samples = ["2 years.", "It is 5 years.", "Backpacks: 3 years.", "Two years."]
    _, engine, done = await turn_with_samples(make_services, tiny_engine, samples, speculative_method="ngram")
    assert engine.asked[0]["n"] == 4 and done.withheld


async def test_samples_are_off_with_the_judges(make_services, tiny_engine):
    samples = ["2 years.", "It is 5 years.", "Backpacks: 3 years.", "Two years."]
    _, engine, done = await turn_with_samples(make_services, tiny_engine, samples, model_judges=False)
    assert not engine.asked and not done.withheld and done.text == RIGHT


def test_samples_out_of_range_name_the_file_and_line(prompts_copy):
    bot_toml = prompts_copy / "shop-en" / "bot.toml"
    bot_toml.write_text(bot_toml.read_text() + "\n[answers]\nsamples = 20\n")
    line = len(bot_toml.read_text().splitlines())
    with pytest.raises(BotDefinitionError) as refused:
        load_bot(prompts_copy / "shop-en")
    assert str(refused.value) == f"{bot_toml}, line {line}: [answers] samples is 0 to 8, not 20"


class SamplesLag(Says):
    """A scripted reply whose samples are never written (as far behind as a test needs)."""

    async def sample(self, prompt_ids, **options):
        await asyncio.Event().wait()


async def test_a_whole_reply_another_check_doubts_does_not_wait_for_its_samples(make_services, tiny_engine):
    engine = SamplesLag(tiny_engine, "The warranty on backpacks is 2 years.")  # the policy: 3
    services = await make_services(engine=engine, answer_checks="strict", answer_samples=4)
    cid = (await open_conversation(services)).conversation.id
    done = done_of(await asyncio.wait_for(take_turn(services, cid, QUESTION), 60))
    assert done.withheld and "2 year where the policy says 3 year" in done.doubt
