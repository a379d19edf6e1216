"""A written reply finished: checked, its sources named, stored, the session kept hot, counted;
or, when a gate said so, the handover message stored in its place."""

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Mapping, Sequence

from backend.conversations.models import HANDOVER, ConversationStatus
from backend.engine.interface import GenerationResult
from backend.knowledge.citations import Source, cited
from backend.metrics.store import Reply
from backend.prompting.openings import Openings, Start
from backend.turns import grounding, settlement
from backend.turns.agreement import SamplesAgree
from backend.turns.checks import MATCHING_LINES, FinishedReply, ReplyCheck, Review, merged, review_reply
from backend.turns.decisions import AcceptedMessage, HandOver
from backend.turns.events import Done, Token
from backend.turns.parts import ConversationParts
from backend.turns.session_cache import Session
from backend.turns.shedding import CheckShedding
from backend.turns.shown_sources import with_passages
from backend.turns.sources import SourcePicker
from backend.turns.writing import Generated, ReplyJob

logger = logging.getLogger(__name__)


class ReplyFinisher:
    def __init__(
        self,
        parts: ConversationParts,
        *,
        checks: Sequence[ReplyCheck],
        judged: Mapping[str, ReplyCheck] = {},
        strict_checks: Sequence[ReplyCheck] = (),
        source_picker: SourcePicker | None,
        shedding: CheckShedding | None = None,
    ):
        self.parts = parts
        self.checks = checks  # always run
        self.judged = judged  # the model's checks, by the name they are shed under
        self.strict_checks = strict_checks  # besides, for replies checked strictly
        self.source_picker = source_picker  # names the article a reply used when it cites none
        self.shedding = shedding  # None: no check is ever shed

    async def finish(self, job: ReplyJob, generated: Generated) -> None:
        written_at = time.perf_counter()  # its `total_s` after its start
        outcome = generated.outcome
        assert not isinstance(outcome, HandOver)
        message, assembler = job.message, self.parts.assembler
        interrupted = outcome.finish_reason == "interrupted"  # a human took over meanwhile
        text, sources = self._read(job, outcome.text)
        result = dataclasses.replace(outcome, text=text)
        context_ids = [*generated.note_ids, *assembler.reply(result.token_ids)]
        finished = FinishedReply(result.text, context_ids, written_tokens=len(result.token_ids))
        review = await self._final_review(job, finished, outcome.finish_reason, generated.quoted)
        withheld = None
        if job.checks.held and review.doubts:  # not shown: its sources are quoted instead
            withheld, result, finished = result.text, *await self._grounded(job, result, generated.note_ids)
        # A reply held until checked and cut short by a person: only what was checked is shown.
        shown = self._shown_so_far(job) if job.checks.held and interrupted else result.text
        self._show(job, shown)  # checked: shown before its sources are named and it is stored
        shown_as_written = withheld is None and not interrupted  # the quote is its own source
        if not sources and shown_as_written:
            sources = await self._sources_picked(job, finished)
        # Off the event loop, as the quote's lines: ranking by meaning encodes the question,
        # and waits for the bot's lines while they are still being encoded (after a start).
        cites = []
        if shown_as_written:
            cites = await asyncio.to_thread(with_passages, message, sources, result.text)
        status = await settlement.store_reply(
            self.parts.new_work, message, job.reply.message_id, result, finished, review, cites, withheld
        )
        session = Session([*message.context_ids, *finished.token_ids], job.reply.seq, result.text)
        await self.parts.context.remember(message.conversation.id, session)
        done = self._done(job, generated, result, status, review, cites, withheld, written_at)
        job.stream.put(dataclasses.replace(done, text=shown))
        if not interrupted:  # an interrupted reply has no meaningful timings
            ttft_ms, total_ms = result.ttft_s * 1000, result.total_s * 1000
            usage = (result.prompt_tokens, result.cached_tokens, len(result.token_ids))
            slug = message.bot.definition.slug
            await self.parts.metrics.reply(Reply(slug, True, ttft_ms, total_ms, *usage, total_ms - ttft_ms))

    async def _final_review(
        self, job: ReplyJob, finished: FinishedReply, finish_reason: str, quoted: bool
    ) -> Review:
        """No doubt for a reply a person cut short, nor for the app's quote of policy lines
        (their own words, `quotes.py`: its samples are dropped); the lasting doubt a reply was
        stopped by; else the whole reply's, once the check of its sentences still running is dropped.
        When nothing was checked as it was written, its sentences are now, in order: what
        they show, and a lasting doubt among them, are as if they had been."""
        release = job.release
        if release is not None:
            await release.settle()
        if quoted and job.samples is not None:
            job.samples.cancel()
        if finish_reason == "interrupted" or quoted:
            return Review()
        if release is None:
            return await self._review(job, finished)
        if release.doubt is not None:  # stopped by it (`DOUBTED`), or about to be
            if job.samples is not None:
                job.samples.cancel()
            return release.doubt
        review = await self._review(job, finished)
        if not release.live:
            await release.replay()
        return release.doubt or review

    def attach_release(self, job: ReplyJob) -> None:
        """A held reply's sentences read and reviewed as the whole reply is (`release.py`)."""
        assert job.release is not None
        job.release.attach(
            readable=lambda raw: self._read(job, raw)[0],
            review=functools.partial(self._review, job),
            reply_ids=self.parts.assembler.reply,
            answers_yes_or_no=functools.partial(_answers_yes_or_no, job.message.bot.definition.yes_no),
            says_something=functools.partial(_says_something, job.message),
            decode=self.parts.assembler.format.decode_text,
        )

    def _read(self, job: ReplyJob, raw: str) -> tuple[str, list[Source]]:
        """What the customer reads of the model's text, and the articles it cites. Token ids stay
        exact; a NUL the model wrote cannot be stored in a Postgres text column, and at
        temperature 0 every retry would write it again. The customer reads the reply without
        its `[article-id]` markers, and the articles they name (those of its help center only)
        as its sources; nor a note's heading the model repeated."""
        message = job.message
        text, sources = cited(raw.replace("\x00", "\ufffd"), message.knowledge.knowledge)
        return self.parts.assembler.without_note_headings(message.bot.definition, text), sources

    async def _review(self, job: ReplyJob, finished: FinishedReply) -> Review:
        """The reply, or a held reply so far, reviewed by its checks (chosen once per reply)."""
        checks = job.release.checks if job.release is not None else None
        if checks is None:
            strict = self.strict_checks if job.checks.strict else ()
            checks = [*await self._optional(job), *self.checks, *strict]
            if job.release is not None:
                job.release.checks = checks
        if finished.mid_sentence:  # the model's judges read whole sentences
            checks = [check for check in checks if check not in self.judged.values()]
        if not finished.whole:
            return await review_reply(checks, job.engine, job.message, finished)
        return await self._review_whole(job, checks, finished)

    @staticmethod
    async def _review_whole(job: ReplyJob, checks: Sequence[ReplyCheck], finished: FinishedReply) -> Review:
        """A whole reply any check doubts is not shown: one the other checks doubt does not wait
        for its samples, which lag a reply its drafts sped (by seconds, for a long one)."""
        started = time.perf_counter()
        sampled = [check for check in checks if isinstance(check, SamplesAgree)]
        others = [check for check in checks if not isinstance(check, SamplesAgree)]
        review = await review_reply(others, job.engine, job.message, finished)
        if review.doubts or not sampled:
            if job.samples is not None:
                job.samples.cancel()
            return review
        return merged([review, await review_reply(sampled, job.engine, job.message, finished)], started)

    async def _optional(self, job: ReplyJob) -> list[ReplyCheck]:
        """The model's checks for this reply, less those the load sheds now."""
        asked = job.message.bot.judges  # a judge the bot does not ask is not shed either
        checks = [check for name, check in self.judged.items() if name in asked and await self._keeps(name)]
        samples = job.samples
        # Asked for beside the reply (and so not shed then), or asked for now.
        if samples is not None and not samples.shed and (samples.task or await self._keeps("samples")):
            checks.append(SamplesAgree(samples))
        return checks

    async def _keeps(self, check: str) -> bool:
        return self.shedding is None or await self.shedding.keeps(check)

    async def _grounded(
        self, job: ReplyJob, result: GenerationResult, note_ids: list[int]
    ) -> tuple[GenerationResult, FinishedReply]:
        """In place of a doubted reply (after the sentences of it already shown and checked):
        the source lines that best match the question, quoted as such, with the offer of a
        person (the model wrote none of it)."""
        definition = job.message.bot.definition
        assert definition.fallback is not None
        lines = await asyncio.to_thread(definition.lines_to_quote, job.message.user.text)
        quote = definition.fallback.quote("\n".join(lines)) if lines else definition.fallback.unknown
        shown = self._shown_so_far(job)
        text = f"{shown}\n\n{quote}" if shown else quote
        ids = self.parts.assembler.format.encode_text(text)
        grounded = dataclasses.replace(result, text=text, token_ids=ids)
        return grounded, FinishedReply(text, [*note_ids, *self.parts.assembler.reply(ids)])

    @staticmethod
    def _shown_so_far(job: ReplyJob) -> str:
        return job.release.shown if job.release is not None else ""

    @staticmethod
    def _show(job: ReplyJob, text: str) -> None:
        """A reply held until checked is shown now, what of it was not yet (its checked
        sentences were as they came); a streamed one has its last words."""
        if not job.checks.held:
            job.show_rest()
        elif job.release is None:
            if text:
                job.stream.put(Token(text))
        elif rest := job.release.rest(text):
            job.stream.put(Token(rest))
            job.release.mark_shown(rest)

    @staticmethod
    def _done(
        job: ReplyJob,
        generated: Generated,
        result: GenerationResult,
        status: ConversationStatus,
        review: Review,
        cites: list[dict[str, str | None]],
        withheld: str | None,
        written_at: float,
    ) -> Done:
        if job.checks.held:  # its first word shows once its first sentence is checked
            first_shown_at = job.release.first_shown_at if job.release is not None else None
            shown_s = result.total_s + ((first_shown_at or time.perf_counter()) - written_at)
            shown_ms = shown_s * 1000
        else:
            shown_ms = result.ttft_s * 1000 + generated.held_s * 1000
        return Done.generated(
            job.reply.message_id,
            result,
            status,
            review.doubts,
            held_ms=round(generated.held_s * 1000, 1),
            checks_ms=round(review.seconds * 1000, 1),
            sources=cites,
            second_try=generated.second_try,
            shown_ms=round(shown_ms, 1),
            withheld=withheld is not None,
        )

    async def hand_over(self, job: ReplyJob, hand_over: HandOver) -> None:
        """A gate said hand over: the reply becomes the handover message, and a human takes it."""
        message, reply = job.message, job.reply
        reply_ids = self.parts.assembler.scripted_reply(hand_over.text)
        status = await settlement.store_hand_over(
            self.parts.new_work, message, reply.message_id, hand_over, reply_ids
        )
        session = Session([*message.context_ids, *reply_ids], reply.seq, hand_over.text)
        await self.parts.context.remember(message.conversation.id, session)
        job.stream.put(Token(hand_over.text))
        job.stream.put(
            Done(reply.message_id, hand_over.text, status.value, handoff=True, finish_reason=HANDOVER)
        )

    async def _sources_picked(self, job: ReplyJob, reply: FinishedReply) -> list[Source]:
        """The article a reply that cites none used, if its bot has a help center (a constrained
        choice of the model: `sources.py`); none if the choice cannot be made."""
        message = job.message
        if self.source_picker is None or message.knowledge.search is None:
            return []
        if not await self._keeps("sources"):
            return []
        try:
            return await self.source_picker.pick(
                job.engine,
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


def _answers_yes_or_no(openings: Openings | None, text: str) -> bool:
    return openings is not None and openings.answers_yes_or_no(text)


def _says_something(message: AcceptedMessage, text: str) -> bool:
    """The reply so far speaks to the question (`grounding.speaks_to_the_question`), or opens
    by saying the bot does not know: its answer, which what follows (the offer of a person, a
    guess) does not take back."""
    definition, question = message.bot.definition, message.user.text
    if definition.fallback is not None and definition.fallback.opening_of(text) is Start.YES:
        return True
    lines = definition.reference.matching(question, MATCHING_LINES)
    return grounding.speaks_to_the_question(text, lines, question, definition.language)
