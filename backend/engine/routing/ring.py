"""Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam, 2018).

A key goes to the first replica clockwise from its hash whose load is under
`ceil(load_factor * (total + 1) / n)`: the same replica for the same key while loads are
even, and adding or removing a replica moves only the keys that hashed near it.
"""

import hashlib
import math
from bisect import bisect
from collections.abc import Mapping, Sequence
from functools import lru_cache

VIRTUAL_NODES = 64  # points per replica: spreads keys evenly over a few replicas


def point(text: str) -> int:
    """A hash every process computes alike (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


@lru_cache(maxsize=64)
def _ring(replicas: tuple[str, ...]) -> tuple[list[int], list[str]]:
    points = sorted((point(f"{replica}#{i}"), replica) for replica in replicas for i in range(VIRTUAL_NODES))
    return [p for p, _ in points], [r for _, r in points]


def capacity(loads: Mapping[str, float], replicas: Sequence[str], load_factor: float) -> int:
    total = sum(loads.get(r, 0) for r in replicas)
    return max(1, math.ceil(load_factor * (total + 1) / len(replicas)))


def lookup(key: str, replicas: Sequence[str], loads: Mapping[str, float], load_factor: float) -> str:
    """The replica for `key` among `replicas`, skipping any at or over its bounded load."""
    if not replicas:
        raise ValueError("no replica to choose from")
    points, owners = _ring(tuple(sorted(set(replicas))))
    limit = capacity(loads, replicas, load_factor)
    start = bisect(points, point(key))
    for step in range(len(points)):
        owner = owners[(start + step) % len(points)]
        if loads.get(owner, 0) < limit:
            return owner
    return min(replicas, key=lambda r: loads.get(r, 0))  # unreachable while load_factor >= 1
