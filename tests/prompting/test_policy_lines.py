"""The policy lines repeated beside a customer's message."""

import dataclasses

import pytest

from backend.config import PROJECT_ROOT
from backend.prompting.assembler import PromptAssembler
from backend.prompting.definitions import BotDefinitionError, load_bot, load_bots
from backend.prompting.reference import PolicyLines, document_lines
from backend.retrieval import meaning

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
    # "returns" is only in the heading: the section's lines still match it, by words (where
    # only lines that share a word match, however many are asked for) and by meaning too.
    assert lines.matching("returns?", 3) == list(lines.lines[:2])
    assert PolicyLines.of(POLICY, "en", matching="hybrid").matching("returns?", 2) == list(lines.lines[:2])


ARTICLE = """Only the owner can change the plan.

**Downgrading**

A downgrade takes effect at the end of the billing period. There is no refund.

You can pay for a subscription with:

- Cards
- SEPA Direct Debit

Invoices are sent by e-mail.
"""


def test_help_center_sub_headings_in_bold_are_headings_and_a_list_is_searched_with_its_introduction():
    assert list(document_lines("Change your plan", ARTICLE)) == [
        ("Only the owner can change the plan.", "Change your plan\nOnly the owner can change the plan."),
        (
            "A downgrade takes effect at the end of the billing period. There is no refund.",
            "Change your plan\nDowngrading\nA downgrade takes effect at the end of the billing period. "
            "There is no refund.",
        ),
        (
            "You can pay for a subscription with:",
            "Change your plan\nDowngrading\nYou can pay for a subscription with:",
        ),
        ("Cards", "Change your plan\nDowngrading\nYou can pay for a subscription with:\nCards"),
        (
            "SEPA Direct Debit",
            "Change your plan\nDowngrading\nYou can pay for a subscription with:\nSEPA Direct Debit",
        ),
        ("Invoices are sent by e-mail.", "Change your plan\nDowngrading\nInvoices are sent by e-mail."),
    ]
    # A line in bold among words is not a heading; a policy's `#` headings stand alone.
    assert [line for line, _ in document_lines("", "Go to **Settings**.\n**Note:** keep it.")] == [
        "Go to **Settings**.",
        "**Note:** keep it.",
    ]
    assert list(document_lines("", "## Returns\n- Gift cards cannot be refunded.")) == [
        ("Gift cards cannot be refunded.", "Returns\nGift cards cannot be refunded.")
    ]


def test_a_message_is_ranked_once_however_often_its_lines_are_asked_for():
    # The note, the checks, the quote and the source shown under a reply ask for the same
    # message's lines; matching by meaning encodes the message, once.
    lines = PolicyLines.of(POLICY, "en", matching="hybrid")
    asked = []
    score = lines.meaning.scores
    object.__setattr__(lines.meaning, "scores", lambda message: asked.append(message) or score(message))
    question = "can I return my tent?"
    best, three = lines.matching(question, 1), lines.matching(question, 3)
    assert asked == [question] and lines.note(question, 2) is not None and asked == [question]
    fresh = PolicyLines.of(POLICY, "en", matching="hybrid")
    assert (best, three) == (fresh.matching(question, 1), fresh.matching(question, 3))
    assert set(best) <= set(three) and three == [line for line in lines.lines if line in three]


SHOP = """## Returns
- Unused items can be returned within 45 days of delivery.
- Gift cards cannot be refunded.

## Delivery
- Orders are delivered in 2 to 4 business days.
- Delivery is free above 60 EUR.
"""

APPLIANCES = """## 退换货
- 商品签收之日起7天内，未使用且包装完整的商品可以无理由退货。
- 签收之日起15天内，商品出现性能故障，可以选择换货或退货。
## 保修
- 整机保修3年，压缩机和电机保修10年。
"""


@pytest.mark.parametrize(
    ("policy", "language", "question", "answer", "shares_words_with"),
    [
        (
            SHOP,
            "en",
            "My boots were delivered six weeks ago and I never wore them. Too late to send them back?",
            "Unused items can be returned within 45 days of delivery.",
            "Orders are delivered in 2 to 4 business days.",
        ),
        (
            APPLIANCES,
            "zh",
            "买了个东西还没拆封，不想要了能退吗？",
            "商品签收之日起7天内，未使用且包装完整的商品可以无理由退货。",
            "签收之日起15天内，商品出现性能故障，可以选择换货或退货。",
        ),
    ],
)
def test_a_question_in_other_words_finds_its_line_by_meaning(
    policy, language, question, answer, shares_words_with
):
    assert PolicyLines.of(policy, language, matching="hybrid").matching(question, 1) == [answer]
    # Matched by shared words alone, the line that shares the most wins.
    assert PolicyLines.of(policy, language).matching(question, 1) == [shares_words_with]


