"""What other app processes announce, dispatched to this process's handlers.

Resubscribes when the bus drops (Redis restarted), backing off up to 10 s. A failing
handler is logged; it never stops the others.
"""

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable

from backend.events.bus import Event, EventBus

logger = logging.getLogger(__name__)

Handler = Callable[[Event], Awaitable[None]]


class EventListener:
    def __init__(self, bus: EventBus):
        self._bus = bus
        self._handlers: dict[str, list[Handler]] = defaultdict(list)

    def on(self, event_type: str, handler: Handler) -> None:
        self._handlers[event_type].append(handler)

    async def run(self) -> None:
        delay_s = 0.5
        while True:
            try:
                async for event in await self._bus.subscribe():
                    delay_s = 0.5
                    await self._dispatch(event)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.warning("event bus unavailable (%s); resubscribing in %.1f s", error, delay_s)
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, 10.0)

    async def _dispatch(self, event: Event) -> None:
        for handler in self._handlers.get(event.type, ()):
            try:
                await handler(event)
            except Exception:
                logger.exception("handling %s failed", event.type)
