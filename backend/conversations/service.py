"""The customer's side of a conversation: start it, send messages, get the bot's replies."""

import asyncio
import dataclasses
import logging
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.config import Settings
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.context import ConversationContext
from backend.conversations.live_bots import LiveBot, LiveBots
from backend.conversations.messages import append_message, done_event, message_event
from backend.conversations.models import (
    Conversation,
    ConversationStatus,
    HandoffReason,
    Message,
    MessageRole,
    MessageStatus,
)
from backend.conversations.session_store import Session
from backend.engine.vllm_engine import Engine, GenerationResult
from backend.errors import (
    ContextWindowFull,
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    TooManyRequests,
)
from backend.events.bus import (
    CONVERSATION_CREATED,
    PROMPTS_RELOADED,
    STATUS_CHANGED,
    Event,
    EventBus,
    publish_all,
)
from backend.metrics.recorder import Metrics
from backend.metrics.store import Reply
from backend.prompting.assembler import PromptAssembler
from backend.prompting.bots import BotDefinitionError
from backend.tokens import digest, matches
from backend.webhooks.service import commit_with_deliveries

logger = logging.getLogger(__name__)

MIN_REPLY_TOKENS = 16  # below this, a reply would be cut off before it says anything


@dataclass
class Turn:
    """An accepted message; what follows it streams through `events`."""

    user_message_id: int
    generating: bool = False  # a bot reply follows (not a handoff or a wait for an agent)
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)

    @classmethod
    def settled(cls, user_message_id: int, *events: tuple[str, dict[str, Any]]) -> "Turn":
        """A turn whose events are all known already (no bot reply is being generated)."""
        turn = cls(user_message_id)
        for event in (*events, None):
            turn.queue.put_nowait(event)
        return turn

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
        context: ConversationContext,
        events: EventBus,
        assembler: PromptAssembler,
        metrics: Metrics,
    ):
        self.settings = settings
        self.sessions = sessions
        self.context = context
        self.events = events
        self.assembler = assembler
        self.metrics = metrics
        self.bots = LiveBots(
            prompts_dir=settings.prompts_dir,
            secret_key=settings.secret_key,
            sessions=sessions,
            assembler=assembler,
            context=context,
        )
        self.engine: Engine | None = None
        self.ready = False
        self._turn_tasks: set[asyncio.Task] = set()
        self._reply_slots_taken = 0
        # Replies being generated in this process, by conversation: set to stop them.
        self._stop_reply: dict[str, asyncio.Event] = {}
        self.instance_id = uuid.uuid4().hex  # tells this service's own broadcasts apart

    # -- start-up and shutdown --------------------------------------------------------

    async def sync_bots(self) -> None:
        """Record each bot and the version of its fixed prefix in the database."""
        await self.bots.start()

    async def attach_engine(self, engine: Engine, *, warm_up: bool = True) -> None:
        """Run every bot's fixed prefix once so the first customer already hits the cache."""
        if warm_up:
            await self.bots.warm(engine)
        self.engine = engine
        self.ready = True

    def detach_engine(self) -> None:
        """The engine died: refuse new turns (503) until a new one is attached."""
        self.ready = False
        self.engine = None

    async def reload_bots(self) -> dict[str, dict[str, Any]]:
        """Read prompts/ again, warming changed prefixes on this process's engine first."""
        try:
            return await self.bots.reload(self.engine)
        except BotDefinitionError as error:
            raise InvalidInput(f"prompts not reloaded: {error}") from error

    async def follow_events(self) -> None:
        """What other processes tell this one: stop a reply an agent took over; reload prompts.

        Resubscribes when the bus drops (Redis restarted), backing off up to 10 s.
        """
        delay_s = 0.5
        while True:
            try:
                async for event in await self.events.subscribe():
                    delay_s = 0.5
                    await self._on_event(event)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.warning("event bus unavailable (%s); resubscribing in %.1f s", error, delay_s)
            await asyncio.sleep(delay_s)
            delay_s = min(delay_s * 2, 10.0)

    async def _on_event(self, event: Event) -> None:
        if event.type == STATUS_CHANGED and event.data.get("status") != ConversationStatus.BOT:
            stop = self._stop_reply.get(event.conversation_id)
            if stop is not None:
                stop.set()
        elif event.type == PROMPTS_RELOADED and event.data.get("origin") != self.instance_id:
            try:
                await self.reload_bots()
            except Exception:
                logger.exception("prompts reload asked by another process failed")

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
            customer_token_hash=digest(token),
            context=context or None,
            context_token_ids=context_ids,
            status=ConversationStatus.BOT,
            message_count=0,
        )
        event = Event(CONVERSATION_CREATED, conversation.id, {"bot": bot_slug, "status": "bot"})
        async with self.sessions() as db:
            db.add(conversation)
            await commit_with_deliveries(db, [event])
        await publish_all(self.events, [event])
        return NewConversation(conversation, token, live.definition.greeting)

    async def authorize(self, conversation_id: str, customer_token: str | None) -> Conversation:
        """The conversation, if this customer token opens it."""
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        if not customer_token or not matches(customer_token, conversation.customer_token_hash):
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
        """Accept a customer message (stored before anything else), then reply or hand over."""
        text = self.validate_text(text)
        if not self.ready or self.engine is None:
            raise ServiceUnavailable(
                "the model is still loading; try again shortly", headers={"Retry-After": "10"}
            )
        if self._reply_slots_taken >= self.settings.max_pending_replies:
            # A bounded queue: beyond it, waiting would only make every reply late.
            raise TooManyRequests(
                "the assistant is busy; try again in a few seconds", headers={"Retry-After": "5"}
            )
        # Taken before the first await, so concurrent requests cannot all pass the check above.
        self._reply_slots_taken += 1
        generating = False
        try:
            await self.context.lock(
                conversation_id,
                busy_message="a reply to this conversation is still being written; wait for it",
            )
            try:
                turn = await self._accept(conversation_id, text)
            except BaseException:
                await self.context.unlock(conversation_id)
                raise
            generating = turn.generating
            return turn
        finally:
            if not generating:  # otherwise the reply gives the slot back when it ends
                self._reply_slots_taken -= 1

    async def _accept(self, conversation_id: str, text: str) -> Turn:
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
            if conversation is None:
                raise NotFound(f"no conversation {conversation_id!r}")
            await repo.fail_abandoned_replies(db, conversation_id)
            live = self._live_bot(conversation)
            events = lifecycle.reopen_by_customer(conversation)
            history = await self.context.ids(db, conversation)
            user_ids = self.assembler.user_message(text)
            prompt = self.assembler.prompt_for_reply([*history, *user_ids])
            room = self.settings.max_model_len - len(prompt)
            if room < MIN_REPLY_TOKENS:
                raise ContextWindowFull(
                    f"this conversation has reached the model's context window "
                    f"({self.settings.max_model_len} tokens); please start a new conversation"
                )
            user = append_message(conversation, MessageRole.USER, text, user_ids)
            db.add(user)
            if conversation.status == ConversationStatus.OPEN:
                return await self._wait_for_agent(db, conversation, user, [*history, *user_ids], events)
            if live.definition.handoff.asks_for_human(text):
                return await self._hand_over(db, conversation, live, user, [*history, *user_ids], events)
            reply = append_message(
                conversation, MessageRole.ASSISTANT, "", [], status=MessageStatus.GENERATING
            )
            reply.prompt_tokens = len(prompt)
            db.add(reply)
            await db.flush()
            events.append(message_event(user))
            await commit_with_deliveries(db, events)
        await publish_all(self.events, events)
        await self.metrics.conversation_active(conversation_id)
        turn = Turn(user.id, generating=True)
        self._stop_reply[conversation_id] = asyncio.Event()
        task = asyncio.create_task(
            self._generate(
                conversation,
                reply,
                turn,
                prompt,
                min(self.settings.max_reply_tokens, room),
                [*history, *user_ids],
            )
        )
        self._turn_tasks.add(task)
        task.add_done_callback(self._turn_tasks.discard)
        return turn

    def _live_bot(self, conversation: Conversation) -> LiveBot:
        live = self.bots.get(conversation.bot.slug)
        if live is None:
            raise ServiceUnavailable(f"bot {conversation.bot.slug!r} is not loaded in this app")
        return live

    async def _wait_for_agent(self, db, conversation, user, context_ids, events) -> Turn:
        """A human handles this conversation: the message waits for them; the bot stays silent."""
        await db.flush()
        events.append(message_event(user))
        await commit_with_deliveries(db, events)
        await self.context.remember(
            conversation.id, Session(context_ids, conversation.message_count, user.text)
        )
        await self.context.unlock(conversation.id)
        await publish_all(self.events, events)
        waiting = {"status": conversation.status.value, "detail": "a member of our team will reply here"}
        return Turn.settled(user.id, ("accepted", {"user_message_id": user.id}), ("waiting", waiting))

    async def _hand_over(self, db, conversation, live: LiveBot, user, context_ids, events) -> Turn:
        """The customer asked for a person: the bot says so (in context too) and steps aside."""
        message = live.definition.handoff.message
        reply_ids = self.assembler.scripted_reply(message)
        reply = append_message(conversation, MessageRole.ASSISTANT, message, reply_ids)
        db.add(reply)
        await db.flush()
        events += [
            message_event(user),
            message_event(reply),
            *lifecycle.hand_off(conversation, HandoffReason.CUSTOMER_REQUEST),
        ]
        await commit_with_deliveries(db, events)
        await self.context.remember(
            conversation.id, Session([*context_ids, *reply_ids], conversation.message_count, message)
        )
        await self.context.unlock(conversation.id)
        await publish_all(self.events, events)
        done = {"message_id": reply.id, "text": message, "handoff": True, "status": conversation.status.value}
        return Turn.settled(
            user.id, ("accepted", {"user_message_id": user.id}), ("token", {"text": message}), ("done", done)
        )

    async def _generate(
        self,
        conversation: Conversation,
        reply: Message,
        turn: Turn,
        prompt: list[int],
        max_tokens: int,
        context_ids: list[int],
    ) -> None:
        """Runs apart from the HTTP request: a customer who disconnects still gets the reply stored."""
        emit = turn.queue.put_nowait
        emit(("accepted", {"user_message_id": turn.user_message_id, "reply_message_id": reply.id}))
        stop = self._stop_reply[conversation.id]
        bot = conversation.bot.slug
        holding = asyncio.create_task(self.context.hold(conversation.id))
        try:
            salt = self._live_bot(conversation).cache_salt
            result = await self._stream_reply(prompt, max_tokens, reply, salt, stop, emit)
            # Token ids stay exact; a NUL the model wrote cannot be stored in a Postgres text
            # column, and at temperature 0 every retry would write it again.
            result = dataclasses.replace(result, text=result.text.replace("\x00", "\ufffd"))
            reply_ids = self.assembler.reply(result.token_ids)
            status = await self._finish_reply(conversation.id, reply.id, result, reply_ids, stop.is_set())
            session = Session([*context_ids, *reply_ids], reply.seq, result.text)
            await self.context.remember(conversation.id, session)
            emit(("done", done_event(reply.id, result, status)))
            if not stop.is_set():  # an interrupted reply has no meaningful timings
                await self.metrics.reply(
                    Reply(
                        bot,
                        True,
                        result.ttft_s * 1000,
                        result.total_s * 1000,
                        result.prompt_tokens,
                        result.cached_tokens,
                    )
                )
        except Exception as error:
            logger.exception("reply %s failed", reply.id)
            await self._fail_reply(reply.id, str(error))
            detail = "the reply could not be generated; your message is saved, please send it again"
            emit(("error", {"message_id": reply.id, "code": "generation_failed", "detail": detail}))
            await self.metrics.reply(Reply(bot, False))
        finally:
            holding.cancel()
            self._stop_reply.pop(conversation.id, None)
            self._reply_slots_taken -= 1
            await self.context.unlock(conversation.id)
            emit(None)

    async def _stream_reply(
        self, prompt, max_tokens, reply: Message, cache_salt: str, stop: asyncio.Event, emit
    ) -> GenerationResult:
        """The engine's tokens, passed on as they come; cut short when an agent takes over."""
        stream = self.engine.stream(
            prompt,
            max_tokens=max_tokens,
            request_id=f"reply-{reply.id}",
            cache_salt=cache_salt,
            affinity_key=reply.conversation_id,
        )
        partial: list[int] = []
        text: list[str] = []
        try:
            async for item in stream:
                if isinstance(item, GenerationResult):
                    return item
                partial += item.token_ids
                text.append(item.text)
                emit(("token", {"text": item.text}))
                if stop.is_set():
                    return GenerationResult("".join(text), partial, "interrupted", len(prompt), 0, 0.0, 0.0)
        finally:
            await stream.aclose()  # aborts the engine request if it is still running
        raise RuntimeError("the engine stream ended without a result")

    async def _finish_reply(
        self,
        conversation_id: str,
        message_id: int,
        result: GenerationResult,
        reply_ids: list[int],
        interrupted: bool,
    ) -> ConversationStatus:
        """Store the reply; count replies that could not answer and hand over after too many."""
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
            reply = await repo.get_message(db, message_id)
            reply.status = MessageStatus.INTERRUPTED if interrupted else MessageStatus.COMPLETE
            reply.text, reply.token_ids = result.text, reply_ids
            reply.prompt_tokens, reply.cached_tokens = result.prompt_tokens, result.cached_tokens
            reply.completion_tokens = len(result.token_ids)
            if not interrupted:
                reply.ttft_ms, reply.total_ms = result.ttft_s * 1000, result.total_s * 1000
            reply.finish_reason = result.finish_reason
            events = [message_event(reply)]
            if not interrupted and conversation.status == ConversationStatus.BOT:
                events += lifecycle.count_unanswered(
                    conversation, self._live_bot(conversation).definition.handoff, result.text
                )
            await commit_with_deliveries(db, events)
        await publish_all(self.events, events)
        return conversation.status

    async def _fail_reply(self, message_id: int, error: str) -> None:
        try:
            async with self.sessions() as db:
                reply = await repo.get_message(db, message_id)
                reply.status = MessageStatus.FAILED
                reply.error = error[:2000]
                await db.commit()
        except Exception:
            logger.exception("could not mark reply %s as failed", message_id)
