"""BM25 over a fixed list of passages, answering in the passages' own order.

Okapi BM25 with Lucene's inverse document frequency, which stays positive in a corpus of a
few dozen lines (the classic formula, as rank-bm25 has it, scores a term found in half of
them as zero). Written out here: bm25s imports numba when it is installed, as it is beside
vLLM, and vLLM's CPU worker then fails to start.
"""

import math
from collections import Counter
from collections.abc import Sequence

from backend.retrieval.terms import terms

K1 = 1.2  # how fast repeating a term stops adding to a passage's score
B = 0.75  # how much a long passage is discounted


class LexicalIndex:
    def __init__(self, passages: Sequence[str], language: str):
        self.language = language
        self._counts = [Counter(terms(passage, language)) for passage in passages]
        self._lengths = [sum(counts.values()) for counts in self._counts]
        self._mean_length = max(1.0, sum(self._lengths) / len(passages)) if passages else 1.0
        found_in = Counter(term for counts in self._counts for term in counts)
        n = len(passages)
        self._idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in found_in.items()}

    def scores(self, query: str) -> list[float]:
        query_terms = terms(query, self.language)
        pairs = zip(self._counts, self._lengths, strict=True)
        return [self._score(counts, length, query_terms) for counts, length in pairs]

    def best(self, query: str, count: int) -> list[int]:
        """The positions of the `count` passages that match `query` best (any match at all),
        in ascending order, so that the same matches always come out the same way."""
        if count <= 0:
            return []
        scores = self.scores(query)
        ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
        return sorted(ranked[:count])

    def _score(self, counts: Counter[str], length: int, query_terms: list[str]) -> float:
        norm = K1 * (1 - B + B * length / self._mean_length)
        return sum(
            self._idf[term] * counts[term] * (K1 + 1) / (counts[term] + norm)
            for term in query_terms
            if term in counts
        )
