"""The lines of a bot's policy that best match a customer's message, repeated just before it.

The whole policy is in the bot's cached prefix, but a small model answers better when the
few lines that settle a question stand right next to it. They go in a short system note
before the customer's message (the message itself stays as the customer wrote it), are
computed once, and are kept with the message's token ids, so later turns still start with
exactly the ids of earlier ones.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from backend.knowledge.articles import Knowledge
from backend.retrieval.index import LexicalIndex

DEFAULT_HEADINGS = {
    "en": "The policy lines that best match the customer's next message:",
    "zh": "与顾客下一条消息最相关的政策条款：",
}
WITH_HELP_CENTER_HEADINGS = {
    "en": "The lines of the policy and help center that best match the customer's next message:",
    "zh": "与顾客下一条消息最相关的政策和帮助中心条款：",
}


@dataclass(frozen=True)
class PolicyLines:
    lines: tuple[str, ...]
    heading: str  # introduces the lines in the customer's turn, in the bot's language
    index: LexicalIndex

    @classmethod
    def of(
        cls, policy: str, language: str, heading: str | None = None, knowledge: Knowledge | None = None
    ) -> "PolicyLines":
        """Every non-empty line of a Markdown policy but its headings, and of each help-center
        article, each searched together with the heading or article title it stands under (a
        question about "warranty" finds the lines of the warranty section)."""
        lines: list[str] = []
        searched: list[str] = []
        documents = [("", policy)] + [(article.title, article.text) for article in knowledge or ()]
        for title, document in documents:
            section = title
            for raw in document.splitlines():
                line = raw.strip()
                if line.startswith("#"):
                    section = line.lstrip("#").strip()
                elif line:
                    text = line.removeprefix("- ").removeprefix("* ").strip()
                    lines.append(text)
                    searched.append(f"{section}\n{text}")
        if heading is None:
            headings = WITH_HELP_CENTER_HEADINGS if knowledge else DEFAULT_HEADINGS
            heading = headings.get(language.split("-")[0], headings["en"])
        return cls(tuple(lines), heading, LexicalIndex(searched, language))

    def matching(self, message: str, count: int) -> list[str]:
        return [self.lines[i] for i in self.index.best(message, count)]

    def note(self, message: str, count: int) -> str | None:
        """What the model is told just before the customer's message: its best lines."""
        return note_of(self.heading, self.matching(message, count))


def note_of(heading: str, lines: Sequence[str]) -> str | None:
    return "\n".join([heading, *(f"- {line}" for line in lines)]) if lines else None
