"""One customer message, top to bottom. Its stages, in order:

    accept    check the text, claim the conversation (a reply slot, the turn lock), store
              the message if the context window has room for it and a reply
    decide    who answers: the decision stages (`decisions.py`) may settle the turn (a human
              has it); if none does, the bot replies
    assemble  the prompt: everything the model saw, the new message, the generation prompt
    generate  the engine's tokens streamed to the customer, in a task of its own; the gates
              (the customer asks for a person) run beside its first tokens, which are held
              until they pass; one that says hand over replaces the reply
    check     the reply checks (`reply_checks.py`): did it answer, may it be wrong
    settle    store the reply and what the checks found (in a unit of work of its own), keep
              the session hot, count it; then let go of the claim

`take` runs accept, decide and assemble inside the request's unit of work, which commits
before the response starts; the reply is generated and settled after the request, so a
customer who disconnects still gets it stored. `answer_waiting` starts the same reply (assemble,
generate, check, settle) for a message that waited for a person when the bot takes it back.
"""

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from backend.bots.registry import BotRegistry, LiveBot, VersionKnowledge
from backend.config import Settings
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.messages import MIN_REPLY_TOKENS, append_message, message_event, message_text
from backend.conversations.models import (
    Conversation,
    ConversationStatus,
    HandoffReason,
    Message,
    MessageRole,
    MessageStatus,
)
from backend.engine.interface import Engine, GenerationResult, StreamAccumulator, TokenDelta
from backend.engine.live import LiveEngine
from backend.errors import AppError, ContextWindowFull, ServiceUnavailable
from backend.events.bus import STATUS_CHANGED, Event
from backend.knowledge.articles import Article
from backend.knowledge.citations import Source, cited
from backend.metrics.recorder import Metrics
from backend.metrics.store import Reply
from backend.prompting.assembler import PromptAssembler
from backend.prompting.openings import Opening, Start
from backend.turns import settlement
from backend.turns.checks import FinishedReply, ReplyCheck, Review, review_reply
from backend.turns.claims import TurnClaim, TurnClaims
from backend.turns.context import ConversationContext
from backend.turns.decisions import AcceptedMessage, Decision, Gate, HandOver, Settled
from backend.turns.events import Accepted, Done, Failed, Token, TurnStream
from backend.turns.quotes import Quote, answering_line
from backend.turns.second_try import Contradiction, contradicted, retry_note_ids
from backend.turns.session_store import Session
from backend.turns.sources import SourcePicker
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)

FAILED_DETAIL = "the reply could not be generated; your message is saved, please send it again"
MAX_HELD_TOKENS = 24  # a reply's first tokens held while its opening is unsettled, at most


@dataclass(frozen=True)
class TurnLimits:
    max_message_chars: int
    max_model_len: int
    max_reply_tokens: int
    relevant_lines: int  # policy lines repeated beside each customer message

    @classmethod
    def of(cls, settings: Settings, context_window: int) -> "TurnLimits":
        return cls(
            settings.max_message_chars,
            context_window,
            settings.max_reply_tokens,
            settings.relevant_lines,
        )


@dataclass(frozen=True)
class PendingReply:
    """A bot reply the request has stored as "generating"; its task fills it in."""

    message_id: int
    seq: int
    prompt: list[int]
    max_tokens: int


@dataclass(frozen=True)
class Generated:
    """What generating a reply came to: the reply, or a handover instead of it."""

    outcome: GenerationResult | HandOver
    held_s: float  # how long its first token was held back: for the gates, and its opening's check
    note_ids: list[int] = dataclasses.field(default_factory=list)  # a second try's note, before the reply
    second_try: str | None = None  # why the first reply was dropped unseen (a second try or a quote)


