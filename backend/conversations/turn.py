"""One customer message, top to bottom. Its stages, in order:

    accept    check the text, claim the conversation (a reply slot, the turn lock), store
              the message if the context window has room for it and a reply
    decide    who answers: the decision stages (`decisions.py`) may settle the turn (a human
              has it, the customer asks for one); if none does, the bot replies
    assemble  the prompt: everything the model saw, the new message, the generation prompt
    generate  the engine's tokens streamed to the customer, in a task of its own
    settle    store the reply and run the reply checks (in a unit of work of its own), keep
              the session hot, count it; then let go of the claim

`take` runs accept, decide and assemble inside the request's unit of work, which commits
before the response starts; the reply is generated and settled after the request, so a
customer who disconnects still gets it stored.
"""

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from backend.config import Settings
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.claims import TurnClaim, TurnClaims
from backend.conversations.context import ConversationContext
from backend.conversations.decisions import AcceptedMessage, Decision, ReplyCheck, Settled
from backend.conversations.messages import MIN_REPLY_TOKENS, append_message, message_event, message_text
from backend.conversations.models import Conversation, ConversationStatus, MessageRole, MessageStatus
from backend.conversations.session_store import Session
from backend.conversations.turn_events import Accepted, Done, Failed, Token, TurnStream
from backend.engine.interface import Engine, GenerationResult, StreamAccumulator
from backend.engine.live import LiveEngine
from backend.errors import ContextWindowFull, ServiceUnavailable
from backend.events.bus import STATUS_CHANGED, Event
from backend.metrics.recorder import Metrics
from backend.metrics.store import Reply
from backend.prompting.assembler import PromptAssembler
from backend.prompting.registry import BotRegistry, LiveBot
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)

FAILED_DETAIL = "the reply could not be generated; your message is saved, please send it again"


@dataclass(frozen=True)
class TurnLimits:
    max_message_chars: int
    max_model_len: int
    max_reply_tokens: int

    @classmethod
    def of(cls, settings: Settings) -> "TurnLimits":
        return cls(settings.max_message_chars, settings.max_model_len, settings.max_reply_tokens)


@dataclass(frozen=True)
class PendingReply:
    """A bot reply the request has stored as "generating"; its task fills it in."""

    message_id: int
    seq: int
    prompt: list[int]
    max_tokens: int


