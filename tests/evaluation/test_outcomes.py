"""A case's last reply as right, held back or wrong, on the shipped bots' own grounds."""

import pytest

from backend.config import PROJECT_ROOT
from backend.evaluation.cases import Case
from backend.evaluation.eval_report import regressions
from backend.evaluation.outcomes import Ground, Outcome, classify
from backend.prompting.definitions import load_bot

PROMPTS = PROJECT_ROOT / "prompts"


@pytest.fixture(scope="module")
def shop() -> Ground:
    return Ground.of(load_bot(PROMPTS / "shop-en"), PROMPTS, PROMPTS / "shop-en")


@pytest.fixture(scope="module")
def appliances() -> Ground:
    return Ground.of(load_bot(PROMPTS / "appliance-zh"), PROMPTS, PROMPTS / "appliance-zh")


RETURNS = Case(
    "return window", ("How many days do I have to return an item?",), (("45 days",),), ("30 days",)
)
CANADA = Case(
    "ship to Canada", ("Do you ship to Canada?",), (("do not ship",),), ("we ship to canada",), polarity="no"
)


def outcome(case: Case, reply: str, ground: Ground, *, handed_off: bool = False, passed: bool = False):
    return classify(case, reply, handed_off, passed, ground)[0]


def test_a_reply_that_states_what_is_expected_is_right(shop):
    assert outcome(RETURNS, "You have 45 days to return an item.", shop, passed=True) is Outcome.RIGHT


def test_a_forbidden_phrase_or_the_wrong_yes_or_no_is_wrong_even_if_expected_words_appear(shop):
    assert outcome(RETURNS, "45 days, or 30 days for sale items.", shop, passed=True) is Outcome.WRONG
    assert outcome(CANADA, "Yes, but we do not ship there yet.", shop, passed=True) is Outcome.WRONG
    assert outcome(CANADA, "No, we do not ship to Canada yet.", shop, passed=True) is Outcome.RIGHT


def test_a_figure_nothing_in_the_sources_states_is_wrong(shop):
    assert outcome(RETURNS, "Returns are free for 17 days.", shop) is Outcome.WRONG


def test_i_dont_know_a_quoted_source_line_or_a_person_is_held_back(shop):
    line = next(line for line in shop.source_lines if "45" in line)
    assert outcome(RETURNS, "I'm sorry, our policy doesn't say, so I don't know.", shop) is Outcome.HELD_BACK
    assert outcome(RETURNS, f"Here is what our policy says: {line}", shop) is Outcome.HELD_BACK
    assert outcome(RETURNS, "Shall I pass you to a colleague?", shop) is Outcome.HELD_BACK
    assert outcome(RETURNS, "", shop, handed_off=True) is Outcome.HELD_BACK


def test_the_apps_quote_of_source_lines_is_the_sources_whatever_other_figures_they_give(shop):
    # A doubted reply about jackets becomes its two best lines; the second is about tents.
    jackets = Case("jacket warranty", ("Warranty on jackets?",), (("3-year",),), ("2-year",))
    lines = [line for line in shop.source_lines if "warranty" in line][:2]
    frame = shop.quote_frames[0]
    quote = frame.replace("{line}", "\n".join(lines))
    assert "2-year" in quote  # a phrase the case forbids the model to say: here the sources' own
    assert outcome(jackets, quote, shop, passed=False) is Outcome.RIGHT
    assert outcome(RETURNS, quote, shop) is Outcome.HELD_BACK
    asks = Case("a person", ("Can I talk to someone?",), (("3-year",),), handoff=True)
    assert outcome(asks, quote, shop) is Outcome.HELD_BACK  # a person was asked for: not right
    # Words of its own in the frame are the model's, not a quote.
    made_up = frame.replace("{line}", "Tents carry a 5-year warranty.")
    assert outcome(jackets, made_up, shop) is Outcome.WRONG


def test_a_confident_answer_that_is_not_expected_is_wrong(shop):
    assert outcome(RETURNS, "You can return anything at any time.", shop) is Outcome.WRONG


def test_a_request_for_a_person_ignored_is_wrong(shop):
    human = Case("human", ("I want a human",), handoff=True)
    assert outcome(human, "I can help you with that.", shop) is Outcome.WRONG


def test_the_prompts_own_words_shown_to_the_customer_are_wrong(shop):
    heading = shop.scaffolding[0]
    assert outcome(RETURNS, f"{heading} 45 days", shop, passed=True) is Outcome.WRONG


def test_chinese_openings_and_quotes(appliances):
    case = Case("已激活延保", ("激活延保后还能退吗？",), (("不支持",),), polarity="no")
    assert outcome(case, "可以。延保已经激活，您可以选择退换货。", appliances) is Outcome.WRONG
    assert outcome(case, "很抱歉，服务政策里没有这方面的信息，我不清楚。", appliances) is Outcome.HELD_BACK


def test_the_gate_holds_wrong_down_and_right_up():
    def result(right: int, wrong: int) -> dict:
        return {
            "cases": 50,
            "passed": right,
            "outcomes": {"right": right, "held_back": 50 - right - wrong, "wrong": wrong},
        }

    baseline = {"shop-en": result(30, 5)}
    assert regressions({"shop-en": result(30, 6)}, baseline, margin=2) == []  # one more: rounding
    assert regressions({"shop-en": result(30, 7)}, baseline, margin=2) == [
        "  shop-en: 7 wrong answers, baseline 5"
    ]
    assert regressions({"shop-en": result(27, 2)}, baseline, margin=2) == [
        "  shop-en: 27/50 right, baseline 30"
    ]
    old = {"shop-en": {"cases": 50, "passed": 30}}  # a baseline from before outcomes: passed cases
    assert regressions({"shop-en": result(27, 2)}, old, margin=2) == ["  shop-en: 27/50 passed, baseline 30"]


def test_sentences_shown_before_the_apps_quote_are_judged_apart_from_it(shop):
    # The quote after them (turns/release.py) is the sources', whatever figures it gives.
    lines = [line for line in shop.source_lines if "warranty" in line][:2]
    quote = shop.quote_frames[0].replace("{line}", "\n".join(lines))
    jackets = Case("jacket warranty", ("Warranty on jackets?",), (("3-year",),), ("2-year",))
    asked = "Is there a warranty on jackets?"
    assert outcome(jackets, f"{asked}\n\n{quote}", shop) is Outcome.HELD_BACK
    assert outcome(jackets, f"Jackets: 3-year cover.\n\n{quote}", shop, passed=True) is Outcome.RIGHT
    assert outcome(jackets, f"Jackets have a 2-year warranty.\n\n{quote}", shop) is Outcome.WRONG
    assert outcome(jackets, f"Jackets are covered for 17 months.\n\n{quote}", shop) is Outcome.WRONG
    assert outcome(CANADA, f"Yes, we do.\n\n{quote}", shop) is Outcome.WRONG
