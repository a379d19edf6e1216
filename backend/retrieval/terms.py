"""A text's search terms in any language: its words without the language's stop words
("the", "do", "我", "的"), stemmed; for scripts written without spaces between words
(Chinese, Japanese, Korean), each character and each pair of neighbouring characters, as
Lucene's CJK bigram analyzer does (single-character stop words dropped, pairs kept)."""

import re
import threading
import unicodedata
from functools import cache

import snowballstemmer
import stopwords
from snowballstemmer.basestemmer import BaseStemmer

from backend.languages import primary_language

_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUNS = re.compile(rf"[{_UNSPACED}]+|[^\W_{_UNSPACED}]+")
_UNSPACED_RUN = re.compile(rf"[{_UNSPACED}]+")

# ISO 639-1 codes of the languages Snowball stems.
_SNOWBALL = {
    "ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "es": "spanish", "eu": "basque", "fi": "finnish", "fr": "french",
    "ga": "irish", "hi": "hindi", "hu": "hungarian", "hy": "armenian", "id": "indonesian",
    "it": "italian", "lt": "lithuanian", "nb": "norwegian", "ne": "nepali", "nl": "dutch",
    "nn": "norwegian", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "yi": "yiddish",
}  # fmt: skip


@cache
def _stop_words(language: str) -> frozenset[str]:
    return frozenset(stopwords.safe_get_stopwords(primary_language(language)))


# A Snowball stemmer keeps the word it is stemming in itself, so one shared between threads
# mixes their words up (or fails); turns build their notes on worker threads, several at once.
_per_thread = threading.local()


def _stemmer(language: str) -> BaseStemmer | None:
    stemmers: dict[str, BaseStemmer | None] = _per_thread.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        name = _SNOWBALL.get(primary_language(language))
        stemmers[language] = snowballstemmer.stemmer(name) if name in snowballstemmer.algorithms() else None
    return stemmers[language]


def terms(text: str, language: str) -> list[str]:
    """The terms of `text` for a search in `language` (a BCP 47 tag such as "en" or "zh-CN")."""
    stemmer, stop = _stemmer(language), _stop_words(language)
    found: list[str] = []
    for run in _RUNS.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _UNSPACED_RUN.fullmatch(run):
            found += (character for character in run if character not in stop)
            found += (run[i : i + 2] for i in range(len(run) - 1))
        elif run in stop:
            continue
        elif stemmer is not None and not run.isdigit():
            found.append(stemmer.stemWord(run))
        else:
            found.append(run)
    return found
