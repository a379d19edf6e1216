"""Two rankings of the same passages made one: reciprocal rank fusion.

Each ranking gives a passage 1 / (K + its rank); the sums order the passages. Only ranks
count, so scores on different scales (BM25's sums, cosines) need no weighing against each
other, and a passage ranked high by either stays near the top. K = 60 as in Cormack, Clarke
and Büttcher (SIGIR 2009), and as search engines that fuse rankings use it.
"""

from collections.abc import Sequence

K = 60


def fused(*rankings: Sequence[float | None]) -> list[float]:
    """The fused score of each passage, given each ranking's scores of them. A ranking that
    did not find a passage (None) ranks it after all it found, tied with the others it missed."""
    total = [0.0] * len(rankings[0])
    for scores in rankings:
        found = {i: score for i, score in enumerate(scores) if score is not None}
        rank = {i: n for n, i in enumerate(sorted(found, key=lambda i: (-found[i], i)), 1)}
        for i in range(len(total)):
            total[i] += 1 / (K + rank.get(i, len(found) + 1))
    return total
