"""Signs that a reply does not say what the lines matching its question say, in any language
with a word list, on plain text."""

import pytest

from backend.config import PROJECT_ROOT
from backend.prompting.openings import Opening, Openings, load_second_try
from backend.turns.grounding import (
    denies,
    grounded_share,
    restates_the_question,
    speaks_to_the_question,
    turned_around,
)

CODES = "The 10% welcome code and the 15% newsletter code cannot be combined."


def test_a_reply_that_grants_what_the_line_denies_is_turned_around():
    assert turned_around("Yes, you can use both codes on one order.", CODES, "en")
    assert not turned_around("No, the two codes cannot be combined.", CODES, "en")
    used = "Sleeping bags and tents that have been used can be returned only if they are faulty."
    assert turned_around("Yes, you can return a sleeping bag you've used twice.", used, "en")
    assert turned_around("可以，两个优惠码能一起用。", "两个优惠码不能同时使用。", "zh-CN")
    assert not turned_around("不行，两个优惠码不能同时使用。", "两个优惠码不能同时使用。", "zh-CN")


def test_a_plain_yes_is_read_by_its_first_sentence_whatever_follows():
    openings = Openings(yes=("Yes", "可以"), no=("No", "不能"))
    discount = (
        "Nonprofits get 25% off with yearly billing. The discount is not available with monthly billing."
    )
    contradicts_itself = (
        "Yes, you can get the discount monthly. The discount is not available with monthly billing."
    )
    assert not turned_around(contradicts_itself, discount, "en")  # read whole, it denies too
    assert turned_around(contradicts_itself, discount, "en", openings)
    assert not turned_around(
        "Yes, but only with yearly billing. Apply in Settings.", discount, "en", openings
    )
    assert not turned_around(
        "No, it is not available monthly. It is 25% off yearly.", discount, "en", openings
    )
    # A reply that is not a plain yes or no is read whole, as before.
    assert not turned_around("You get 25% off. It is not available monthly.", discount, "en", openings)
    assert not turned_around("可以，但仅限按年付费。每月付费不可以。", "仅限按年付费。", "zh-CN", openings)
    assert turned_around("可以，按月付费也能享受。不过需要申请。", "仅限按年付费。", "zh-CN", openings)


# Per language: a line that restricts, a reply that opens with a plain yes and grants what it
# restricts, one that opens with a plain no and says what it says, and a reply that opens with a
# word that only looks like yes ("si" is "if" in Spanish).
IN_OTHER_LANGUAGES = {
    "es-ES": (
        "Los códigos de descuento no se pueden combinar.",
        "Sí, puede usar los dos códigos en un pedido.",
        "No, los dos códigos no se pueden combinar.",
        "Si desea usar un código, introdúzcalo al pagar.",
    ),
    "fr-FR": (
        "Les codes de réduction ne sont pas cumulables.",
        "Oui, vous pouvez utiliser les deux codes.",
        "Non, les deux codes ne sont pas cumulables.",
        "Ouvrez votre panier pour saisir un code.",
    ),
    "de-DE": (
        "Rabattcodes können nicht kombiniert werden.",
        "Ja, Sie können beide Codes verwenden.",
        "Nein, die beiden Codes können nicht kombiniert werden.",
        "Jahresabos erhalten 10 % Rabatt.",
    ),
    "pt-BR": (
        "Os cupons de desconto não podem ser combinados.",
        "Sim, você pode usar os dois cupons.",
        "Não, os dois cupons não podem ser combinados.",
        "Simplesmente digite o cupom no carrinho.",
    ),
    "it-IT": (
        "I codici sconto non sono cumulabili.",
        "Sì, può usare entrambi i codici.",
        "No, i due codici non sono cumulabili.",
        "Si può inserire un codice nel carrello.",
    ),
}


@pytest.mark.parametrize("language", IN_OTHER_LANGUAGES)
def test_a_yes_that_grants_what_the_line_restricts_is_caught_in_other_languages(language):
    line, yes, no, neither = IN_OTHER_LANGUAGES[language]
    openings = load_second_try(PROJECT_ROOT / "prompts" / "_judges" / "opening.toml", language, {}).openings
    read = [openings.answer(reply) for reply in (yes, no, neither)]
    assert read == [Opening.YES, Opening.NO, Opening.NEITHER]
    assert turned_around(yes, line, language, openings)
    assert not turned_around(no, line, language, openings)


def test_a_language_without_a_word_list_is_not_judged():
    assert denies("Nej, det går inte.", "sv") is None
    assert not turned_around("Ja, det går.", "Det går inte.", "sv")


def test_the_grounded_share_counts_only_what_the_reply_adds_to_the_question():
    question = "Can I combine the welcome code and the newsletter code?"
    assert (
        grounded_share(
            "The welcome code and the newsletter code cannot be combined.", [CODES], question, "en"
        )
        == 1.0
    )
    made_up = "Yes, and you also get free gift wrapping with a loyalty voucher."
    assert grounded_share(made_up, [CODES], question, "en") < 0.5
    assert grounded_share("Yes.", [CODES], question, "en") == 1.0  # restates_the_question judges it


def test_a_reply_that_only_restates_the_question_is_an_echo():
    question = "If I cancel halfway through the month, do I get the unused part back?"
    assert restates_the_question(
        "If you cancel halfway through the month, you get the unused part back.", question, "en"
    )
    assert restates_the_question("No.", question, "en")
    assert not restates_the_question("\n\n", question, "en")  # nothing said
    pickup = "Can I pick up my order at your Rotterdam warehouse to save the shipping?"
    assert restates_the_question("Yes, you can pick up your order at our Rotterdam warehouse.", pickup, "en")
    # What it adds from the sources: words, or a figure the question does not give.
    assert not restates_the_question(
        "No, monthly payments are not refunded after cancelling.", question, "en"
    )
    assert not restates_the_question("You get 14 days back.", question, "en")
    rating = "What's the waterproof rating in mm of the Fjord rain jacket?"
    assert not restates_the_question("The Fjord rain jacket's rating is 10,000 mm.", rating, "en")
    assert restates_the_question("The waterproof rating of the Fjord rain jacket is 10.", rating, "en")
    # Chinese is compared by characters and their pairs.
    assert restates_the_question("可以退货。", "可以退货吗？", "zh-CN")
    assert not restates_the_question("可以，收货后7天内无理由退货。", "可以退货吗？", "zh-CN")


def test_an_opening_that_only_greets_or_thanks_has_not_yet_spoken_to_the_question():
    question = "Can I combine the welcome code and the newsletter code?"
    for opening in ("Sure!", "Great question!", "Thank you for reaching out!", "Happy to help!", "\n"):
        assert not speaks_to_the_question(opening, [CODES], question, "en"), opening
    assert not speaks_to_the_question("Yes, you can combine them.", [CODES], question, "en")  # an echo
    assert speaks_to_the_question("Yes, the 10% code and the 15% code add up.", [CODES], question, "en")
    assert speaks_to_the_question("No, the 10% and 15% codes are not combined.", [CODES], question, "en")
    assert not speaks_to_the_question("好的！", ["优惠码不能叠加使用。"], "优惠码可以叠加吗？", "zh-CN")
    assert speaks_to_the_question(
        "不能，优惠码不能同时使用。", ["优惠码不能叠加使用。"], "优惠码可以叠加吗？", "zh-CN"
    )
    # Words of the question not in the matching lines: it speaks to the question, made up or not.
    bounced = "My invoice never arrived, and Tallybook says Bounced. What now?"
    assert speaks_to_the_question("Bounced invoices are marked Billed.", [CODES], bounced, "en")
