"""The policy lines repeated beside a customer's message."""

import dataclasses

from backend.config import PROJECT_ROOT
from backend.prompting.assembler import PromptAssembler
from backend.prompting.bots import load_bots
from backend.prompting.reference import PolicyLines

POLICY = """## Returns
- Customers may return any unused item within 45 days of delivery.
- Gift cards cannot be refunded.

## Warranty
- Tents carry a 2-year warranty.
"""


def test_every_line_but_headings_is_a_line_searched_with_its_heading():
    lines = PolicyLines.of(POLICY, "en")
    assert lines.lines == (
        "Customers may return any unused item within 45 days of delivery.",
        "Gift cards cannot be refunded.",
        "Tents carry a 2-year warranty.",
    )
    # "returns" is only in the heading: the section's lines still match it.
    assert lines.matching("returns?", 3) == list(lines.lines[:2])


def test_the_note_is_the_heading_and_the_matching_lines():
    lines = PolicyLines.of(POLICY, "en")
    assert lines.note("How long is the warranty on a tent?", 2) == (
        "The policy lines that best match the customer's next message:\n- Tents carry a 2-year warranty."
    )


def test_no_match_or_no_lines_asked_for_gives_no_note():
    lines = PolicyLines.of(POLICY, "en")
    assert lines.note("Hello!", 3) is None
    assert lines.note("warranty on a tent?", 0) is None


def test_the_heading_follows_the_bot_language_or_its_own_setting():
    assert PolicyLines.of(POLICY, "zh-CN").heading == "与顾客下一条消息最相关的政策条款："
    assert PolicyLines.of(POLICY, "sv").heading.startswith("The policy lines that best match")
    assert PolicyLines.of(POLICY, "sv", "Ur vår policy:").heading == "Ur vår policy:"


def test_shipped_bots_find_the_line_that_settles_a_plain_question():
    bots = load_bots(PROJECT_ROOT / "prompts")
    english, chinese = bots["shop-en"].reference, bots["appliance-zh"].reference
    assert any("45 days" in line for line in english.matching("How many days to return?", 3))
    assert any("10年" in line for line in chinese.matching("压缩机保修几年？", 3))


def test_a_reply_loses_the_note_headings_it_repeats_in_the_bots_language():
    bots = load_bots(PROJECT_ROOT / "prompts")
    zh = bots["appliance-zh"]
    reply = f"{zh.reference.heading}\n- 冰箱整机保修3年。"
    assert PromptAssembler.without_note_headings(zh, reply) == "- 冰箱整机保修3年。"
    articles = "Help-center articles for the customer's next message:"
    en = bots["tallybook-en"]
    assert PromptAssembler.without_note_headings(en, f"{articles} The trial lasts 30 days.") == (
        "The trial lasts 30 days."
    )
    untouched = "Our policy lines say you have 45 days."
    assert PromptAssembler.without_note_headings(bots["shop-en"], untouched) == untouched
    assert PromptAssembler.without_note_headings(bots["shop-en"], "\n\n") == "\n\n"  # as streamed
    # A language without headings of its own gets the English ones, in its notes and here.
    swedish = dataclasses.replace(en, language="sv", reference=PolicyLines.of(POLICY, "sv"))
    assert PromptAssembler.without_note_headings(swedish, f"{articles}\nProvperioden är 30 dagar.") == (
        "Provperioden är 30 dagar."
    )
