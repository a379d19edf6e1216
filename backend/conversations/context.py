"""A conversation's model context: token ids from Redis (hot) or rebuilt from Postgres.

Also the per-conversation turn lock, so appends (bot replies, customer and agent
messages) happen one at a time and in order, whichever app process makes them.
"""

import asyncio
import logging
import time

from sqlalchemy.ext.asyncio import AsyncSession

from backend.conversations import repository as repo
from backend.conversations.models import Conversation
from backend.conversations.session_store import Session, SessionStore
from backend.errors import Conflict, ServiceUnavailable

logger = logging.getLogger(__name__)


class ConversationContext:
    def __init__(self, store: SessionStore, *, lock_ttl_s: int = 60):
        self.store = store
        self.lock_ttl_s = lock_ttl_s
        self._prefix_by_version: dict[int, tuple[int, ...]] = {}

    def know_prefix(self, version_id: int, token_ids: tuple[int, ...]) -> None:
        self._prefix_by_version[version_id] = token_ids

    async def ids(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        """Everything the model has seen in this conversation (no generation prompt)."""
        session = await self._recall(conversation.id)
        if session is not None and session.message_count == conversation.message_count:
            return session.token_ids
        rebuilt = await self.rebuild(db, conversation)
        await self.remember(conversation.id, Session(rebuilt, conversation.message_count))
        return rebuilt

    async def rebuild(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        prefix = self._prefix_by_version.get(conversation.prompt_version_id)
        if prefix is None:
            version = await repo.get_prompt_version(db, conversation.prompt_version_id)
            prefix = self._prefix_by_version[version.id] = tuple(version.prefix_token_ids)
        ids = [*prefix, *conversation.context_token_ids]
        for message_ids in await repo.list_message_token_ids(db, conversation.id):
            ids.extend(message_ids)
        return ids

    async def remember(self, conversation_id: str, session: Session) -> None:
        try:
            await self.store.put(conversation_id, session)
        except Exception as error:
            logger.warning("session store write failed (%s); the next turn rebuilds it", error)

    async def _recall(self, conversation_id: str) -> Session | None:
        try:
            return await self.store.get(conversation_id)
        except Exception as error:  # the store is a cache: fall back to Postgres
            logger.warning("session store read failed (%s); rebuilding from the database", error)
            return None

    async def lock(self, conversation_id: str, *, wait_s: float = 0.0, busy_message: str) -> None:
        """Take the conversation's turn lock, waiting up to `wait_s`; Conflict if still busy."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if await self.store.try_lock_turn(conversation_id, self.lock_ttl_s):
                    return
            except Exception as error:
                raise ServiceUnavailable(
                    "the session store is unavailable; try again shortly", headers={"Retry-After": "5"}
                ) from error
            if time.monotonic() >= deadline:
                raise Conflict(busy_message)
            await asyncio.sleep(0.05)

    async def hold(self, conversation_id: str) -> None:
        """Keep the turn lock while a reply is written (run as a task; cancel it to stop)."""
        while True:
            await asyncio.sleep(self.lock_ttl_s / 3)
            try:
                await self.store.extend_turn(conversation_id, self.lock_ttl_s)
            except Exception as error:
                logger.warning("could not extend the turn lock of %s: %s", conversation_id, error)

    async def unlock(self, conversation_id: str) -> None:
        try:
            await self.store.unlock_turn(conversation_id)
        except Exception as error:
            logger.warning("could not release the turn lock of %s: %s", conversation_id, error)
