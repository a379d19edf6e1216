"""A policy line quoted instead of "I don't know".

Which first words say the bot does not know is plain logic; the path (the first reply held,
the lines judged, the quote shown instead, stored and cached for the next turn, or the
first reply let through when no line answers, the lines judged beside an opening that
may yet say so) runs on the real engine with the default model (the tiny one writes only
newlines): the test makes the reply's own first word a "don't know" opening, and the
judge's threshold decides its answer.
"""

import re
from pathlib import Path

import pytest

from backend.config import PROJECT_ROOT
from backend.engine.interface import LabelRead
from backend.prompting.definitions import BotDefinitionError, load_bot
from backend.prompting.openings import Start
from backend.prompting.quoting import Quoting, QuotingError, load_quoting
from backend.turns.events import Token
from tests.helpers import (
    RecordsRequests,
    WrappedEngine,
    done_of,
    first_turn,
    open_conversation,
    stored,
    take_turn,
)

SHIPPED = PROJECT_ROOT / "prompts" / "_judges" / "line_answers.toml"
QUOTING = Quoting(
    ("I'm sorry, our policy doesn't say", "I don't know", "抱歉，服务政策里没有"), "Policy: {line}"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm sorry, our policy doesn't say, so I don't know.", Start.YES),
        ("i don't know.", Start.YES),
        ("I don't know", Start.UNDECIDED),  # or "I don't knowledge...": the next token tells
        ("抱歉，服务政策里没有这方面的信息", Start.YES),
        ("", Start.UNDECIDED),
        ("I'm sorry", Start.UNDECIDED),
        ("I don", Start.UNDECIDED),
        ("抱歉，服务", Start.UNDECIDED),
        ("I'm sorry, but we do not ship to Canada.", Start.NO),
        ("I'd be glad to help", Start.NO),
        ("抱歉，不能退货", Start.NO),
        ("The warranty is 3 years.", Start.NO),
    ],
)
def test_a_replys_first_words_say_it_does_not_know_or_not(text, expected):
    assert QUOTING.opening_of(text) == expected


def test_the_shipped_quoting_loads_for_each_language_and_bad_files_are_named(tmp_path):
    for language in ("en", "zh", "sv"):  # a language without a table gets the English one
        quoting = load_quoting(SHIPPED, language)
        assert quoting.unknown_openings and "LINE" in quoting.quote("LINE")
    bad = tmp_path / "line_answers.toml"
    bad.write_text('[en]\ninstruction = "x"\nunknown_openings = ["I don\'t know"]\nquote = "no line"\n')
    with pytest.raises(QuotingError, match=r"line_answers.toml.*\{line\}"):
        load_quoting(bad, "en")
    bad.write_text('[en]\ninstruction = "x"\nunknown_openings = []\nquote = "{line}"\n')
    with pytest.raises(QuotingError, match="unknown_openings"):
        load_quoting(bad, "en")


def test_the_shipped_bots_quote_unless_their_judge_is_off(prompts_copy):
    assert load_bot(prompts_copy / "shop-en").quoting is not None
    bot_toml = prompts_copy / "shop-en" / "bot.toml"
    text = bot_toml.read_text(encoding="utf-8").replace("[judges]\n", "[judges]\nline_answers = false\n", 1)
    bot_toml.write_text(text, encoding="utf-8")
    assert load_bot(prompts_copy / "shop-en").quoting is None
    (prompts_copy / "appliance-zh" / "judges").mkdir()
    (prompts_copy / "appliance-zh" / "judges" / "line_answers.toml").write_text(
        '[zh]\ninstruction = "x"\nunknown_openings = ["不知道"]\nquote = "x"\n'
        '[[zh.example]]\nquestion = "q"\nline = "l"\nanswer = "yes"\n'
        '[[zh.example]]\nquestion = "q"\nline = "m"\nanswer = "no"\n',
        encoding="utf-8",
    )
    with pytest.raises(BotDefinitionError, match=r"\{line\}"):
        load_bot(prompts_copy / "appliance-zh")


def _judge_always(prompts: Path, answer: str, opening: str) -> None:
    """The line_answers judge answers `answer` for every line, and `opening` says "I don't know"."""
    threshold = "0.000001" if answer == "yes" else "0.999999"
    text = SHIPPED.read_text(encoding="utf-8")
    text = re.sub(r"(?m)^threshold = .*$", f"threshold = {threshold}", text)
    quoted = '"' + opening.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text = re.sub(r"unknown_openings = \[.*?\]", f"unknown_openings = [{quoted}]", text, flags=re.S)
    (prompts / "_judges" / "line_answers.toml").write_text(text, encoding="utf-8")


QUESTION = "How long is the warranty on a backpack?"


