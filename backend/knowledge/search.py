"""Which of a bot's articles match a customer's question, when they are not all in its prefix."""

from collections.abc import Collection

from backend.knowledge.articles import Article, Knowledge
from backend.retrieval.index import LexicalIndex

RELATIVE_FLOOR = 0.5  # of the best match's score, for the others brought with it


class ArticleSearch:
    def __init__(self, knowledge: Knowledge, language: str):
        self.knowledge = knowledge
        # The title counts twice: it names what the article is about in the fewest words.
        passages = [f"{a.title}\n{a.title}\n{a.text}" for a in knowledge]
        self._index = LexicalIndex(passages, language)

    def best(self, text: str, count: int) -> list[Article]:
        """The `count` articles that match `text` best, best first."""
        scores = self._index.scores(text)
        ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
        return [self.knowledge.articles[i] for i in ranked[:count]]

    def new_matches(self, question: str, count: int, already: Collection[str]) -> list[Article]:
        """Up to `count` best matches for `question` that the conversation has not been given
        yet, in canonical order: given once, an article stays where it was."""
        if count <= 0:
            return []
        scores = self._index.scores(question)
        articles = self.knowledge.articles
        candidates = (i for i, score in enumerate(scores) if score > 0 and articles[i].id not in already)
        ranked = sorted(candidates, key=lambda i: (-scores[i], i))[:count]
        # A far weaker match (one common word) is noise beside a clear one: leave it out.
        kept = [i for i in ranked if scores[i] >= RELATIVE_FLOOR * scores[ranked[0]]]
        return [articles[i] for i in sorted(kept)]
