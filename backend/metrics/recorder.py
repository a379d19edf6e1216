"""Records what happens into the shared store and Prometheus; never in the way of a chat turn."""

import asyncio
import logging
import os
import socket
from collections.abc import Callable

from backend.metrics.prometheus import checks_shed, observe_reply
from backend.metrics.store import MetricsStore, Reply

# vLLM's counters since its engine started, and the fields their growth adds to a bucket.
ENGINE_COUNTERS = {
    "prefix_cache_queries": "engine:pq",
    "prefix_cache_hits": "engine:ph",
    "draft_tokens": "engine:dt",
    "accepted_tokens": "engine:at",
}


def engine_fields(now: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """What one engine sample adds to a bucket: the counters' growth since the sample `before`
    (all of a counter that went back: a new engine started from zero), and the gauges as read,
    summed with the number of samples so that a window's mean can be taken."""
    fields = {"engine:samples": 1.0}
    for counter, field in ENGINE_COUNTERS.items():
        value, previous = now.get(counter, 0), before.get(counter, 0)
        fields[field] = value - previous if value >= previous else value
    fields["engine:kv_ppm"] = round(now.get("kv_cache_usage", 0) * 1_000_000)
    fields["engine:running"] = now.get("running", 0)
    fields["engine:waiting"] = now.get("waiting", 0)
    return fields


logger = logging.getLogger(__name__)


class Metrics:
    def __init__(self, store: MetricsStore):
        self.store = store
        # One engine per process: its gauges are keyed by process, whatever app objects share it.
        self.process = f"{socket.gethostname()}:{os.getpid()}"

    async def reply(self, reply: Reply) -> None:
        observe_reply(reply)
        try:
            await self.store.record_reply(reply)
        except Exception as error:
            logger.warning("metrics store write failed: %s", error)

    async def check_shed(self, check: str) -> None:
        checks_shed.labels(check).inc()
        try:
            await self.store.record_engine({f"shed:{check}": 1})
        except Exception as error:
            logger.warning("metrics store write failed: %s", error)

    async def conversation_active(self, conversation_id: str) -> None:
        try:
            await self.store.touch_conversation(conversation_id)
        except Exception as error:
            logger.warning("metrics store write failed: %s", error)

    async def sample_engine(self, current_engine: Callable[[], object], interval_s: float = 2.0) -> None:
        """Publish this process's engine figures so the admin page can add up all processes:
        the gauges as they are now, and into the time buckets what changed since the last sample."""
        before: dict[str, float] = {}
        while True:
            stats = getattr(current_engine(), "stats", None)
            if stats is not None:
                now = stats.as_dict()
                try:
                    await self.store.write_gauges(self.process, now)
                    await self.store.record_engine(engine_fields(now, before))
                    before = now
                except Exception as error:
                    logger.warning("engine gauges not published: %s", error)
            await asyncio.sleep(interval_s)
