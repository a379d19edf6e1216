"""The chat turn, top to bottom, and the conversation lifecycle around it."""

import asyncio
import hashlib
import hmac
import logging
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.config import Settings
from backend.conversations import repository as repo
from backend.conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    MessageRole,
    MessageStatus,
)
from backend.conversations.session_store import Session, SessionStore
from backend.engine.vllm_engine import Engine, GenerationResult
from backend.errors import (
    Conflict,
    ContextWindowFull,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
)
from backend.prompting.assembler import BotPrefix, PromptAssembler
from backend.prompting.bots import Bot, BotDefinitionError

logger = logging.getLogger(__name__)

MIN_REPLY_TOKENS = 16  # below this, a reply would be cut off before it says anything
TURN_LOCK_TTL_S = 600


def hash_token(token: str) -> str:
    # Tokens are 256-bit random strings: a plain digest is enough, and it is constant-time compared.
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class LiveBot:
    definition: Bot
    prefix: BotPrefix
    bot_id: int
    prompt_version_id: int


@dataclass
class Turn:
    """An accepted message; its reply streams through `events` while it is generated."""

    user_message_id: int
    reply_message_id: int
    max_tokens: int
    message_count: int  # the conversation's count once the reply is stored
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    async def events(self) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        while (item := await self.queue.get()) is not None:
            yield item


@dataclass
class NewConversation:
    conversation: Conversation
    customer_token: str
    greeting: str