def test_by_meaning_a_message_that_shares_no_word_with_the_policy_gets_no_lines():
    lines = PolicyLines.of(SHOP, "en", matching="hybrid")
    assert lines.meaning is not None
    assert lines.matching("Hello, I live in Oslo.", 3) == []
    assert lines.matching("thanks!", 1) == []


def test_a_language_the_encoder_does_not_know_is_matched_by_words():
    swedish = "## Returer\n- Oanvända varor kan returneras inom 45 dagar.\n- Presentkort återbetalas inte.\n"
    lines = PolicyLines.of(swedish, "sv", matching="hybrid")
    assert lines.meaning is None
    assert lines.matching("Kan jag returnera varor?", 1) == ["Oanvända varor kan returneras inom 45 dagar."]


def test_the_lines_shown_to_the_customer_are_ranked_by_meaning_whatever_the_note_is_ranked_by():
    # The lines quoted in place of a doubted reply, or shown under one, are read by the
    # customer: ranked by meaning too, the answering line comes first even when it shares no
    # word with the question ("number", "call" and "The phone line"), or fewer than another.
    contact = SHOP + "\n## Contact\n- The phone line +31 10 555 0145 is open on business days.\n"
    by_words = PolicyLines.of(contact, "en")
    question = "Is there a number I can call?"
    assert by_words.matching(question, 1) == ["Unused items can be returned within 45 days of delivery."]
    assert by_words.shown(question, 1) == ["The phone line +31 10 555 0145 is open on business days."]
    boots = "My boots were delivered six weeks ago and I never wore them. Too late to send them back?"
    assert by_words.shown(boots, 1) == ["Unused items can be returned within 45 days of delivery."]
    # Only a message that shares a word with the lines is shown any, as for the note.
    assert by_words.shown("Hello, I live in Oslo.", 2) == []
    swedish = PolicyLines.of("## Returer\n- Oanvända varor kan returneras inom 45 dagar.\n", "sv")
    assert swedish.shown("Kan jag returnera varor?", 1) == swedish.matching("Kan jag returnera varor?", 1)


def test_lines_are_encoded_in_the_background_once_prepared_not_when_loaded(monkeypatch):
    # A bot loads on the app's way to ready; its lines are encoded while its prefix warms.
    encoded = []
    vectors = meaning._vectors
    monkeypatch.setattr(meaning, "_vectors", lambda passages: encoded.append(passages) or vectors(passages))
    lines = PolicyLines.of(SHOP, "en")
    assert encoded == [] and not lines.meaning.prepared
    lines.prepare()
    lines.prepare()
    returns = "Unused items can be returned within 45 days of delivery."
    assert lines.shown("Can I return them?", 1) == [returns]
    assert encoded == [lines.searched]


def test_a_bot_chooses_how_its_lines_are_matched(tmp_path):
    bot = tmp_path / "shop"
    bot.mkdir()
    for name in ("system.j2", "context.j2"):
        (bot / name).write_text((PROJECT_ROOT / "prompts" / "shop-en" / name).read_text(encoding="utf-8"))
    (bot / "policy.md").write_text(SHOP, encoding="utf-8")
    settings = 'name = "Shop"\ngreeting = "Hi"\n[vars]\ncompany = "Shop"\n'
    (bot / "bot.toml").write_text(settings + '[reference]\nmatching = "hybrid"\n', encoding="utf-8")
    assert load_bot(bot).reference.note_by_meaning
    (bot / "bot.toml").write_text(settings, encoding="utf-8")
    assert not load_bot(bot).reference.note_by_meaning  # by words alone unless the bot asks
    (bot / "bot.toml").write_text(settings + '[reference]\nmatching = "vectors"\n', encoding="utf-8")
    with pytest.raises(BotDefinitionError, match="matching must be one of words, hybrid"):
        load_bot(bot)


def test_the_note_is_the_heading_and_the_matching_lines():
    lines = PolicyLines.of(POLICY, "en")
    assert lines.note("How long is the warranty on a tent?", 1) == (
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
