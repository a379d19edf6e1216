"""What a route gets from the app: its long-lived services by type, and one unit of work.

The app registers each long-lived object once (`Provided.add`); a route asks for one with
`Depends(provided(Kind))`. Every request that touches the database gets one `UnitOfWork`:
committed when the route returns, rolled back when it raises, before the response is sent.
"""

from collections.abc import AsyncIterator, Callable
from functools import cache
from typing import Annotated, Any, TypeVar, cast

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.events.bus import EventBus
from backend.unit_of_work import UnitOfWork, unit_of_work

T = TypeVar("T")


class Provided:
    """The app's long-lived objects, keyed by the type their users ask for."""

    def __init__(self) -> None:
        self._objects: dict[Any, object] = {}

    def add(self, kind: Any, instance: object) -> None:
        self._objects[kind] = instance

    def get(self, kind: type[T]) -> T:
        return cast(T, self._objects[kind])


def provided_in(request: Request) -> Provided:
    return cast(Provided, request.app.state.provided)


@cache
def provided(kind: type[T]) -> Callable[[Request], T]:
    """A dependency that hands a route the app's `kind`."""

    def dependency(request: Request) -> T:
        return provided_in(request).get(kind)

    dependency.__name__ = f"provided_{kind.__name__}"
    return dependency


async def request_unit_of_work(request: Request) -> AsyncIterator[UnitOfWork]:
    services = provided_in(request)
    sessions: async_sessionmaker[AsyncSession] = services.get(async_sessionmaker)
    async with unit_of_work(sessions, services.get(EventBus)) as uow:  # type: ignore[type-abstract]
        yield uow


# "function" scope: the unit ends when the route returns, before the response starts.
Work = Annotated[UnitOfWork, Depends(request_unit_of_work, scope="function")]
