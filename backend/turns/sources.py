"""Which help-center article a reply used, when it did not say: a constrained choice the model
makes at the end of the conversation's own cached context, never free text.

The replies' own `[id]` citations come first (knowledge/citations.py). A small model often
leaves them out, so the articles that match the question and the reply best are offered as a
numbered list, best match first, and the likeliest of the model's next tokens "1".."n" names
the source. The number always names an article of the conversation's help center, so what the
customer sees as a source can be verified; it costs a short prefill after the reply, never
its first token. (Offering "none" as well made the 0.5B default model answer "none" for 21 of
24 answered questions; without it, its choice follows the list's order: docs/quality.md.)
"""

import logging
import math
from collections.abc import Sequence

from backend.bots.registry import VersionKnowledge
from backend.engine.interface import Engine
from backend.knowledge.citations import Source
from backend.languages import in_language_or_english
from backend.prompting.chat_format import ChatFormat

logger = logging.getLogger(__name__)

CANDIDATES = 3  # articles offered; single-digit labels
QUESTIONS = {
    "en": "Which help-center article was the last answer based on? Reply with its number only.",
    "zh": "上面的回答依据的是哪一篇帮助中心文章？只回复它的编号。",
    "es": "¿En qué artículo del centro de ayuda se basó la última respuesta? Responda solo con su número.",
    "fr": "Sur quel article du centre d'aide la dernière réponse s'appuyait-elle ? Répondez uniquement par "
    "son numéro.",
    "de": "Auf welchem Artikel des Hilfecenters beruhte die letzte Antwort? Antworten Sie "
    "nur mit seiner Nummer.",
    "pt": "Em qual artigo da central de ajuda a última resposta se baseou? Responda apenas "
    "com o número dele.",
    "it": "Su quale articolo del centro assistenza si basava l'ultima risposta? Risponda "
    "solo con il suo numero.",
}


class SourcePicker:
    def __init__(self, chat_format: ChatFormat):
        self.format = chat_format
        self.labels = [_single_token(chat_format, str(n)) for n in range(1, CANDIDATES + 1)]

    async def pick(
        self,
        engine: Engine,
        known: VersionKnowledge,
        context_ids: Sequence[int],
        question: str,
        reply: str,
        *,
        request_id: str,
        cache_salt: str | None,
        affinity_key: str | None,
    ) -> list[Source]:
        """The one article the model says the reply used, among the best matches (none if no
        article matches at all, or the model gives none of the numbers any weight)."""
        if known.search is None or None in self.labels or not reply.strip():
            return []
        candidates = known.search.best(f"{question}\n{reply}", CANDIDATES)
        if not candidates:
            return []
        ask = in_language_or_english(QUESTIONS, known.language)
        listed = "\n".join(f"{n}. {article.title}" for n, article in enumerate(candidates, 1))
        prompt = [
            *context_ids,
            *self.format.message(self.format.system, f"{ask}\n{listed}"),
            *self.format.generation_prompt,
        ]
        labels = [label for label in self.labels[: len(candidates)] if label is not None]
        read = await engine.read_labels(
            prompt, labels, request_id=request_id, cache_salt=cache_salt, affinity_key=affinity_key
        )
        best = max(range(len(labels)), key=lambda i: read.logprobs[i])
        if not math.isfinite(read.logprobs[best]):
            return []
        article = candidates[best]
        return [Source(article.id, article.title, article.url)]


def _single_token(chat_format: ChatFormat, text: str) -> int | None:
    ids = chat_format.encode_text(text)
    return ids[0] if len(ids) == 1 else None
