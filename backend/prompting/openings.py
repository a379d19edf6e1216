"""The first words of a reply that commit it to yes or no, and what a bot does when they
go against its policy (`turns/second_try.py`).

They are read from the opening judge's file (`prompts/_judges/opening.toml`, or the bot's
own `judges/opening.toml`), per language, beside the judge's instruction; the bot's
`bot.toml` says what happens on a contradiction (`[second_try] action`).
"""

import enum
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.languages import table_in_language

ACTIONS = ("retry", "handoff")


class Opening(enum.Enum):
    YES = "yes"
    NO = "no"
    NEITHER = "neither"  # the reply starts some other way
    UNDECIDED = "undecided"  # too little text yet to tell


@dataclass(frozen=True)
class Openings:
    yes: tuple[str, ...]
    no: tuple[str, ...]

    def of(self, text: str) -> tuple[Opening, str]:
        """How a reply that starts with `text` opens, and the opening word it starts with ("" if none)."""
        undecided = False
        for opening, words in ((Opening.YES, self.yes), (Opening.NO, self.no)):
            started, word = starts_with(text, words)
            if started is Start.YES:
                return opening, word
            undecided = undecided or started is Start.UNDECIDED
        return (Opening.UNDECIDED, "") if undecided else (Opening.NEITHER, "")

    def answer(self, text: str) -> Opening:
        """How a written reply (or sentence) opens: yes, no or neither; it is never undecided,
        since no more text will come."""
        opening = self.of(text + " ")[0]
        return Opening.NEITHER if opening is Opening.UNDECIDED else opening

    def answers_yes_or_no(self, text: str) -> bool:
        return self.answer(text) is not Opening.NEITHER


class Start(enum.Enum):
    YES = "yes"  # the text starts with one of the words
    NO = "no"  # it cannot: it has gone another way
    UNDECIDED = "undecided"  # it may yet: more text will tell


def starts_with(text: str, words: tuple[str, ...]) -> tuple[Start, str]:
    """Whether `text` (the start of a reply) starts with one of `words`, and which, as written.

    A word that ends in a Latin letter must be followed by something else ("No," but not
    "Normally"); one in a script without spaces between words (可以) needs nothing after it.
    Case does not count.
    """
    start = text.lstrip()
    folded = start.casefold()
    undecided = False
    for word in words:
        key = word.casefold()
        if folded.startswith(key):
            rest = start[len(word) :]
            if not _latin_letter(word[-1]):
                return Start.YES, start[: len(word)]
            if not rest:
                undecided = True
            elif not rest[0].isalnum():
                return Start.YES, start[: len(word)]
        elif key.startswith(folded):
            undecided = True
    return (Start.UNDECIDED, "") if undecided else (Start.NO, "")


@dataclass(frozen=True)
class SecondTry:
    """A bot's second try: the opening words checked, the note a retry is written after, and
    what it does when the opening goes against the policy (retry or hand off)."""

    openings: Openings
    retry_note: str  # with "{opening}", the word the dropped reply opened with
    action: str


class OpeningsError(ValueError):
    """An opening judge file or a [second_try] table that does not say what is needed."""


def load_second_try(judge_file: Path, language: str, config: dict[str, Any]) -> SecondTry:
    """The bot's second try, from its opening judge's file and its bot.toml `[second_try]`."""
    unknown = set(config) - {"action"}
    action = config.get("action", "retry")
    if unknown or action not in ACTIONS:
        raise OpeningsError(f"[second_try] takes action = {' or '.join(map(repr, ACTIONS))}; got {config}")
    try:
        document = tomllib.loads(judge_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise OpeningsError(f"{judge_file}: {error}") from error
    table = table_in_language(document, language) or {}
    yes, no, note = table.get("yes_openings"), table.get("no_openings"), table.get("retry_note")
    if not (is_word_list(yes) and is_word_list(no)) or not isinstance(note, str) or "{opening}" not in note:
        raise OpeningsError(
            f"{judge_file}: [{language}] needs yes_openings and no_openings (lists of words) and a "
            "retry_note that names {opening}"
        )
    return SecondTry(Openings(tuple(yes or ()), tuple(no or ())), note.strip(), action)


def is_word_list(value: Any) -> bool:
    """A non-empty list of non-blank strings: the opening words a judge file lists."""
    return isinstance(value, list) and bool(value) and all(isinstance(w, str) and w.strip() for w in value)


def _latin_letter(char: str) -> bool:
    return char.isascii() and char.isalpha()
