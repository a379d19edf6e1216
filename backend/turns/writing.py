"""One bot reply being written: what its stages share, and the stream of its tokens."""

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

from backend.engine.interface import Engine, GenerationResult, StreamAccumulator, TokenDelta
from backend.prompting.answers import AnswerChecks
from backend.turns.agreement import Samples
from backend.turns.decisions import AcceptedMessage, HandOver
from backend.turns.events import Token, TurnStream
from backend.turns.release import CheckedRelease
from backend.turns.scaffolding import ScaffoldFilter

DOUBTED = "doubted"  # the finish reason of a reply stopped by a lasting doubt


@dataclass(frozen=True)
class PendingReply:
    """A bot reply the request has stored as "generating"; its task fills it in."""

    message_id: int
    seq: int
    prompt: list[int]
    max_tokens: int


@dataclass(frozen=True)
class ReplyJob:
    """A reply being written: for which message, on which engine, to which stream."""

    engine: Engine
    message: AcceptedMessage
    reply: PendingReply
    stream: TurnStream
    stop: asyncio.Event  # set when a human takes over: the reply stops where it is
    visible: ScaffoldFilter = dataclasses.field(default_factory=lambda: ScaffoldFilter(()))
    checks: AnswerChecks = AnswerChecks("off")  # held until checked, unless "off"
    samples: Samples | None = None  # replies sampled to compare it with (`[answers] samples`)
    release: CheckedRelease | None = None  # a held reply's sentences, shown once checked

    def show(self, text: str, token_ids: Sequence[int] = ()) -> None:
        """Text of the reply streamed to the customer, without the prompt's scaffolding; while
        the reply is held until checked, a sentence at a time once it passes the checks."""
        if self.checks.held:
            if self.release is not None:
                self.release.feed(TokenDelta(text, list(token_ids)))
        elif shown := self.visible.feed(text):
            self.stream.put(Token(shown))

    def show_rest(self) -> None:
        """The reply has ended: what was held back as possible scaffolding is shown."""
        if not self.checks.held and (rest := self.visible.rest()):
            self.stream.put(Token(rest))

    def tokens(
        self, prompt: list[int], max_tokens: int, request_id: str
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        """The engine's stream for a prompt of this reply (its bot's salt, its conversation's replica)."""
        return self.engine.stream(
            prompt,
            max_tokens=max_tokens,
            request_id=request_id,
            cache_salt=self.message.bot.cache_salt,
            affinity_key=self.message.conversation.id,
        )


@dataclass(frozen=True)
class Generated:
    """What generating a reply came to: the reply, or a handover instead of it."""

    outcome: GenerationResult | HandOver
    held_s: float  # how long its first token was held back: for the gates, and its opening's check
    note_ids: list[int] = dataclasses.field(default_factory=list)  # a second try's note, before the reply
    second_try: str | None = None  # why the first reply was dropped unseen (a second try or a quote)
    quoted: bool = False  # the reply is the app's quote of policy lines (`quotes.py`), not the model's


async def pass_on(
    items: AsyncIterator[TokenDelta | GenerationResult], said: StreamAccumulator, job: ReplyJob
) -> GenerationResult:
    """The rest of a reply, passed on to the customer as it comes."""
    async for item in items:
        if isinstance(item, GenerationResult):
            return item
        said.add(item.text, item.token_ids)
        job.show(item.text, item.token_ids)
        if job.stop.is_set():
            return said.interrupted()
        if job.release is not None and job.release.doubt is not None:
            return said.cut_short(DOUBTED)  # no way on can be shown: the source is quoted now
    raise RuntimeError("the engine stream ended without a result")
