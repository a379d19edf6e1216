"""One database transaction and what it announces.

Services add, change and flush rows and `emit` events; nothing commits but the owner of the
unit of work (the request's dependency, or a background task's own unit). On commit the
events' webhook deliveries are written in the same transaction, then the events are
published on the bus, then the after-commit actions run. On rollback nothing is announced.
"""

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.events.bus import Event, EventBus, publish_all
from backend.outbox.deliveries import stage_deliveries

logger = logging.getLogger(__name__)

Action = Callable[[], Awaitable[None]]


class UnitOfWork:
    def __init__(self, db: AsyncSession, bus: EventBus):
        self.db = db
        self._bus = bus
        self._events: list[Event] = []
        self._after_commit: list[Action] = []
        self._on_close: list[Action] = []

    def emit(self, *events: Event) -> None:
        """Announce `events` once (and only if) this unit commits."""
        self._events.extend(events)

    def after_commit(self, action: Action) -> None:
        self._after_commit.append(action)

    def on_close(self, action: Action) -> None:
        """Run `action` when the unit ends, committed or not (after the after-commit actions)."""
        self._on_close.append(action)

    async def commit(self) -> None:
        events, self._events = self._events, []
        await stage_deliveries(self.db, events)
        await self.db.commit()
        await publish_all(self._bus, events)
        actions, self._after_commit = self._after_commit, []
        for action in actions:
            await action()

    async def rollback(self) -> None:
        self._events, self._after_commit = [], []
        try:
            await self.db.rollback()
        except Exception as error:  # the connection is gone: nothing was committed anyway
            logger.warning("rollback failed: %s", error)

    async def close(self) -> None:
        actions, self._on_close = self._on_close, []
        for action in actions:
            try:
                await action()
            except Exception:
                logger.exception("a unit of work's closing action failed")


@asynccontextmanager
async def unit_of_work(
    sessions: async_sessionmaker[AsyncSession], bus: EventBus
) -> AsyncIterator[UnitOfWork]:
    """Commits when the block ends normally, rolls back when it raises."""
    async with sessions() as db:
        uow = UnitOfWork(db, bus)
        try:
            yield uow
            await uow.commit()
        except BaseException:
            await uow.rollback()
            raise
        finally:
            await uow.close()