@dataclass(frozen=True)
class WaitingAnswer:
    """What became of the customer's messages that waited for a person, when the bot took back over."""

    waiting: int  # customer messages since the last reply
    answering_message_id: int | None = None  # the last of them, which the bot is now answering
    unanswered_reason: str | None = None  # why the bot cannot answer them: a person should


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
        gates: Sequence[Gate],
        reply_checks: Sequence[ReplyCheck],
        metrics: Metrics,
        new_work: Callable[[], AbstractAsyncContextManager[UnitOfWork]],
        source_picker: SourcePicker | None = None,
        second_tries: bool = True,
        quotes: bool = True,
        one_request_at_a_time: bool = False,
    ):
        self.limits = limits
        self.engine = engine
        self.bots = bots
        self.context = context
        self.assembler = assembler
        self.claims = claims
        self.decisions = decisions
        self.gates = gates
        self.reply_checks = reply_checks
        self.metrics = metrics
        self.source_picker = source_picker  # names the article a reply used when it cites none
        self.second_tries = second_tries  # check a reply's yes or no opening (bots with an opening judge)
        self.quotes = quotes  # quote a policy line for "I don't know" (bots with a line_answers judge)
        # No two of the turn's requests share an engine step, so the same conversation gets the
        # same reply every time (the eval's own app): the gates are asked before the reply's
        # request starts, not beside its prefill, and the policy lines are judged only once the
        # reply has said it does not know, not while it may yet.
        self.one_request_at_a_time = one_request_at_a_time
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

    async def answer_waiting(self, work: UnitOfWork, conversation_id: str) -> WaitingAnswer:
        """The bot has the conversation back: one reply to the last customer message nobody
        answered, through the turn's own stages (its context append-only, its prefix cached).
        If the bot cannot (no engine, a turn running, no room), the answer says why instead."""
        messages = await repo.list_messages(work.db, conversation_id)
        waiting = _waiting(messages)
        if not waiting:
            return WaitingAnswer(0)
        try:
            engine = self.engine.require()
            claim = await self.claims.take(work, conversation_id)
            message = await self._waiting_message(work, conversation_id, messages, waiting[-1])
        except AppError as error:
            reason = f"the bot could not answer: {error.message}; the customer's messages are unanswered"
            return WaitingAnswer(len(waiting), unanswered_reason=reason)
        reply = await self._assemble(work, message)
        stream = TurnStream()  # nobody reads it: the customer's live stream gets the stored reply

        async def start_reply() -> None:
            task = asyncio.create_task(self._reply(engine, message, reply, stream, claim.pass_on()))
            self._replies.add(task)
            task.add_done_callback(self._replies.discard)

        work.after_commit(start_reply)
        return WaitingAnswer(len(waiting), answering_message_id=waiting[-1].id)

    async def _waiting_message(
        self, work: UnitOfWork, conversation_id: str, messages: list[Message], last: Message
    ) -> AcceptedMessage:
        """The customer's last waiting message as a turn's accepted message: it is in the context already."""
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        bot = self._bot_of(conversation)
        context_ids = await self.context.ids(work.db, conversation)
        if self._room_after(context_ids) < MIN_REPLY_TOKENS:
            raise ContextWindowFull("this conversation has reached the model's context window")
        replies = [m.text for m in messages if m.seq < last.seq and m.role != MessageRole.USER]
        knowledge = await self.bots.knowledge_of_version(work.db, conversation.prompt_version_id)
        previous = replies[-1] if replies else ""
        return AcceptedMessage(conversation, bot, last, context_ids, previous, knowledge)

    # -- accept, decide, assemble: in the request ------------------------------------

    async def _accept(self, work: UnitOfWork, conversation_id: str, text: str) -> AcceptedMessage:
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        await repo.fail_abandoned_replies(work.db, conversation_id)
        bot = self._bot_of(conversation)
        work.emit(*lifecycle.reopen_by_customer(conversation))
        previous_reply = await repo.last_reply_text(work.db, conversation_id)
        # The model sees the help-center articles (when they are not in the prefix) and the
        # policy's lines that match the message just before it; the text is stored as the
        # customer wrote it, the ids as the model saw them.
        knowledge = await self.bots.knowledge_of_version(work.db, conversation.prompt_version_id)
        given = await repo.given_articles(work.db, conversation.id) if knowledge.beside_questions else set()
        articles = self._new_articles(knowledge, given, bot, text)
        # Off the event loop: a bot that ranks its lines by meaning too encodes the message
        # (about 10 ms).
        note = await asyncio.to_thread(
            self.assembler.note, bot.definition, text, articles, self.limits.relevant_lines
        )
        user_ids = self.assembler.user_message(text, note)
        context_ids = [*await self.context.ids(work.db, conversation), *user_ids]
        if self._room_after(context_ids) < MIN_REPLY_TOKENS:
            raise ContextWindowFull(
                f"this conversation has reached the model's context window "
                f"({self.limits.max_model_len} tokens); please start a new conversation"
            )
        user = append_message(conversation, MessageRole.USER, text, user_ids)
        user.articles = [a.id for a in articles] or None
        work.db.add(user)
        await work.db.flush()
        work.emit(message_event(user))
        return AcceptedMessage(conversation, bot, user, context_ids, previous_reply, knowledge)

    @staticmethod
    def _new_articles(known: VersionKnowledge, given: set[str], bot: LiveBot, text: str) -> list[Article]:
        """The articles of the conversation's help center that match the message and that it was
        not given before: appended once, in canonical order, so every later turn still starts
        with the exact ids of the earlier ones."""
        search = known.beside_questions
        if search is None:
            return []
        return search.new_matches(text, bot.definition.knowledge_settings.articles_per_question, given)

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
            generated = await self._generate(engine, message, reply, stream, claim.stop)
            outcome = generated.outcome
            if isinstance(outcome, HandOver):
                await self._hand_over(message, reply, outcome, stream)
                return
            interrupted = outcome.finish_reason == "interrupted"  # a human took over meanwhile
            # Token ids stay exact; a NUL the model wrote cannot be stored in a Postgres text
            # column, and at temperature 0 every retry would write it again.
            # The customer reads the reply without its `[article-id]` markers, and the articles
            # they name (those of its help center only) as its sources; nor a note's heading
            # the model repeated.
            text, sources = cited(outcome.text.replace("\x00", "\ufffd"), message.knowledge.knowledge)
            text = self.assembler.without_note_headings(message.bot.definition, text)
            result = dataclasses.replace(outcome, text=text)
            reply_ids = [*generated.note_ids, *self.assembler.reply(result.token_ids)]
            finished = FinishedReply(result.text, reply_ids)
            review = (
                Review() if interrupted else await review_reply(self.reply_checks, engine, message, finished)
            )
            if not sources and not interrupted:
                sources = await self._sources_picked(engine, message, finished)
            cites = [source.as_dict() for source in sources]
            status = await settlement.store_reply(
                self.new_work, message, reply.message_id, result, finished, review, cites
            )
            session = Session([*message.context_ids, *reply_ids], reply.seq, result.text)
            await self.context.remember(message.conversation.id, session)
            held_ms, checks_ms = round(generated.held_s * 1000, 1), round(review.seconds * 1000, 1)
            stream.put(
                Done.generated(
                    reply.message_id,
                    result,
                    status,
                    review.doubts,
                    held_ms=held_ms,
                    checks_ms=checks_ms,
                    sources=cites,
                    second_try=generated.second_try,
                )
            )
            if not interrupted:  # an interrupted reply has no meaningful timings
                ttft_ms, total_ms = result.ttft_s * 1000, result.total_s * 1000
                usage = (result.prompt_tokens, result.cached_tokens, len(result.token_ids))
                await self.metrics.reply(Reply(slug, True, ttft_ms, total_ms, *usage, total_ms - ttft_ms))
        except Exception as error:
            logger.exception("reply %s failed", reply.message_id)
            await settlement.mark_failed(self.new_work, reply.message_id, str(error))
            stream.put(Failed(reply.message_id, "generation_failed", FAILED_DETAIL))
            await self.metrics.reply(Reply(slug, False))

    async def _generate(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        stop: asyncio.Event,
    ) -> Generated:
        """The engine's tokens, passed on once the gates pass and the opening is settled; cut
        short when a human takes over.

        The gates run from the start, beside the reply's prefill; the first token waits for
        their verdict (the engine goes on meanwhile). A bot with an opening judge also holds
        the reply's first words until they show whether it commits to a yes or a no, and if
        it does, until the judge agrees (`second_try.py`); if the judge does not, this reply is
        dropped unseen and written again, or the conversation is handed over. A bot with a
        line_answers judge holds them while they may yet say it does not know, and if they
        do and a policy line answers after all, the line is quoted instead (`quotes.py`); the
        lines are judged from the first word that may start such an opening, beside the next
        ones, unless the turn's requests go one at a time; once they are and none answers,
        the opening no longer matters to them.
        """
        said = StreamAccumulator(len(reply.prompt))
        gated_s = 0.0  # how long the gates kept the reply's request from starting
        if self.one_request_at_a_time:
            waited = time.perf_counter()
            verdict = await self._gates(engine, message)
            gated_s = time.perf_counter() - waited
            if verdict is not None:
                return Generated(verdict, gated_s)
        gates: asyncio.Task[HandOver | None] | None = (
            None if self.one_request_at_a_time else asyncio.create_task(self._gates(engine, message))
        )
        second_try = message.bot.definition.second_try if self.second_tries else None
        action = second_try.action if second_try else None
        quoting = message.bot.definition.quoting if self.quotes else None
        watching = second_try is not None or quoting is not None  # the opening is unsettled
        started = time.perf_counter()
        first_at: float | None = None  # when the engine's first token came
        held: list[TokenDelta] = []  # the reply's first words, while its opening is unsettled
        contradiction: Contradiction | None = None
        quote: Quote | None = None
        # The policy lines judged while the opening may yet say "I don't know", beside its
        # next tokens, so that the verdict is (nearly) in when it does; cancelled if it does not.
        lines_judged: asyncio.Task[Quote | None] | None = None
        items = engine.stream(
            reply.prompt,
            max_tokens=reply.max_tokens,
            request_id=f"reply-{reply.message_id}",
            cache_salt=message.bot.cache_salt,
            affinity_key=message.conversation.id,
        )
        try:
            async with contextlib.aclosing(items):  # closing aborts the engine's request if it still runs
                async for item in items:
                    first_at = first_at or time.perf_counter()
                    if gates is not None:  # the first token, or an empty reply: nothing shown yet
                        verdict, gates = await gates, None
                        if verdict is not None:
                            return Generated(verdict, time.perf_counter() - first_at)
                    if watching:
                        ended = isinstance(item, GenerationResult)
                        if isinstance(item, TokenDelta):
                            held.append(item)
                        said_so_far = "".join(delta.text for delta in held) + (" " if ended else "")
                        opening, word = Opening.NEITHER, ""
                        if second_try is not None:
                            opening, word = second_try.openings.of(said_so_far)
                        unknown = quoting.opening_of(said_so_far) if quoting else Start.NO
                        speculate = lines_judged is None and not self.one_request_at_a_time
                        if speculate and unknown is Start.UNDECIDED and said_so_far.strip():
                            lines_judged = asyncio.create_task(answering_line(engine, message))
                        if _found_no_line(lines_judged):  # the reply goes on as written whatever it says
                            unknown = Start.NO
                        undecided = opening == Opening.UNDECIDED or unknown is Start.UNDECIDED
                        held_tokens = sum(len(delta.token_ids) for delta in held)
                        # Only blank text is undecided for long: an opening is a few words.
                        if undecided and not ended and held_tokens < MAX_HELD_TOKENS and not stop.is_set():
                            continue
                        if opening in (Opening.YES, Opening.NO):
                            contradiction = await contradicted(engine, message, opening, word)
                            if contradiction is not None:
                                break
                        if unknown is Start.YES:
                            quote = await (lines_judged or answering_line(engine, message))
                            if quote is not None:
                                break
                        watching, first = False, held
                        if lines_judged is not None:
                            lines_judged.cancel()  # the opening went another way, or was judged
                    else:
                        first = [item] if isinstance(item, TokenDelta) else []
                    held_s = time.perf_counter() - first_at + gated_s
                    for delta in first:
                        said.add(delta.text, delta.token_ids)
                        stream.put(Token(delta.text))
                    if isinstance(item, GenerationResult):
                        return Generated(item, held_s)
                    if stop.is_set():
                        return Generated(said.interrupted(), held_s)
                    return Generated(await self._pass_on(items, said, stream, stop), held_s)
        finally:
            for task in (gates, lines_judged):
                if task is not None and not task.done():
                    task.cancel()  # its engine requests are aborted
        if first_at is None or (contradiction is None and quote is None):
            raise RuntimeError("the engine stream ended without a result")
        if quote is not None:
            return self._quoted(message, quote, said, stream)
        assert contradiction is not None
        held_s = time.perf_counter() - first_at + gated_s
        logger.info("reply %s dropped unseen: %s", reply.message_id, contradiction.reason)
        note_ids = retry_note_ids(self.assembler, message, contradiction)
        room = self._room_after([*message.context_ids, *note_ids])
        if action == "handoff" or room < MIN_REPLY_TOKENS:  # a second try needs room for its note
            hand_over = HandOver(message.bot.definition.handoff.message, HandoffReason.DOUBT)
            return Generated(hand_over, held_s, second_try=contradiction.reason)
        return await self._second_try(engine, message, reply, stream, stop, note_ids, contradiction, started)

    async def _second_try(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        stop: asyncio.Event,
        note_ids: list[int],
        contradiction: Contradiction,
        started: float,
    ) -> Generated:
        """The reply written again after a note with the policy's lines. Its timings count from
        the first try's start, as the customer waited from then; none of it is held."""
        prompt = self.assembler.prompt_for_reply([*message.context_ids, *note_ids])
        retried_at = time.perf_counter() - started
        said = StreamAccumulator(len(prompt))
        items = engine.stream(
            prompt,
            max_tokens=min(reply.max_tokens, self.limits.max_model_len - len(prompt)),
            request_id=f"reply-{reply.message_id}-again",
            cache_salt=message.bot.cache_salt,
            affinity_key=message.conversation.id,
        )
        async with contextlib.aclosing(items):
            result = await self._pass_on(items, said, stream, stop)
        if result.finish_reason != "interrupted":
            result = dataclasses.replace(
                result, ttft_s=retried_at + result.ttft_s, total_s=retried_at + result.total_s
            )
        return Generated(result, 0.0, note_ids, contradiction.reason)

    def _quoted(
        self,
        message: AcceptedMessage,
        quote: Quote,
        said: StreamAccumulator,
        stream: TurnStream,
    ) -> Generated:
        """The reply that quotes a policy line, in place of the first one, which nobody saw. Its
        first token is the whole quote, timed from the turn's start (gates included), so none of
        it counts as held; the model wrote none of it, so it has no prompt of its own."""
        assert message.bot.definition.quoting is not None
        text = message.bot.definition.quoting.quote(quote.line)
        said.prompt_tokens = 0
        said.add(text, self.assembler.format.encode_text(text))
        stream.put(Token(text))
        logger.info("reply to message %s: %s", message.user.id, quote.reason)
        return Generated(said.result(), 0.0, second_try=quote.reason)

    @staticmethod
    async def _pass_on(
        items: AsyncIterator[TokenDelta | GenerationResult],
        said: StreamAccumulator,
        stream: TurnStream,
        stop: asyncio.Event,
    ) -> GenerationResult:
        """The rest of a reply, passed on to the customer as it comes."""
        async for item in items:
            if isinstance(item, GenerationResult):
                return item
            said.add(item.text, item.token_ids)
            stream.put(Token(item.text))
            if stop.is_set():
                return said.interrupted()
        raise RuntimeError("the engine stream ended without a result")

    async def _sources_picked(
        self, engine: Engine, message: AcceptedMessage, reply: FinishedReply
    ) -> list[Source]:
        """The article a reply that cites none used, if its bot has a help center (a constrained
        choice of the model: turns/sources.py); none if the choice cannot be made."""
        if self.source_picker is None or message.knowledge.search is None:
            return []
        try:
            return await self.source_picker.pick(
                engine,
                message.knowledge,
                [*message.context_ids, *reply.token_ids],
                message.user.text,
                reply.text,
                request_id=f"sources-{message.user.id}",
                cache_salt=message.bot.cache_salt,
                affinity_key=message.conversation.id,
            )
        except Exception:
            logger.exception("picking the sources of the reply to message %s failed", message.user.id)
            return []

    async def _gates(self, engine: Engine, message: AcceptedMessage) -> HandOver | None:
        """The first gate that says hand over, or None; a gate that fails lets the reply through."""
        for gate in self.gates:
            try:
                if (verdict := await gate(engine, message)) is not None:
                    return verdict
            except Exception:
                logger.exception("gate %s failed for message %s", gate, message.user.id)
        return None

    async def _hand_over(
        self, message: AcceptedMessage, reply: PendingReply, hand_over: HandOver, stream: TurnStream
    ) -> None:
        """A gate said hand over: the reply becomes the handover message, and a human takes it."""
        reply_ids = self.assembler.scripted_reply(hand_over.text)
        status = await settlement.store_hand_over(
            self.new_work, message, reply.message_id, hand_over, reply_ids
        )
        session = Session([*message.context_ids, *reply_ids], reply.seq, hand_over.text)
        await self.context.remember(message.conversation.id, session)
        stream.put(Token(hand_over.text))
        stream.put(
            Done(reply.message_id, hand_over.text, status.value, handoff=True, finish_reason="handoff")
        )

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


def _waiting(messages: list[Message]) -> list[Message]:
    """The customer's messages after the last reply (a failed bot reply said nothing)."""
    waiting: list[Message] = []
    for message in reversed(messages):
        if message.role == MessageRole.USER:
            waiting.insert(0, message)
        elif not (message.role == MessageRole.ASSISTANT and message.status == MessageStatus.FAILED):
            break
    return waiting


def _found_no_line(lines_judged: asyncio.Task[Quote | None] | None) -> bool:
    """The policy lines were judged, and none answers."""
    return (
        lines_judged is not None
        and lines_judged.done()
        and not lines_judged.cancelled()
        and lines_judged.result() is None
    )
