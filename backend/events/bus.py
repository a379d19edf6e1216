"""Live events (conversation created, message created, status changed, handoff requested,
a customer's feedback on a reply, an agent's private note, a customer's rating of a resolved
conversation).

Published after the change is committed; every app process subscribed to the same Redis
channel sees every event, so an agent's stream works whichever process serves it.
"""

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from redis.asyncio import Redis
from redis.asyncio.client import PubSub

from backend.db import utcnow

logger = logging.getLogger(__name__)

CONVERSATION_CREATED = "conversation.created"
MESSAGE_CREATED = "message.created"
STATUS_CHANGED = "conversation.status_changed"
HANDOFF_REQUESTED = "conversation.handoff_requested"
MESSAGE_FEEDBACK = "message.feedback"  # a customer rated a bot reply, changed or took back the rating
# An agent added a private note: agents' streams and webhooks get its id and author, never its
# text (read it through the agents' API); customers' streams never get it.
NOTE_CREATED = "note.created"
CONVERSATION_RATED = "conversation.rated"  # a customer rated their resolved conversation, 1 to 5
# The customer left an e-mail address for the team (away at the handoff); customers' streams never get it.
CONTACT_GIVEN = "conversation.contact_given"
EVENT_TYPES = (
    CONVERSATION_CREATED,
    MESSAGE_CREATED,
    STATUS_CHANGED,
    HANDOFF_REQUESTED,
    MESSAGE_FEEDBACK,
    NOTE_CREATED,
    CONVERSATION_RATED,
    CONTACT_GIVEN,
)
# Between app processes only (not streamed to agents, not sent to webhooks).
PROMPTS_RELOADED = "prompts.reloaded"


@dataclass(frozen=True)
class Event:
    type: str
    conversation_id: str
    data: dict[str, Any]
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    created_at: str = field(default_factory=lambda: utcnow().isoformat())

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> "Event":
        return cls(**json.loads(raw))

    def sse(self) -> dict[str, str]:
        """As a server-sent event on an agent's or a customer's live stream."""
        return {"event": self.type, "id": self.id, "data": self.to_json()}


class EventBus(Protocol):
    async def publish(self, event: Event) -> None: ...

    async def subscribe(self) -> AsyncIterator[Event]:
        """Returns once subscribed: every event published afterwards reaches the iterator."""
        ...

    async def close(self) -> None: ...


class MemoryEventBus:
    """One process: subscribers are queues."""

    def __init__(self) -> None:
        self._subscribers: set[asyncio.Queue[Event]] = set()

    async def publish(self, event: Event) -> None:
        for queue in self._subscribers:
            queue.put_nowait(event)

    async def subscribe(self) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._subscribers.add(queue)
        return self._listen(queue)

    async def _listen(self, queue: "asyncio.Queue[Event]") -> AsyncIterator[Event]:
        try:
            while True:
                yield await queue.get()
        finally:
            self._subscribers.discard(queue)

    async def close(self) -> None:
        self._subscribers.clear()


class RedisEventBus:
    """Every process: one Redis pub/sub channel."""

    def __init__(self, redis: Redis, *, channel: str):
        self._redis = redis  # the process's client, closed by its owner
        self._channel = channel

    async def publish(self, event: Event) -> None:
        await self._redis.publish(self._channel, event.to_json())

    async def subscribe(self) -> AsyncIterator[Event]:
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(self._channel)
        return self._listen(pubsub)

    async def _listen(self, pubsub: PubSub) -> AsyncIterator[Event]:
        try:
            async for message in pubsub.listen():
                if message["type"] == "message":
                    yield Event.from_json(message["data"])
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def close(self) -> None:
        pass


async def publish_all(bus: EventBus, events: list[Event]) -> None:
    """Publish after commit; a bus failure loses a live notification, never data."""
    for event in events:
        try:
            await bus.publish(event)
        except Exception as error:
            logger.warning("could not publish %s: %s", event.type, error)
