"""Whether a reply says what the source lines that match its question say: deterministic signs
that it does not, for replies checked strictly (`[answers] checks = "strict"`).

A small model's confident mistakes are mostly of four kinds: a figure that belongs to another
product or plan (`checks.figures_in_matching_lines`); the policy's own words with their sense
turned around ("yes, you can use both codes" beside "the codes cannot be combined"): a reply
that denies where the line that matches best does not, or the other way round; an answer
made up, whose words are mostly not the matching lines'; and the question restated as its
answer ("Do I get the unused part back?" "You get the unused part back."), which asserts
what the customer hoped and nothing the sources give. A reply with any of these signs is not
shown; its lines are quoted instead, which states nothing false.
"""

import re
from collections.abc import Sequence

from backend.languages import in_language
from backend.prompting.openings import Openings
from backend.retrieval.terms import terms
from backend.turns import figures
from backend.turns.sentences import first_sentence

# Words that deny or restrict ("only if"), per language; a language without a list is not
# checked for them.
DENIALS = {
    "en": re.compile(
        r"\b(?:not|no|cannot|can't|don't|doesn't|isn't|aren't|won't|never|nothing|none|only)\b",
        re.IGNORECASE,
    ),
    "zh": re.compile(r"不|没有|没|无法|无|非|仅|只"),
    "es": re.compile(
        r"\b(?:no|nunca|jamás|nada|ningún|ninguno|ninguna|nadie|solo|sólo|solamente|únicamente)\b",
        re.IGNORECASE,
    ),
    "fr": re.compile(  # "ne ... pas", "n'est pas", "ne ... que" (only)
        r"\b(?:ne|pas|jamais|aucun|aucune|rien|seulement|uniquement)\b|\bn['’]", re.IGNORECASE
    ),
    "de": re.compile(
        r"\b(?:nicht|kein|keine|keinen|keinem|keiner|keines|nie|niemals|nichts|nur|ausschließlich)\b",
        re.IGNORECASE,
    ),
    "pt": re.compile(
        r"\b(?:não|nunca|jamais|nada|nenhum|nenhuma|ninguém|só|somente|apenas|exclusivamente)\b",
        re.IGNORECASE,
    ),
    "it": re.compile(
        r"\b(?:non|mai|niente|nulla|nessun|nessuno|nessuna|solo|soltanto|solamente|esclusivamente)\b",
        re.IGNORECASE,
    ),
}


def denies(text: str, language: str) -> bool | None:
    """Whether `text` denies or restricts something (None: no word list for its language)."""
    pattern = in_language(DENIALS, language)
    return None if pattern is None else bool(pattern.search(text))


def turned_around(reply: str, best_line: str, language: str, openings: Openings | None = None) -> bool:
    """The reply denies where the best-matching line does not, or the other way round. A reply
    that opens with a plain yes or no is read by its first sentence, the answer the customer
    acts on: "Yes, you can ... The discount is not available ..." grants, whatever follows."""
    answer = reply
    if openings is not None and openings.answers_yes_or_no(reply):
        answer = first_sentence(reply)
    line_denies, reply_denies = denies(best_line, language), denies(answer, language)
    return line_denies is not None and line_denies != reply_denies


# A reply that adds fewer words than this to the question, and no figure, only restates it.
MIN_ADDED_TERMS = 2


def restates_the_question(reply: str, question: str, language: str) -> bool:
    """The reply adds to the question fewer than MIN_ADDED_TERMS search terms of its own and
    no figure: "You get the unused part back.", "Yes, you can pick up your order at the
    warehouse.", a bare "No.". Whatever the sources say, it only echoes the customer."""
    if not any(character.isalnum() for character in reply):  # it says nothing, so echoes nothing
        return False
    added = _added_terms(reply, question, language)
    return len(added) < MIN_ADDED_TERMS and not figures.claimed(reply) - figures.claimed(question)


MIN_GROUNDED_SHARE = 0.5  # of a reply's own words (not the question's), at least this many are the lines'


def grounded_share(reply: str, lines: Sequence[str], question: str, language: str) -> float:
    """How much of what the reply adds to the question comes from the matching lines: the share
    of its search terms (stemmed words; characters and their pairs in Chinese) that are theirs."""
    added = _added_terms(reply, question, language)
    if len(added) < MIN_ADDED_TERMS:  # `restates_the_question` judges it
        return 1.0
    theirs = {term for line in lines for term in terms(line, language)}
    return len(added & theirs) / len(added)


def _added_terms(reply: str, question: str, language: str) -> set[str]:
    """The reply's search terms that the question does not have: what it says of its own."""
    return set(terms(reply, language)) - set(terms(question, language))


def speaks_to_the_question(reply: str, lines: Sequence[str], question: str, language: str) -> bool:
    """The reply so far says something of its own about the question: words of its own, some
    of them the question's or the lines', or a figure the question lacks. "Sure!", "Great
    question!" and "Thank you for reaching out!" take up neither: a reply that has only greeted
    or thanked has not yet said what it will be judged by."""
    if not any(character.isalnum() for character in reply):
        return False
    if restates_the_question(reply, question, language):
        return False
    if grounded_share(reply, lines, question, language) > 0:
        return True
    return bool(set(terms(reply, language)) & set(terms(question, language)))
