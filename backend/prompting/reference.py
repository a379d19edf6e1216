"""The lines of a bot's policy that best match a customer's message, repeated just before it.

The whole policy is in the bot's cached prefix, but a small model answers better when the
few lines that settle a question stand right next to it. They go in a short system note
before the customer's message (the message itself stays as the customer wrote it), are
computed once, and are kept with the message's token ids, so later turns still start with
exactly the ids of earlier ones.
"""

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from backend.knowledge.articles import Knowledge
from backend.languages import in_language_or_english
from backend.retrieval.fusion import fused
from backend.retrieval.index import LexicalIndex
from backend.retrieval.meaning import MeaningIndex, understands

DEFAULT_HEADINGS = {
    "en": "The policy lines that best match the customer's next message:",
    "zh": "与顾客下一条消息最相关的政策条款：",
    "es": "Las líneas de la política que mejor corresponden al próximo mensaje del cliente:",
    "fr": "Les lignes de la politique qui correspondent le mieux au prochain message du client :",
    "de": "Die Zeilen der Richtlinien, die am besten zur nächsten Nachricht des Kunden passen:",
    "pt": "As linhas da política que melhor correspondem à próxima mensagem do cliente:",
    "it": "Le righe della politica che corrispondono meglio al prossimo messaggio del cliente:",
}
WITH_HELP_CENTER_HEADINGS = {
    "en": "The lines of the policy and help center that best match the customer's next message:",
    "zh": "与顾客下一条消息最相关的政策和帮助中心条款：",
    "es": "Las líneas de la política y del centro de ayuda que mejor corresponden al "
    "próximo mensaje del cliente:",
    "fr": "Les lignes de la politique et du centre d'aide qui correspondent le mieux au prochain message du "
    "client :",
    "de": "Die Zeilen der Richtlinien und des Hilfecenters, die am besten zur nächsten Nachricht des Kunden "
    "passen:",
    "pt": "As linhas da política e da central de ajuda que melhor correspondem à próxima "
    "mensagem do cliente:",
    "it": "Le righe della politica e del centro assistenza che corrispondono meglio al "
    "prossimo messaggio del cliente:",
}
MATCHING = ("words", "hybrid")  # how a bot ranks its lines: `[reference] matching` in bot.toml
RANKINGS_KEPT = 256  # messages whose ranking is kept: a turn's checks ask for the same one often


