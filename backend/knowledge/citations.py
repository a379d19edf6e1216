"""The articles a reply cites: `[article-id]` markers the model writes, checked against the
articles of the conversation's help center. A marker of an id it does not have is dropped;
every marker is taken out of the text the customer reads (the token ids stay as generated)."""

import re
from dataclasses import dataclass

from backend.knowledge.articles import Knowledge

_MARKER = re.compile(r"\s*\[([a-z0-9][a-z0-9-]{0,39})\]")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?。，；：！？])")


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"id": self.id, "title": self.title, "url": self.url}


def cited(text: str, knowledge: Knowledge) -> tuple[str, list[Source]]:
    """The reply's text without its markers, and the known articles it cited, in citing order."""
    if not knowledge:
        return text, []
    sources: list[Source] = []
    for article_id in _MARKER.findall(text):
        article = knowledge.get(article_id)
        if article is not None and all(s.id != article_id for s in sources):
            sources.append(Source(article.id, article.title, article.url))
    ids = {a.id for a in knowledge}
    clean = _MARKER.sub(lambda m: "" if m.group(1) in ids or _looks_like_id(m.group(1)) else m.group(0), text)
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", clean).strip(), sources


def _looks_like_id(token: str) -> bool:
    """A made-up citation (`[returns-faq]`) rather than bracketed prose: it has a hyphen."""
    return "-" in token
