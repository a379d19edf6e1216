"""What a turn holds while it runs: a reply slot in this process, the conversation's turn lock,
and the flag that stops its reply.

Each is a context manager released in exactly one place, where its `with` ends. A turn
holds them for as long as its unit of work lasts (`TurnClaims.take`), and a turn that
generates a reply passes them on to its background task (`TurnClaim.pass_on`).
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from types import TracebackType

from backend.errors import TooManyRequests
from backend.turns.turn_lock import TurnLocks
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


class ReplySlots:
    """Replies queued or being written in this process, bounded: beyond the bound, waiting
    would only make every reply late, so the customer gets a 429."""

    def __init__(self, limit: int):
        self.limit = limit
        self.taken = 0

    @asynccontextmanager
    async def take(self) -> AsyncIterator[None]:
        # Checked and taken with no await between: concurrent requests cannot all pass.
        if self.taken >= self.limit:
            raise TooManyRequests(
                "the assistant is busy; try again in a few seconds", headers={"Retry-After": "5"}
            )
        self.taken += 1
        try:
            yield
        finally:
            self.taken -= 1
            assert 0 <= self.taken < self.limit, f"reply slots out of balance: {self.taken}"


class ReplyStops:
    """A flag per reply being written in this process; set when a human takes the conversation."""

    def __init__(self) -> None:
        # A set per conversation: one turn at a time is the lock's job, not this registry's.
        self._flags: dict[str, set[asyncio.Event]] = {}

    @contextmanager
    def watch(self, conversation_id: str) -> Iterator[asyncio.Event]:
        flag = asyncio.Event()
        self._flags.setdefault(conversation_id, set()).add(flag)
        try:
            yield flag
        finally:
            flags = self._flags[conversation_id]
            flags.discard(flag)
            if not flags:
                del self._flags[conversation_id]

    def stop(self, conversation_id: str) -> None:
        for flag in self._flags.get(conversation_id, ()):
            flag.set()


class TurnClaim:
    """A turn's slot, lock and stop flag, held together; `release` lets go of all of them."""

    def __init__(self, stack: AsyncExitStack, stop: asyncio.Event):
        self._stack = stack
        self.stop = stop

    def pass_on(self) -> "TurnClaim":
        """The same claim for a new holder (the reply's task); this one then holds nothing."""
        return TurnClaim(self._stack.pop_all(), self.stop)

    async def release(self) -> None:
        await self._stack.aclose()

    async def __aenter__(self) -> "TurnClaim":
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.release()


class TurnClaims:
    def __init__(self, slots: ReplySlots, locks: TurnLocks, stops: ReplyStops):
        self.slots = slots
        self.locks = locks
        self.stops = stops

    async def take(self, work: UnitOfWork, conversation_id: str) -> TurnClaim:
        """Claimed until `work` ends, unless passed on: 429 when busy, 409 while another turn runs."""
        stack = AsyncExitStack()
        try:
            await stack.enter_async_context(self.slots.take())
            await stack.enter_async_context(
                self.locks.hold(
                    conversation_id,
                    busy_message="a reply to this conversation is still being written; wait for it",
                )
            )
            stop = stack.enter_context(self.stops.watch(conversation_id))
        except BaseException:
            await stack.aclose()
            raise
        claim = TurnClaim(stack, stop)
        work.on_close(claim.release)
        return claim
