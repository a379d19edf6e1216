"""Reloading prompts/ in every app process: here first, then announced to the others."""

import logging
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from backend.bots.registry import BotRegistry
from backend.engine.live import LiveEngine
from backend.errors import InvalidInput
from backend.events.bus import PROMPTS_RELOADED, Event
from backend.prompting.definitions import BotDefinitionError
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


class PromptReloads:
    def __init__(
        self,
        bots: BotRegistry,
        engine: LiveEngine,
        new_work: Callable[[], AbstractAsyncContextManager[UnitOfWork]],
    ):
        self.bots = bots
        self.engine = engine
        self.new_work = new_work
        self.origin = uuid.uuid4().hex  # tells this process's own announcements apart

    async def reload(self, work: UnitOfWork) -> dict[str, dict[str, Any]]:
        """Changed prefixes are warmed before they take traffic; conversations keep their version."""
        try:
            reloaded = await self.bots.reload(work, self.engine.current)
        except BotDefinitionError as error:
            raise InvalidInput(f"prompts not reloaded: {error}") from error
        work.emit(Event(PROMPTS_RELOADED, "", {"origin": self.origin}))
        return reloaded

    async def follow(self, event: Event) -> None:
        """Another process reloaded: do the same here."""
        if event.data.get("origin") == self.origin:
            return
        try:
            async with self.new_work() as work:
                await self.bots.reload(work, self.engine.current)
        except Exception:
            logger.exception("prompts reload asked by another process failed")
