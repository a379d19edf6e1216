"""A conversation's model context: its token ids from the session cache (hot), else rebuilt
from Postgres, token for token the same."""

import logging
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.repository import get_prompt_version
from backend.conversations import repository as repo
from backend.conversations.models import Conversation
from backend.turns.session_cache import Session, SessionCache

logger = logging.getLogger(__name__)


class ConversationContext:
    def __init__(self, store: SessionCache, known_prefix: Callable[[int], tuple[int, ...] | None]):
        self.store = store
        self._known_prefix = known_prefix  # a prompt version's prefix, if this process loaded it
        self._prefix_by_version: dict[int, tuple[int, ...]] = {}

    async def ids(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        """Everything the model has seen in this conversation (no generation prompt)."""
        session = await self._recall(conversation.id)
        if session is not None and session.message_count == conversation.message_count:
            return session.token_ids
        rebuilt = await self.rebuild(db, conversation)
        await self.remember(conversation.id, Session(rebuilt, conversation.message_count))
        return rebuilt

    async def rebuild(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        ids = [*await self._prefix(db, conversation.prompt_version_id), *conversation.context_token_ids]
        for message_ids in await repo.list_message_token_ids(db, conversation.id):
            ids.extend(message_ids)
        return ids

    async def remember(self, conversation_id: str, session: Session) -> None:
        try:
            await self.store.put(conversation_id, session)
        except Exception as error:
            logger.warning("session cache write failed (%s); the next turn rebuilds it", error)

    async def _prefix(self, db: AsyncSession, version_id: int) -> tuple[int, ...]:
        prefix = self._known_prefix(version_id) or self._prefix_by_version.get(version_id)
        if prefix is None:
            version = await get_prompt_version(db, version_id)
            if version is None:
                raise LookupError(f"prompt version {version_id} is missing")
            prefix = self._prefix_by_version[version_id] = tuple(version.prefix_token_ids)
        return prefix

    async def _recall(self, conversation_id: str) -> Session | None:
        try:
            return await self.store.get(conversation_id)
        except Exception as error:  # the store is a cache: fall back to Postgres
            logger.warning("session cache read failed (%s); rebuilding from the database", error)
            return None
