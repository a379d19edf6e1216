"""What a bot does when a reply starts by saying it does not know: the opening words that
say so, and how it quotes a policy line that answers after all (`turns/quotes.py`).

Both are read from the `line_answers` judge's file (`prompts/_judges/line_answers.toml`, or
the bot's own `judges/line_answers.toml`), per language, beside the judge's instruction.
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from backend.languages import table_in_language
from backend.prompting.openings import Start, is_word_list, starts_with


@dataclass(frozen=True)
class Quoting:
    unknown_openings: tuple[str, ...]  # a reply's first words that say the bot does not know
    frame: str  # the reply that quotes a line, with "{line}"
    unknown: str = ""  # the reply when no line is about the question: it does not know, a person can help

    def opening_of(self, text: str) -> Start:
        """Whether a reply that starts with `text` says it does not know (or may yet)."""
        return starts_with(text, self.unknown_openings)[0]

    def quote(self, line: str) -> str:
        return self.frame.replace("{line}", line)


class QuotingError(ValueError):
    """A line_answers judge file without what quoting needs; names the file."""


def load_quoting(judge_file: Path, language: str, *, with_help_center: bool = False) -> Quoting:
    """A bot with a help center quotes lines of its policy or its articles: it says so, where
    the file has `quote_with_help_center` and `unknown_with_help_center`."""
    try:
        document = tomllib.loads(judge_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise QuotingError(f"{judge_file}: {error}") from error
    table = table_in_language(document, language) or {}
    openings, frame, unknown = table.get("unknown_openings"), table.get("quote"), table.get("unknown")
    if with_help_center:
        frame = table.get("quote_with_help_center", frame)
        unknown = table.get("unknown_with_help_center", unknown)
    if not is_word_list(openings) or not isinstance(frame, str) or "{line}" not in frame:
        raise QuotingError(
            f"{judge_file}: [{language}] needs unknown_openings (a list of a reply's first words) "
            "and a quote (and quote_with_help_center, if given) that names {line}"
        )
    if unknown is not None and not isinstance(unknown, str):
        raise QuotingError(
            f"{judge_file}: [{language}] unknown is the reply when no line is about the question"
        )
    said_unknown = (unknown or f"{openings[0]}.").strip() if openings else ""
    return Quoting(tuple(openings or ()), frame.strip(), said_unknown)
