"""Fixed latency buckets: histograms from many processes add up, and percentiles come from the sum."""

import bisect

# Upper bounds in milliseconds, roughly log-spaced; the last bucket is open-ended.
BOUNDS_MS = (
    5,
    10,
    20,
    35,
    50,
    75,
    100,
    150,
    200,
    300,
    500,
    750,
    1000,
    1500,
    2000,
    3000,
    5000,
    7500,
    10_000,
    15_000,
    20_000,
    30_000,
    60_000,
    120_000,
)


def bucket_of(value_ms: float) -> int:
    return bisect.bisect_left(BOUNDS_MS, value_ms)


def percentile(counts: list[int], share: float) -> float | None:
    """The `share` quantile of a bucketed distribution, interpolated inside its bucket."""
    total = sum(counts)
    if total == 0:
        return None
    rank = share * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            low = BOUNDS_MS[index - 1] if index else 0
            high = BOUNDS_MS[index] if index < len(BOUNDS_MS) else BOUNDS_MS[-1] * 2
            return round(low + (high - low) * (rank - seen) / count, 1)
        seen += count
    return float(BOUNDS_MS[-1])
