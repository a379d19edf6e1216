"""Records what happens into the shared store and Prometheus; never in the way of a chat turn."""

import asyncio
import logging
import os
import socket
from collections.abc import Callable

from backend.metrics.prometheus import observe_reply
from backend.metrics.store import MetricsStore, Reply

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

    async def conversation_active(self, conversation_id: str) -> None:
        try:
            await self.store.touch_conversation(conversation_id)
        except Exception as error:
            logger.warning("metrics store write failed: %s", error)

    async def sample_engine(self, current_engine: Callable[[], object], interval_s: float = 2.0) -> None:
        """Publish this process's engine figures so the admin page can add up all processes."""
        while True:
            stats = getattr(current_engine(), "stats", None)
            if stats is not None:
                try:
                    await self.store.write_gauges(self.process, stats.as_dict())
                except Exception as error:
                    logger.warning("engine gauges not published: %s", error)
            await asyncio.sleep(interval_s)
