"""Three outcomes of a case's last reply, from the customer's side: right, held back, or wrong.

    right       it states what the case expects (the case passed)
    held back   it states nothing false, and says it does not know, quotes a line of the
                bot's own sources word for word, or offers (or hands over to) a person;
                the app's own quote of source lines (in the place of a doubted reply, or
                of "I don't know") is the sources themselves, whatever other figures its
                lines give: right if it states what the case expects, else held back; the
                sentences shown before it are judged on their own
    wrong       anything else: a false figure or fact, a yes or no the wrong way, a phrase the
                case forbids, the prompt's own scaffolding, or a request for a person ignored

A wrong answer is worse than none: the gate holds `wrong` down and `right` up.
"""

import enum
import re
from dataclasses import dataclass
from pathlib import Path

from backend.evaluation.cases import Case, missing
from backend.languages import in_language_or_english
from backend.prompting.assembler import PromptAssembler
from backend.prompting.definitions import Bot
from backend.prompting.openings import Opening, Openings, load_second_try
from backend.prompting.quoting import load_quoting
from backend.turns import figures

MIN_QUOTED_CHARS = 12  # a source line shorter than this is too common to count as a quote
# Words that offer a person, per language (the bot's own handover message counts too).
OFFERS = {
    "en": ("colleague", "pass you to", "a person", "human", "our team", "support team"),
    "zh": ("转接人工", "人工客服", "转人工"),
    "es": ("compañer", "una persona", "nuestro equipo", "equipo de atención", "le paso con", "agente"),
    "fr": ("collègue", "une personne", "notre équipe", "conseiller", "vous transf", "un agent"),
    "de": ("kolleg", "einer person", "unser team", "support-team", "mitarbeiter", "weiterleite", "verbinde"),
    "pt": ("colega", "uma pessoa", "nossa equipe", "nossa equipa", "atendente", "transferir"),
    "it": ("collega", "una persona", "nostro team", "operatore", "trasferir", "metto in contatto"),
}


class Outcome(enum.StrEnum):
    RIGHT = "right"
    HELD_BACK = "held_back"
    WRONG = "wrong"


@dataclass(frozen=True)
class Ground:
    """What a bot's replies are judged against, beyond the case: its sources and its words."""

    source_lines: tuple[str, ...]  # every line of its policy and help center
    source_texts: tuple[str, ...]  # the whole texts the model was given
    openings: Openings  # the words a plain yes or no starts with
    unknown_openings: tuple[str, ...]  # the words that say it does not know
    offers: tuple[str, ...]  # the words that offer a person
    scaffolding: tuple[str, ...]  # the app's own words in the prompt (notes' headings)
    quote_frames: tuple[str, ...] = ()  # how the app quotes source lines, each with "{line}"

    @classmethod
    def of(cls, bot: Bot, prompts_dir: Path, folder: Path) -> "Ground":
        opening = load_second_try(_judge_file("opening", prompts_dir, folder), bot.language, {})
        quoting = bot.quoting or load_quoting(_judge_file("line_answers", prompts_dir, folder), bot.language)
        return cls(
            source_lines=tuple(line for line in bot.reference.lines if len(line) >= MIN_QUOTED_CHARS),
            source_texts=bot.fixed_texts(),
            openings=opening.openings,
            unknown_openings=quoting.unknown_openings,
            offers=(*in_language_or_english(OFFERS, bot.language), bot.handoff.message),
            scaffolding=PromptAssembler.note_headings(bot),
            quote_frames=tuple({quoting.frame, *(q.frame for q in (bot.fallback,) if q is not None)}),
        )


def classify(case: Case, reply: str, handed_off: bool, passed: bool, ground: Ground) -> tuple[Outcome, str]:
    """The reply's outcome, and why, when it is not right."""
    if shown := [phrase for phrase in ground.scaffolding if phrase and phrase in reply]:
        return Outcome.WRONG, f"shows the prompt's own text {shown[0][:40]!r}"
    if _quotes_sources(reply, ground):  # the sources' words: what the case forbids is the model's to avoid
        stated = not handed_off and not case.handoff and not missing(case, reply)
        return (Outcome.RIGHT, "") if stated else (Outcome.HELD_BACK, "quotes its sources")
    # Sentences shown before the app's quote (turns/release.py) are the model's; the quote
    # after them is the sources', as a quote alone is.
    own = _before_quote(reply, ground)
    if said := [phrase for phrase in case.forbid if phrase.lower() in own.lower()]:
        return Outcome.WRONG, f"says {said[0]!r}"
    if case.polarity and (opened := _opening(own, ground.openings)) and opened != case.polarity:
        return Outcome.WRONG, f"answers {opened} where the answer is {case.polarity}"
    if passed:
        return Outcome.RIGHT, ""
    if case.handoff and not handed_off:
        return Outcome.WRONG, "a person was asked for and not given"
    if handed_off:
        return Outcome.HELD_BACK, "handed over to a person"
    if unsupported := figures.unsupported(own, *ground.source_texts):
        return Outcome.WRONG, unsupported[0]
    if own != reply:
        return Outcome.HELD_BACK, "quotes its sources after its own sentences"
    if why := _holds_back(reply, ground):
        return Outcome.HELD_BACK, why
    return Outcome.WRONG, "states what the case does not expect"


def _holds_back(reply: str, ground: Ground) -> str:
    """How the reply holds back, if it does ("" if it answers)."""
    start = reply.lstrip().casefold()
    if any(start.startswith(words.casefold()) for words in ground.unknown_openings):
        return "says it does not know"
    squashed = _squash(reply)
    if any(_squash(line) in squashed for line in ground.source_lines):
        return "quotes its source"
    if any(offer.casefold() in reply.casefold() for offer in ground.offers):
        return "offers a person"
    return ""


def _quotes_sources(reply: str, ground: Ground) -> bool:
    """The reply is the app's quote frame around lines of the bot's sources, word for word."""
    lines = {_squash(line) for line in ground.source_lines}
    for frame in ground.quote_frames:
        head, _, tail = frame.partition("{line}")
        if reply.startswith(head) and reply.endswith(tail) and len(reply) > len(head) + len(tail):
            quoted = reply[len(head) : len(reply) - len(tail)].splitlines()
            if all(_squash(line) in lines for line in quoted if line.strip()):
                return True
    return False


def _before_quote(reply: str, ground: Ground) -> str:
    """The reply's own sentences before the app's quote of source lines (the whole reply if
    no quote follows them)."""
    for frame in ground.quote_frames:
        start = reply.rfind("\n\n" + frame.partition("{line}")[0])
        if start > 0 and _quotes_sources(reply[start + 2 :], ground):
            return reply[:start]
    return reply


def _opening(reply: str, openings: Openings) -> str | None:
    return {Opening.YES: "yes", Opening.NO: "no"}.get(openings.answer(reply))


def _squash(text: str) -> str:
    """Text compared without its spacing, Markdown list marks and case."""
    return re.sub(r"[\s*_`>-]+", " ", text).strip().casefold()


def _judge_file(name: str, prompts_dir: Path, folder: Path) -> Path:
    own = folder / "judges" / f"{name}.toml"
    return own if own.is_file() else prompts_dir / "_judges" / f"{name}.toml"