class ChatTurns:
    def __init__(
        self,
        *,
        limits: TurnLimits,
        engine: LiveEngine,
        bots: BotRegistry,
        context: ConversationContext,
        assembler: PromptAssembler,
        claims: TurnClaims,
        decisions: Sequence[Decision],
        reply_checks: Sequence[ReplyCheck],
        metrics: Metrics,
        new_work: Callable[[], AbstractAsyncContextManager[UnitOfWork]],
    ):
        self.limits = limits
        self.engine = engine
        self.bots = bots
        self.context = context
        self.assembler = assembler
        self.claims = claims
        self.decisions = decisions
        self.reply_checks = reply_checks
        self.metrics = metrics
        self.new_work = new_work  # for the reply's own unit of work, after the request
        self._replies: set[asyncio.Task[None]] = set()

    async def take(self, work: UnitOfWork, conversation_id: str, text: str) -> TurnStream:
        """Accept the message, decide who answers and, if it is the bot, start its reply."""
        text = message_text(text, self.limits.max_message_chars)
        engine = self.engine.require()
        claim = await self.claims.take(work, conversation_id)
        message = await self._accept(work, conversation_id, text)
        for decide in self.decisions:
            if (settled := await decide(work, message)) is not None:
                return self._settle_now(work, message, settled)
        reply = await self._assemble(work, message)
        stream = TurnStream()

        async def start_reply() -> None:
            await self.metrics.conversation_active(conversation_id)
            task = asyncio.create_task(self._reply(engine, message, reply, stream, claim.pass_on()))
            self._replies.add(task)
            task.add_done_callback(self._replies.discard)

        work.after_commit(start_reply)
        return stream

    # -- accept, decide, assemble: in the request ------------------------------------

    async def _accept(self, work: UnitOfWork, conversation_id: str, text: str) -> AcceptedMessage:
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        await repo.fail_abandoned_replies(work.db, conversation_id)
        bot = self._bot_of(conversation)
        work.emit(*lifecycle.reopen_by_customer(conversation))
        user_ids = self.assembler.user_message(text)
        context_ids = [*await self.context.ids(work.db, conversation), *user_ids]
        if self._room_after(context_ids) < MIN_REPLY_TOKENS:
            raise ContextWindowFull(
                f"this conversation has reached the model's context window "
                f"({self.limits.max_model_len} tokens); please start a new conversation"
            )
        user = append_message(conversation, MessageRole.USER, text, user_ids)
        work.db.add(user)
        await work.db.flush()
        work.emit(message_event(user))
        return AcceptedMessage(conversation, bot, user, context_ids)

    def _settle_now(self, work: UnitOfWork, message: AcceptedMessage, settled: Settled) -> TurnStream:
        """A turn a decision settled: no reply to wait for; the session is kept hot once stored."""
        conversation = message.conversation
        session = Session(
            [*message.context_ids, *settled.added_ids], conversation.message_count, settled.last_message
        )

        async def remember() -> None:
            await self.context.remember(conversation.id, session)

        work.after_commit(remember)
        return TurnStream.of(Accepted(message.user.id), *settled.events)

    async def _assemble(self, work: UnitOfWork, message: AcceptedMessage) -> PendingReply:
        prompt = self.assembler.prompt_for_reply(message.context_ids)
        reply = append_message(
            message.conversation, MessageRole.ASSISTANT, "", [], status=MessageStatus.GENERATING
        )
        reply.prompt_tokens = len(prompt)
        work.db.add(reply)
        await work.db.flush()
        max_tokens = min(self.limits.max_reply_tokens, self.limits.max_model_len - len(prompt))
        return PendingReply(reply.id, reply.seq, prompt, max_tokens)

    # -- generate and settle: after the request, in a task -----------------------------

    async def _reply(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        claim: TurnClaim,
    ) -> None:
        try:
            async with claim:
                stream.put(Accepted(message.user.id, reply.message_id))
                await self._generate_and_settle(engine, message, reply, stream, claim)
        finally:
            stream.close()  # after the claim is let go: the customer may write again at once

    async def _generate_and_settle(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        claim: TurnClaim,
    ) -> None:
        slug = message.bot.definition.slug
        try:
            result = await self._generate(engine, message, reply, stream, claim.stop)
            # Token ids stay exact; a NUL the model wrote cannot be stored in a Postgres text
            # column, and at temperature 0 every retry would write it again.
            result = dataclasses.replace(result, text=result.text.replace("\x00", "\ufffd"))
            reply_ids = self.assembler.reply(result.token_ids)
            interrupted = claim.stop.is_set()
            status = await self._settle(message, reply, result, reply_ids, interrupted)
            session = Session([*message.context_ids, *reply_ids], reply.seq, result.text)
            await self.context.remember(message.conversation.id, session)
            stream.put(Done.generated(reply.message_id, result, status))
            if not interrupted:  # an interrupted reply has no meaningful timings
                ttft_ms, total_ms = result.ttft_s * 1000, result.total_s * 1000
                usage = (result.prompt_tokens, result.cached_tokens)
                await self.metrics.reply(Reply(slug, True, ttft_ms, total_ms, *usage))
        except Exception as error:
            logger.exception("reply %s failed", reply.message_id)
            await self._fail(reply.message_id, str(error))
            stream.put(Failed(reply.message_id, "generation_failed", FAILED_DETAIL))
            await self.metrics.reply(Reply(slug, False))

    async def _generate(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        stop: asyncio.Event,
    ) -> GenerationResult:
        """The engine's tokens, passed on as they come; cut short when a human takes over."""
        said = StreamAccumulator(len(reply.prompt))
        items = engine.stream(
            reply.prompt,
            max_tokens=reply.max_tokens,
            request_id=f"reply-{reply.message_id}",
            cache_salt=message.bot.cache_salt,
            affinity_key=message.conversation.id,
        )
        async with contextlib.aclosing(items):  # closing aborts the engine's request if it still runs
            async for item in items:
                if isinstance(item, GenerationResult):
                    return item
                said.add(item.text, item.token_ids)
                stream.put(Token(item.text))
                if stop.is_set():
                    return said.interrupted()
        raise RuntimeError("the engine stream ended without a result")

    async def _settle(
        self,
        message: AcceptedMessage,
        reply: PendingReply,
        result: GenerationResult,
        reply_ids: list[int],
        interrupted: bool,
    ) -> ConversationStatus:
        async with self.new_work() as work:
            conversation = await repo.require_conversation(work.db, message.conversation.id)
            stored = await repo.get_message(work.db, reply.message_id)
            stored.status = MessageStatus.INTERRUPTED if interrupted else MessageStatus.COMPLETE
            stored.text, stored.token_ids = result.text, reply_ids
            stored.prompt_tokens, stored.cached_tokens = result.prompt_tokens, result.cached_tokens
            stored.completion_tokens = len(result.token_ids)
            if not interrupted:
                stored.ttft_ms, stored.total_ms = result.ttft_s * 1000, result.total_s * 1000
            stored.finish_reason = result.finish_reason
            work.emit(message_event(stored))
            if not interrupted:
                for check in self.reply_checks:
                    check(work, conversation, message.bot, result.text)
            return conversation.status

    async def _fail(self, message_id: int, error: str) -> None:
        try:
            async with self.new_work() as work:
                stored = await repo.get_message(work.db, message_id)
                stored.status = MessageStatus.FAILED
                stored.error = error[:2000]
        except Exception:
            logger.exception("could not mark reply %s as failed", message_id)

    # -- around the turns ---------------------------------------------------------------

    async def stop_reply_on_handoff(self, event: Event) -> None:
        """Any process's status change away from the bot stops this process's reply to it."""
        if event.type == STATUS_CHANGED and event.data.get("status") != ConversationStatus.BOT:
            self.claims.stops.stop(event.conversation_id)

    async def drain(self) -> None:
        """Let replies being written finish and be stored (before shutdown)."""
        if self._replies:
            await asyncio.wait(self._replies, timeout=30)

    def _bot_of(self, conversation: Conversation) -> LiveBot:
        live = self.bots.get(conversation.bot.slug)
        if live is None:
            raise ServiceUnavailable(f"bot {conversation.bot.slug!r} is not loaded in this app")
        return live

    def _room_after(self, context_ids: list[int]) -> int:
        return self.limits.max_model_len - len(context_ids) - len(self.assembler.generation_prompt)