@pytest.mark.default_model
async def test_a_reply_that_says_it_does_not_know_is_replaced_by_the_policy_line_that_answers(
    shop_en_services, prompts_copy
):

    # As the model writes it, with no judges: its first word is made the "don't know" opening.
    _, events = await first_turn(await shop_en_services(model_judges=False), QUESTION)
    plain = done_of(events)
    word = plain.text.split()[0]

    # No line answers: the reply is shown as written, once the lines are judged.
    _judge_always(prompts_copy, "no", word)
    _, events = await first_turn(await shop_en_services(model_judges=True), QUESTION)
    kept = done_of(events)
    # Not word for word the first run's: the judges' requests share its engine steps here,
    # and the CPU build rounds a shared step differently.
    assert kept.second_try is None and kept.text.split()[0] == word
    assert kept.held_ms is not None and kept.held_ms > 0

    # A line answers: the first reply is dropped unseen and the line quoted instead.
    _judge_always(prompts_copy, "yes", word)
    services = await shop_en_services(model_judges=True)
    cid, events = await first_turn(services, QUESTION)
    quoted = done_of(events)
    definition = services.bots["shop-en"].definition
    assert definition.quoting is not None
    # The line the judge found first, then the lines a doubted reply's quote gives.
    best = definition.reference.shown(QUESTION, definition.answers.quote_lines)
    quotes = {
        definition.quoting.quote("\n".join(dict.fromkeys([line, *best])))
        for line in definition.reference.shown(QUESTION, 3)
    }
    assert quoted.text in quotes
    assert quoted.doubt is None and not quoted.withheld  # the policy's own words: shown unchecked
    assert quoted.second_try is not None and "quoted the policy line" in quoted.second_try
    assert "".join(e.text for e in events if isinstance(e, Token)) == quoted.text  # only the quote shown
    assert quoted.ttft_ms is not None and quoted.ttft_ms > 0
    _, messages = await stored(services, cid)
    assert messages[-1].text == quoted.text
    # The next turn starts with exactly what the model saw before the quote: served from the
    # cache up to the dropped reply's prompt (as long as the one of the same first turn above).
    following = done_of(await take_turn(services, cid, "And for a tent?"))
    assert kept.prompt_tokens is not None and following.cached_tokens is not None
    assert following.cached_tokens >= kept.prompt_tokens // 32 * 32 - 32

    # Held until checked against samples (as shipped), the quote is shown at once, whole:
    # the policy's own words are not checked, and the reply's samples are not waited for.
    held = await shop_en_services(model_judges=True, answer_checks="balanced", answer_samples=4)
    _, events = await first_turn(held, QUESTION)
    done = done_of(events)
    assert [e.text for e in events if isinstance(e, Token)] == [done.text] and done.text in quotes
    assert done.doubt is None and not done.withheld


@pytest.mark.default_model
@pytest.mark.parametrize("one_at_a_time", [False, True])
async def test_the_lines_are_judged_while_the_opening_may_yet_say_it_does_not_know(
    shop_en_services, default_engine, prompts_copy, one_at_a_time
):
    _, events = await first_turn(await shop_en_services(model_judges=False), QUESTION)
    words = " ".join(done_of(events).text.split()[:3])
    # The "don't know" opening starts as the reply does, for a few tokens, then goes another way.
    _judge_always(prompts_copy, "yes", f"{words} zzyzx")
    engine = RecordsRequests(default_engine)
    services = await shop_en_services(engine=engine, model_judges=True, one_request_at_a_time=one_at_a_time)
    engine.log.clear()

    _, events = await first_turn(services, QUESTION)

    done = done_of(events)
    assert done.second_try is None and done.text.startswith(words)  # the reply as written
    judged = engine.requests("start", "line-")
    if one_at_a_time:  # the reply alone in its steps: no line judged for an opening that was not
        assert judged == []
    else:  # judged from the first word on, beside the reply; dropped once the opening went its way
        assert len(judged) == len(services.bots["shop-en"].definition.reference.matching(QUESTION, 3))
        finished = engine.requests("end", "line-") + engine.requests("cancelled", "line-")
        assert sorted(finished) == sorted(judged)


class JudgesLinesAtOnce(WrappedEngine):
    """The default engine, with every policy line's judgement back at once (P(yes) 0.5), and a
    log of the reply's tokens as the engine gives them and as the customer is shown them."""

    def __init__(self, inner):
        super().__init__(inner)
        self.log: list[str] = []

    async def read_labels(self, prompt_ids, labels, *, request_id=None, **options):
        if str(request_id).startswith("line-"):
            return LabelRead(tuple(float("-inf") for _ in labels), len(prompt_ids), 0, 0.0)
        return await self.inner.read_labels(prompt_ids, labels, request_id=request_id, **options)

    async def stream(self, prompt_ids, **options):
        async for item in self.inner.stream(prompt_ids, **options):
            self.log.append("engine")
            yield item


@pytest.mark.default_model
async def test_once_no_line_answers_the_opening_is_not_held_for_them(
    shop_en_services, default_engine, prompts_copy
):
    _, events = await first_turn(await shop_en_services(model_judges=False), QUESTION)
    plain = done_of(events).text
    # An opening that would stay undecided for the whole reply; the judge finds no line.
    _judge_always(prompts_copy, "no", f"{plain} zzyzx")
    engine = JudgesLinesAtOnce(default_engine)
    services = await shop_en_services(engine=engine, model_judges=True)
    conversation_id = (await open_conversation(services)).conversation.id
    engine.log.clear()

    async with services.new_work() as work:
        turn = await services.turns.take(work, conversation_id, QUESTION)
    async for event in turn.events():
        if isinstance(event, Token):
            engine.log.append("shown")

    # Held while its opening is undecided, nothing would be shown before the engine's last
    # output; it is shown once the lines are judged, an output or two after the first.
    assert engine.log.index("shown") <= 4 < engine.log.count("engine")
