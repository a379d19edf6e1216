"""The engine the app serves on right now: none while the model loads or a dead engine restarts."""

import asyncio

from backend.engine.interface import Engine
from backend.errors import ServiceUnavailable


class LiveEngine:
    def __init__(self) -> None:
        self._engine: Engine | None = None
        self._attached = asyncio.Event()

    @property
    def ready(self) -> bool:
        return self._engine is not None

    @property
    def current(self) -> Engine | None:
        return self._engine

    def require(self) -> Engine:
        """The engine, or a 503 the client can retry."""
        if self._engine is None:
            raise ServiceUnavailable(
                "the model is still loading; try again shortly", headers={"Retry-After": "10"}
            )
        return self._engine

    async def wait(self) -> Engine:
        """The engine, once there is one."""
        while self._engine is None:
            await self._attached.wait()
        return self._engine

    def attach(self, engine: Engine) -> None:
        """Turns are taken from now on (the bots' prefixes may still be warming)."""
        self._engine = engine
        self._attached.set()

    def detach(self) -> None:
        """The engine died: refuse new turns (503) until a new one is attached."""
        self._engine = None
        self._attached.clear()