class ChatService:
    def __init__(
        self,
        *,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        store: SessionStore,
        assembler: PromptAssembler,
        bots: dict[str, Bot],
    ):
        self.settings = settings
        self.sessions = sessions
        self.store = store
        self.assembler = assembler
        self.definitions = bots
        self.bots: dict[str, LiveBot] = {}
        self.engine: Engine | None = None
        self.ready = False
        self._prefix_by_version: dict[int, tuple[int, ...]] = {}
        self._turn_tasks: set[asyncio.Task] = set()

    # -- start-up ---------------------------------------------------------------------

    async def sync_bots(self) -> None:
        """Record each bot and the version of its fixed prefix in the database."""
        async with self.sessions() as db:
            for slug, definition in self.definitions.items():
                prefix = self.assembler.bot_prefix(definition)
                bot_row, version = await repo.upsert_bot_version(db, definition, prefix)
                self.bots[slug] = LiveBot(definition, prefix, bot_row.id, version.id)
                self._prefix_by_version[version.id] = prefix.token_ids
            await db.commit()

    async def attach_engine(self, engine: Engine, *, warm_up: bool = True) -> None:
        """Run every bot's fixed prefix once so the first customer already hits the cache."""
        if warm_up:
            for live in self.bots.values():
                async for _ in engine.stream(
                    live.prefix.token_ids,
                    max_tokens=1,
                    request_id=f"warmup-{live.prefix.bot_slug}-{uuid.uuid4().hex}",
                ):
                    pass
        self.engine = engine
        self.ready = True

    async def drain(self) -> None:
        """Let replies being generated finish and be stored before shutdown."""
        if self._turn_tasks:
            await asyncio.wait(self._turn_tasks, timeout=30)

    # -- conversations ----------------------------------------------------------------

    async def start_conversation(self, bot_slug: str, context: dict[str, Any] | None) -> NewConversation:
        live = self.bots.get(bot_slug)
        if live is None:
            raise NotFound(f"unknown bot {bot_slug!r}; known bots: {', '.join(sorted(self.bots))}")
        try:
            context_ids = self.assembler.customer_context(live.definition, context)
        except BotDefinitionError as error:
            raise InvalidInput(str(error)) from error
        if len(live.prefix.token_ids) + len(context_ids) + MIN_REPLY_TOKENS > self.settings.max_model_len:
            raise PayloadTooLarge("the customer context does not fit in the model's context window")
        token = secrets.token_urlsafe(32)
        conversation = Conversation(
            id=str(uuid.uuid4()),
            bot_id=live.bot_id,
            prompt_version_id=live.prompt_version_id,
            customer_token_hash=hash_token(token),
            context=context or None,
            context_token_ids=context_ids,
            status=ConversationStatus.BOT,
            message_count=0,
        )
        async with self.sessions() as db:
            db.add(conversation)
            await db.commit()
        return NewConversation(conversation, token, live.definition.greeting)

    async def authorize(self, conversation_id: str, customer_token: str | None) -> Conversation:
        """The conversation, if this customer token opens it."""
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if not customer_token or not hmac.compare_digest(
            hash_token(customer_token), conversation.customer_token_hash
        ):
            raise Forbidden("this customer token does not open this conversation")
        return conversation

    async def greeting_of(self, conversation: Conversation) -> str:
        async with self.sessions() as db:
            version = await repo.get_prompt_version(db, conversation.prompt_version_id)
        return version.greeting if version else ""

    async def messages(self, conversation_id: str) -> list[Message]:
        async with self.sessions() as db:
            return await repo.list_messages(db, conversation_id)

    # -- the chat turn ----------------------------------------------------------------

    def validate_text(self, text: str) -> str:
        text = text.strip()
        if not text:
            raise InvalidInput("the message is empty")
        if len(text) > self.settings.max_message_chars:
            raise PayloadTooLarge(
                f"the message has {len(text)} characters; the limit is {self.settings.max_message_chars}"
            )
        return text

    async def send_message(self, conversation_id: str, text: str) -> Turn:
        """Accept a customer message (stored before anything else) and start its reply."""
        text = self.validate_text(text)
        if not self.ready or self.engine is None:
            raise ServiceUnavailable(
                "the model is still loading; try again shortly", headers={"Retry-After": "10"}
            )
        if not await self._lock_turn(conversation_id):
            raise Conflict("a reply to this conversation is still being written; wait for it")
        try:
            turn, prompt, context_after_user = await self._accept(conversation_id, text)
        except BaseException:
            await self._unlock_turn(conversation_id)
            raise
        task = asyncio.create_task(self._generate(conversation_id, turn, prompt, context_after_user))
        self._turn_tasks.add(task)
        task.add_done_callback(self._turn_tasks.discard)
        return turn

    async def _accept(self, conversation_id: str, text: str) -> tuple[Turn, list[int], list[int]]:
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
            if conversation is None:
                raise NotFound(f"no conversation {conversation_id!r}")
            if conversation.status != ConversationStatus.BOT:
                raise Conflict(f"this conversation is {conversation.status.value}; the bot does not reply")
            context = await self.context_ids(db, conversation)
            user_ids = self.assembler.user_message(text)
            prompt = self.assembler.prompt_for_reply([*context, *user_ids])
            room = self.settings.max_model_len - len(prompt)
            if room < MIN_REPLY_TOKENS:
                raise ContextWindowFull(
                    f"this conversation has reached the model's context window "
                    f"({self.settings.max_model_len} tokens); please start a new conversation"
                )
            seq = conversation.message_count
            user = Message(
                conversation_id=conversation_id,
                seq=seq + 1,
                role=MessageRole.USER,
                status=MessageStatus.COMPLETE,
                text=text,
                token_ids=user_ids,
            )
            reply = Message(
                conversation_id=conversation_id,
                seq=seq + 2,
                role=MessageRole.ASSISTANT,
                status=MessageStatus.GENERATING,
                text="",
                token_ids=[],
                prompt_tokens=len(prompt),
            )
            conversation.message_count = seq + 2
            db.add_all([user, reply])
            await db.commit()
        turn = Turn(user.id, reply.id, min(self.settings.max_reply_tokens, room), seq + 2)
        return turn, prompt, [*context, *user_ids]

    async def _generate(
        self, conversation_id: str, turn: Turn, prompt: list[int], context_after_user: list[int]
    ) -> None:
        """Runs apart from the HTTP request: a customer who disconnects still gets the reply stored."""
        emit = turn.queue.put_nowait
        emit(
            ("accepted", {"user_message_id": turn.user_message_id, "reply_message_id": turn.reply_message_id})
        )
        try:
            result: GenerationResult | None = None
            async for item in self.engine.stream(
                prompt, max_tokens=turn.max_tokens, request_id=f"reply-{turn.reply_message_id}"
            ):
                if isinstance(item, GenerationResult):
                    result = item
                else:
                    emit(("token", {"text": item.text}))
            assert result is not None, "every engine stream ends with a GenerationResult"
            reply_ids = self.assembler.reply(result.token_ids)
            await self._finish_reply(turn.reply_message_id, result, reply_ids)
            await self._remember(
                conversation_id, Session([*context_after_user, *reply_ids], turn.message_count, result.text)
            )
            emit(
                (
                    "done",
                    {
                        "message_id": turn.reply_message_id,
                        "text": result.text,
                        "prompt_tokens": result.prompt_tokens,
                        "cached_tokens": result.cached_tokens,
                        "completion_tokens": len(result.token_ids),
                        "ttft_ms": round(result.ttft_s * 1000, 1),
                        "total_ms": round(result.total_s * 1000, 1),
                        "finish_reason": result.finish_reason,
                    },
                )
            )
        except Exception as error:
            logger.exception("reply %s failed", turn.reply_message_id)
            await self._fail_reply(turn.reply_message_id, str(error))
            emit(
                (
                    "error",
                    {
                        "message_id": turn.reply_message_id,
                        "code": "generation_failed",
                        "detail": "the reply could not be generated; your message is saved, "
                        "please send it again",
                    },
                )
            )
        finally:
            await self._unlock_turn(conversation_id)
            emit(None)

    async def _finish_reply(self, message_id: int, result: GenerationResult, reply_ids: list[int]) -> None:
        async with self.sessions() as db:
            reply = await repo.get_message(db, message_id)
            reply.status = MessageStatus.COMPLETE
            reply.text = result.text
            reply.token_ids = reply_ids
            reply.prompt_tokens = result.prompt_tokens
            reply.cached_tokens = result.cached_tokens
            reply.completion_tokens = len(result.token_ids)
            reply.ttft_ms = result.ttft_s * 1000
            reply.total_ms = result.total_s * 1000
            reply.finish_reason = result.finish_reason
            await db.commit()

    async def _fail_reply(self, message_id: int, error: str) -> None:
        try:
            async with self.sessions() as db:
                reply = await repo.get_message(db, message_id)
                reply.status = MessageStatus.FAILED
                reply.error = error[:2000]
                await db.commit()
        except Exception:
            logger.exception("could not mark reply %s as failed", message_id)

    # -- the hot session --------------------------------------------------------------

    async def context_ids(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        """Everything the model has seen in this conversation, from Redis or else Postgres."""
        session = await self._recall(conversation.id)
        if session is not None and session.message_count == conversation.message_count:
            return session.token_ids
        rebuilt = await self.rebuild_context_ids(db, conversation)
        await self._remember(conversation.id, Session(rebuilt, conversation.message_count))
        return rebuilt

    async def rebuild_context_ids(self, db: AsyncSession, conversation: Conversation) -> list[int]:
        prefix = self._prefix_by_version.get(conversation.prompt_version_id)
        if prefix is None:
            version = await repo.get_prompt_version(db, conversation.prompt_version_id)
            prefix = self._prefix_by_version[version.id] = tuple(version.prefix_token_ids)
        ids = [*prefix, *conversation.context_token_ids]
        for message_ids in await repo.list_message_token_ids(db, conversation.id):
            ids.extend(message_ids)
        return ids

    async def _recall(self, conversation_id: str) -> Session | None:
        try:
            return await self.store.get(conversation_id)
        except Exception as error:  # the store is a cache: fall back to Postgres
            logger.warning("session store read failed (%s); rebuilding from the database", error)
            return None

    async def _remember(self, conversation_id: str, session: Session) -> None:
        try:
            await self.store.put(conversation_id, session)
        except Exception as error:
            logger.warning("session store write failed (%s); the next turn rebuilds it", error)

    async def _lock_turn(self, conversation_id: str) -> bool:
        try:
            return await self.store.try_lock_turn(conversation_id, TURN_LOCK_TTL_S)
        except Exception as error:
            raise ServiceUnavailable(
                "the session store is unavailable; try again shortly", headers={"Retry-After": "5"}
            ) from error

    async def _unlock_turn(self, conversation_id: str) -> None:
        try:
            await self.store.unlock_turn(conversation_id)
        except Exception as error:
            logger.warning("could not release the turn lock of %s: %s", conversation_id, error)
