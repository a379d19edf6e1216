"""What a client may send, bounded by what the database and the tokenizer accept.

Without these bounds a fuzzed id or a NUL in a message reaches Postgres and comes back
as a 500; with them the client gets a 422 that says what to change.
"""

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Path, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic import AfterValidator, Field
from starlette.exceptions import HTTPException

from backend.errors import InvalidInput

MAX_ROW_ID = 2**31 - 1  # ids are Postgres `integer` columns
MAX_PAGE = 1_000_000  # keeps OFFSET far inside Postgres' bigint


def storable(text: str) -> str:
    """Text Postgres can store and the tokenizer can read. Other control characters (tabs,
    newlines, even escape) are kept: they are the customer's text, shown as text."""
    if "\x00" in text:
        raise ValueError("NUL characters (\\u0000) are not allowed")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"not valid Unicode (a lone surrogate at position {error.start})") from None
    return text


StorableText = Annotated[str, AfterValidator(storable)]
RowId = Annotated[int, Field(ge=1, le=MAX_ROW_ID)]
RowIdPath = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
RowIdQuery = Annotated[int | None, Query(ge=1, le=MAX_ROW_ID)]
ConversationId = Annotated[StorableText, Path(max_length=36, description="The conversation's id (a UUID).")]
Page = Annotated[int, Query(ge=1, le=MAX_PAGE)]


class JsonRoute(APIRoute):
    """FastAPI answers a body that is not UTF-8 with a bare 400 outside the API's error format;
    it is an invalid body like any other undecodable JSON (422)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await handle(request)
            except HTTPException as error:
                cause = error.__cause__
                if isinstance(cause, UnicodeDecodeError):
                    raise InvalidInput(
                        f"the request body is not valid UTF-8 (byte {cause.start}: {cause.reason})"
                    ) from error
                raise

        return handler
