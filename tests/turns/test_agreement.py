"""Agreement of samples (`[answers] samples`): replies sampled from the reply's own prompt in
one request, compared on what they assert (a plain yes or no, figures); a reply most samples
do not repeat is not shown."""

import pytest

from backend.config import Settings
from backend.prompting.definitions import BotDefinitionError, load_bot
from backend.prompting.openings import Opening, Openings
from backend.turns.agreement import (
    MAX_SAMPLE_TOKENS,
    Claims,
    agreement,
    agreement_needed,
    claims_of,
    enough_tokens,
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
    settings.setdefault("speculative_method", "off")  # samples need an engine that does not draft
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


async def test_no_samples_while_the_engine_drafts(make_services, tiny_engine):
    # vLLM's CPU build garbles sampled tokens, and the greedy ones beside them, while it drafts.
    samples = ["2 years.", "It is 5 years.", "Backpacks: 3 years.", "Two years."]
    _, engine, done = await turn_with_samples(make_services, tiny_engine, samples, speculative_method="ngram")
    assert not engine.asked and not done.withheld and done.text == RIGHT


def test_a_temperature_above_zero_while_drafting_is_refused():
    with pytest.raises(
        ValueError, match="PREFIXDESK_TEMPERATURE above 0 needs PREFIXDESK_SPECULATIVE_METHOD=off"
    ):
        Settings(temperature=0.7, speculative_method="ngram")
    assert Settings(temperature=0.7, speculative_method="off").temperature == 0.7


def test_samples_out_of_range_name_the_file_and_line(prompts_copy):
    bot_toml = prompts_copy / "shop-en" / "bot.toml"
    bot_toml.write_text(bot_toml.read_text() + "\n[answers]\nsamples = 20\n")
    line = len(bot_toml.read_text().splitlines())
    with pytest.raises(BotDefinitionError) as refused:
        load_bot(prompts_copy / "shop-en")
    assert str(refused.value) == f"{bot_toml}, line {line}: [answers] samples is 0 to 8, not 20"