@dataclass(frozen=True)
class PolicyLines:
    lines: tuple[str, ...]
    heading: str  # introduces the lines in the customer's turn, in the bot's language
    index: LexicalIndex
    searched: tuple[str, ...] = ()  # each line as it is searched: with its section's heading
    meaning: MeaningIndex | None = None  # in the languages the sentence encoder knows
    note_by_meaning: bool = False  # the note and the checks rank by meaning too ("hybrid")
    # Each message's lines ranked, best first: the note, the checks, the quote and the source
    # shown under a reply ask for the same message's lines, and meaning costs an encoding.
    _rankings: OrderedDict[tuple[str, bool], tuple[int, ...]] = field(
        default_factory=OrderedDict, init=False, repr=False, compare=False
    )
    # Rankings are asked for from worker threads too (an encoding is not done on the event loop).
    _rankings_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    @classmethod
    def of(
        cls,
        policy: str,
        language: str,
        heading: str | None = None,
        knowledge: Knowledge | None = None,
        matching: str = "words",
    ) -> "PolicyLines":
        """Every non-empty line of a Markdown policy but its headings, and of each help-center
        article, each searched together with the heading or article title it stands under (a
        question about "warranty" finds the lines of the warranty section): `document_lines`."""
        lines: list[str] = []
        searched: list[str] = []
        documents = [("", policy)] + [(article.title, article.text) for article in knowledge or ()]
        for title, document in documents:
            for line, context in document_lines(title, document):
                lines.append(line)
                searched.append(context)
        if heading is None:
            headings = WITH_HELP_CENTER_HEADINGS if knowledge else DEFAULT_HEADINGS
            heading = in_language_or_english(headings, language)
        meaning = MeaningIndex(searched) if understands(language) else None
        by_words = cls(tuple(lines), heading, LexicalIndex(searched, language), tuple(searched), meaning)
        return by_words.matched_by(matching)

    def matched_by(self, matching: str) -> "PolicyLines":
        """The same lines, the note and the checks ranking them by shared words ("words"), or
        by shared words and by meaning ("hybrid") in the languages the sentence encoder knows
        (by words alone in the others)."""
        if matching not in MATCHING:
            raise ValueError(f"[reference] matching must be one of {', '.join(MATCHING)}, not {matching!r}")
        return dataclasses.replace(self, note_by_meaning=matching == "hybrid")

    def matching(self, message: str, count: int) -> list[str]:
        """The `count` lines that match `message` best, in the policy's order; none when it
        shares no word with any of them ("hello", "thanks"): only a message about the policy
        gets lines beside it, however close in meaning a greeting is to some line. By meaning,
        a line may match without a word in common ("too late to send them back?" and the
        line on returns)."""
        return self._best(message, count, self.note_by_meaning)

    def shown(self, message: str, count: int) -> list[str]:
        """The `count` lines to show the customer for `message` (quoted in place of a doubted
        reply, or as the source under one), as `matching` finds them but ranked by meaning too
        wherever the encoder knows the language: the customer reads these lines, and by meaning
        the one that answers comes first more often ("Is there a number I can call?" finds the
        phone line, which shares no word with it, rather than the lines that share "can")."""
        return self._best(message, count, by_meaning=True)

    def _best(self, message: str, count: int, by_meaning: bool) -> list[str]:
        if count <= 0:
            return []
        return [self.lines[i] for i in sorted(self._ranked(message, by_meaning)[:count])]

    def _ranked(self, message: str, by_meaning: bool) -> tuple[int, ...]:
        """The lines that match `message` at all, best first (ties in the policy's order)."""
        key = (message, by_meaning and self.meaning is not None)
        with self._rankings_lock:
            if (ranking := self._rankings.get(key)) is not None:
                self._rankings.move_to_end(key)
                return ranking
        words = self.index.scores(message)
        if self.meaning is None or not by_meaning or not any(score > 0 for score in words):
            matched = [i for i, score in enumerate(words) if score > 0]
            ranking = tuple(sorted(matched, key=lambda i: (-words[i], i)))
        else:
            scores = fused([score if score > 0 else None for score in words], self.meaning.scores(message))
            ranking = tuple(sorted(range(len(scores)), key=lambda i: (-scores[i], i)))
        with self._rankings_lock:
            self._rankings[key] = ranking
            if len(self._rankings) > RANKINGS_KEPT:
                self._rankings.popitem(last=False)
        return ranking

    def prepare(self) -> None:
        """Begin encoding the lines for ranking by meaning, in the background."""
        if self.meaning is not None:
            self.meaning.prepare()

    def note(self, message: str, count: int) -> str | None:
        """What the model is told just before the customer's message: its best lines."""
        return note_of(self.heading, self.matching(message, count))


def document_lines(title: str, document: str) -> Iterator[tuple[str, str]]:
    """A Markdown document's lines, each with the text it is searched as: under its section
    (a `#` heading, or a line all in bold, as help centers write sub-headings; after the
    document's title), and a list's items after the line that introduces them ("You can pay
    with:"). Headings are not lines: quoted or matched alone, they say nothing."""
    section, introduction = title, ""
    for raw in document.splitlines():
        line = raw.strip()
        heading = line.lstrip("#").strip() if line.startswith("#") else _bold_heading(line)
        if heading is not None:
            section, introduction = (f"{title}\n{heading}" if title else heading), ""
        elif line:
            item = line.startswith(LIST_MARKERS)
            text = line.removeprefix("- ").removeprefix("* ").strip()
            yield text, "\n".join(part for part in (section, introduction if item else "", text) if part)
            if not item:
                introduction = line if line.endswith(INTRODUCING) else ""


LIST_MARKERS = ("- ", "* ")
INTRODUCING = (":", "：")  # a line that ends so introduces the list after it


def _bold_heading(line: str) -> str | None:
    """The text of a line that is all bold ("**Downgrading**"), a sub-heading; else None."""
    inner = line[2:-2].strip()
    bold = len(line) > 4 and line.startswith("**") and line.endswith("**") and "**" not in inner
    return inner if bold and inner else None


def note_of(heading: str, lines: Sequence[str]) -> str | None:
    return "\n".join([heading, *(f"- {line}" for line in lines)]) if lines else None
