"""What a customer's reply stream says, as typed events, and the stream itself.

On the wire each is a server-sent event: `accepted`, then `token`... and `done`, or
`waiting` (a human will answer), or `error`.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from backend.conversations.models import ConversationStatus
from backend.engine.interface import GenerationResult


@dataclass(frozen=True)
class TurnEvent:
    name: ClassVar[str]

    def data(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}

    def sse(self) -> dict[str, str]:
        return {"event": self.name, "data": json.dumps(self.data(), ensure_ascii=False)}


@dataclass(frozen=True)
class Accepted(TurnEvent):
    """The message is stored; a bot reply, if one follows, has this id."""

    name = "accepted"
    user_message_id: int
    reply_message_id: int | None = None


@dataclass(frozen=True)
class Token(TurnEvent):
    name = "token"
    text: str


@dataclass(frozen=True)
class Waiting(TurnEvent):
    """A human has the conversation: the bot stays silent."""

    name = "waiting"
    status: str
    detail: str = "a member of our team will reply here"


@dataclass(frozen=True)
class Done(TurnEvent):
    """The reply, whole; for a generated reply, also what it cost."""

    name = "done"
    message_id: int
    text: str
    status: str
    handoff: bool
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    finish_reason: str | None = None
    doubt: str | None = None  # why the reply may be wrong, if the checks found a reason
    held_ms: float | None = None  # how long the first token waited for the gates and the opening check
    checks_ms: float | None = None  # what the reply checks took after the reply
    sources: list[dict[str, str | None]] | None = None  # the articles it cites: id, title, url
    second_try: str | None = None  # why a first reply was dropped unseen and this one written instead
    # When the customer saw the reply's first word, from the engine's start: its first token
    # after the gates, or its first sentence once checked when it is held until checked.
    shown_ms: float | None = None
    withheld: bool = False  # the checks doubted the model's reply: its sources were quoted instead

    @classmethod
    def generated(
        cls,
        message_id: int,
        result: GenerationResult,
        status: ConversationStatus,
        doubts: tuple[str, ...] = (),
        *,
        held_ms: float | None = None,
        checks_ms: float | None = None,
        sources: list[dict[str, str | None]] | None = None,
        second_try: str | None = None,
        shown_ms: float | None = None,
        withheld: bool = False,
    ) -> "Done":
        return cls(
            message_id=message_id,
            text=result.text,
            status=status.value,
            handoff=status != ConversationStatus.BOT,
            prompt_tokens=result.prompt_tokens,
            cached_tokens=result.cached_tokens,
            completion_tokens=len(result.token_ids),
            ttft_ms=round(result.ttft_s * 1000, 1),
            total_ms=round(result.total_s * 1000, 1),
            finish_reason=result.finish_reason,
            doubt="; ".join(doubts) or None,
            held_ms=held_ms,
            checks_ms=checks_ms,
            sources=sources or None,
            second_try=second_try,
            shown_ms=shown_ms,
            withheld=withheld,
        )


@dataclass(frozen=True)
class Failed(TurnEvent):
    name = "error"
    message_id: int
    code: str
    detail: str


class TurnStream:
    """The events of one turn, from whoever produces them to the customer's response."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()

    @classmethod
    def of(cls, *events: TurnEvent) -> "TurnStream":
        """A turn whose events are all known already (no reply is being generated)."""
        stream = cls()
        for event in events:
            stream.put(event)
        stream.close()
        return stream

    def put(self, event: TurnEvent) -> None:
        self._queue.put_nowait(event)

    def close(self) -> None:
        self._queue.put_nowait(None)

    async def events(self) -> AsyncIterator[TurnEvent]:
        while (event := await self._queue.get()) is not None:
            yield event
