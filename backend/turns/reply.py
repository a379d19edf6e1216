"""A bot reply, written after the request, in a task of its own. Its stages, in order:

gates     the questions asked before anything is shown (does the customer ask for a
          person?), beside the reply's prefill; the first token waits for their verdict
opening   the reply's first words held until they may be shown (`opening_watch.py`): a
          plain yes or no the opening judge must agree with, else a second try
          (`second_try.py`); an "I don't know" a policy line answers, else it is quoted
          instead (`quotes.py`)
stream    the rest passed on as it comes, until it ends or a human takes over
finish    checks, sources, stored, the session kept hot (`finish.py`)
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence

from backend.conversations.messages import MIN_REPLY_TOKENS
from backend.conversations.models import HandoffReason
from backend.engine.interface import Engine, GenerationResult, StreamAccumulator, TokenDelta
from backend.metrics.store import Reply
from backend.turns import settlement
from backend.turns.agreement import Samples
from backend.turns.claims import TurnClaim
from backend.turns.decisions import AcceptedMessage, Gate, HandOver
from backend.turns.events import Accepted, Failed, TurnStream
from backend.turns.finish import ReplyFinisher
from backend.turns.opening_watch import (
    AskLines,
    AskOpening,
    Contradicted,
    Hold,
    OpeningWatch,
    Quoted,
    Release,
)
from backend.turns.parts import ConversationParts
from backend.turns.quotes import LinesJudged, quoted_reply
from backend.turns.release import CheckedRelease
from backend.turns.reply_policy import ReplyPolicy
from backend.turns.scaffolding import ScaffoldFilter
from backend.turns.second_try import contradicted, retry_note_ids, write_again
from backend.turns.shedding import CheckShedding
from backend.turns.writing import Generated, PendingReply, ReplyJob, pass_on

logger = logging.getLogger(__name__)

FAILED_DETAIL = "the reply could not be generated; your message is saved, please send it again"

Item = TokenDelta | GenerationResult


class Replies:
    def __init__(
        self,
        parts: ConversationParts,
        *,
        gates: Sequence[Gate],
        finisher: ReplyFinisher,
        policy: ReplyPolicy,
        shedding: CheckShedding | None = None,
    ):
        self.parts = parts
        self.gates = gates
        self.finisher = finisher
        self.policy = policy
        self.shedding = shedding  # the gates and the quote's line judge, dropped under load

    async def write(
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
                job = self._job(engine, message, reply, stream, claim)
                try:
                    await self._write_and_finish(job)
                finally:
                    if job.release is not None:
                        await job.release.settle()
                    if job.samples is not None:
                        job.samples.cancel()
        finally:
            stream.close()  # after the claim is let go: the customer may write again at once

    def _job(
        self,
        engine: Engine,
        message: AcceptedMessage,
        reply: PendingReply,
        stream: TurnStream,
        claim: TurnClaim,
    ) -> ReplyJob:
        scaffolding = ScaffoldFilter(self.parts.assembler.note_headings(message.bot.definition))
        checks = self.policy.checks_of(message.bot.definition.answers)
        samples = Samples(engine, message, checks.samples) if checks.held and checks.samples else None
        live = not self.policy.one_request_at_a_time
        release = CheckedRelease(stream, live=live) if checks.held else None
        job = ReplyJob(engine, message, reply, stream, claim.stop, scaffolding, checks, samples, release)
        if release is not None:
            self.finisher.attach_release(job)
        return job

    async def _write_and_finish(self, job: ReplyJob) -> None:
        try:
            generated = await self._generate(job)
            if isinstance(generated.outcome, HandOver):
                await self.finisher.hand_over(job, generated.outcome)
            else:
                await self.finisher.finish(job, generated)
        except Exception as error:
            logger.exception("reply %s failed", job.reply.message_id)
            await settlement.mark_failed(self.parts.new_work, job.reply.message_id, str(error))
            job.stream.put(Failed(job.reply.message_id, "generation_failed", FAILED_DETAIL))
            await self.parts.metrics.reply(Reply(job.message.bot.definition.slug, False))

    async def _generate(self, job: ReplyJob) -> Generated:
        """The engine's tokens, passed on once the gates pass and the opening is settled; cut
        short when a human takes over. The gates run beside the reply's prefill (unless the
        turn's requests go one at a time); the first token waits for their verdict."""
        gated_s = 0.0  # how long the gates kept the reply's request from starting
        gates: asyncio.Task[HandOver | None] | None = None
        if self.policy.one_request_at_a_time:
            waited = time.perf_counter()
            verdict = await self._gates(job)
            gated_s = time.perf_counter() - waited
            if verdict is not None:
                return Generated(verdict, gated_s)
        else:
            gates = asyncio.create_task(self._gates(job))
            await self._sample_beside(job)
        started = time.perf_counter()
        said = StreamAccumulator(len(job.reply.prompt))
        lines = LinesJudged(job.engine, job.message, self.shedding)
        items = job.tokens(job.reply.prompt, job.reply.max_tokens, f"reply-{job.reply.message_id}")
        try:
            async with contextlib.aclosing(items):  # closing aborts the engine's request if it still runs
                item = await _next(items)
                first_at = time.perf_counter()
                if gates is not None:  # the first token, or an empty reply: nothing shown yet
                    verdict, gates = await gates, None
                    if verdict is not None:
                        return Generated(verdict, time.perf_counter() - first_at)
                decided, item = await self._open(job, items, item, lines)
                if isinstance(decided, Release):
                    held_s = time.perf_counter() - first_at + gated_s
                    return Generated(await _show(job, items, item, decided.held, said), held_s)
        finally:
            if gates is not None and not gates.done():
                gates.cancel()  # its engine requests are aborted
            lines.cancel()
        assert not isinstance(decided, Release)
        return await self._instead(job, decided, said, time.perf_counter() - first_at + gated_s, started)

    async def _open(
        self, job: ReplyJob, items: AsyncIterator[Item], item: Item, lines: LinesJudged
    ) -> tuple[Release | Contradicted | Quoted, Item]:
        """The reply's first words held until its opening is settled, and what it came to."""
        watch = self._watch_for(job.message)
        if not watch.watching:
            return Release([item] if isinstance(item, TokenDelta) else []), item
        step = _see(watch, item, job.stop)
        while isinstance(step, Hold):
            if step.judge_lines:
                lines.start()
            item = await _next(items)
            if lines.found_none():  # the reply goes on as written whatever it says
                watch.no_line_answers()
            step = _see(watch, item, job.stop)
        decided: Release | Contradicted | Quoted | AskLines | AskOpening = step
        if isinstance(decided, AskOpening):
            verdict = await contradicted(job.engine, job.message, decided.opening, decided.word)
            decided = watch.opening_judged(verdict)
        if isinstance(decided, AskLines):
            decided = watch.lines_judged(await lines.verdict())
        return decided, item

    async def _instead(
        self,
        job: ReplyJob,
        decided: Contradicted | Quoted,
        said: StreamAccumulator,
        held_s: float,
        started: float,
    ) -> Generated:
        """The first reply was dropped unseen: a policy line quoted, a second try, or a person."""
        if isinstance(decided, Quoted):
            result = await quoted_reply(job, self.parts.assembler.format, decided.quote, said)
            return Generated(result, 0.0, second_try=decided.quote.reason, quoted=True)
        contradiction = decided.contradiction
        logger.info("reply %s dropped unseen: %s", job.reply.message_id, contradiction.reason)
        definition = job.message.bot.definition
        note_ids = retry_note_ids(self.parts.assembler, job.message, contradiction)
        room = self.parts.room_after([*job.message.context_ids, *note_ids])
        handing_over = definition.second_try is not None and definition.second_try.action == "handoff"
        if handing_over or room < MIN_REPLY_TOKENS:  # a second try needs room for its note
            hand_over = HandOver(definition.handoff.message, HandoffReason.DOUBT)
            return Generated(hand_over, held_s, second_try=contradiction.reason)
        max_model_len = self.parts.limits.max_model_len
        result = await write_again(job, self.parts.assembler, max_model_len, note_ids, started)
        return Generated(result, 0.0, note_ids, contradiction.reason)

    async def _sample_beside(self, job: ReplyJob) -> None:
        """The reply's samples asked for with it, to decode in the same engine steps."""
        if job.samples is None:
            return
        if self.shedding is None or await self.shedding.keeps("samples"):
            job.samples.start()
        else:
            job.samples.shed = True

    async def _gates(self, job: ReplyJob) -> HandOver | None:
        """The first gate that says hand over, or None; a gate that fails lets the reply through."""
        asked = job.message.bot.judges.keys() & {"handoff", "offer_made", "offer_accepted"}
        if self.gates and asked and self.shedding is not None and not await self.shedding.keeps("handoff"):
            return None
        for gate in self.gates:
            try:
                if (verdict := await gate(job.engine, job.message)) is not None:
                    return verdict
            except Exception:
                logger.exception("gate %s failed for message %s", gate, job.message.user.id)
        return None

    def _watch_for(self, message: AcceptedMessage) -> OpeningWatch:
        definition = message.bot.definition
        second_try = definition.second_try if self.policy.second_tries else None
        return OpeningWatch(
            openings=second_try.openings if second_try is not None else None,
            quoting=definition.quoting if self.policy.quotes else None,
            judge_lines_early=not self.policy.one_request_at_a_time,
        )


async def _next(items: AsyncIterator[Item]) -> Item:
    item = await anext(items, None)
    if item is None:
        raise RuntimeError("the engine stream ended without a result")
    return item


def _see(watch: OpeningWatch, item: Item, stop: asyncio.Event) -> Hold | AskOpening | AskLines | Release:
    delta = item if isinstance(item, TokenDelta) else None
    return watch.see(delta, ended=isinstance(item, GenerationResult), stopping=stop.is_set())


async def _show(
    job: ReplyJob, items: AsyncIterator[Item], item: Item, held: list[TokenDelta], said: StreamAccumulator
) -> GenerationResult:
    """The held tokens shown, then the rest of the reply as it comes."""
    for delta in held:
        said.add(delta.text, delta.token_ids)
        job.show(delta.text, delta.token_ids)
    if isinstance(item, GenerationResult):
        return item
    if job.stop.is_set():
        return said.interrupted()
    return await pass_on(items, said, job)
