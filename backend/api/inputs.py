"""What a client may send, bounded by what the database and the tokenizer accept.

Without these bounds a fuzzed id or a NUL in a message reaches Postgres and comes back
as a 500; with them the client gets a 422 that says what to change.
"""

import re
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Annotated, Any

from fastapi import Path, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError
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


# The schema says no NUL too (beside any pattern of the field's own), so clients and fuzzers know.
StorableText = Annotated[
    str, AfterValidator(storable), Field(json_schema_extra={"not": {"pattern": "\\x00"}})
]
# Some character that `str.strip()` keeps: spelled out, as `\S` reads differently in each regex
# engine (the app's, schemathesis', a client's). The schema says it; the services check it and
# refuse a blank message as "the message is empty".
NOT_BLANK = r"[^\t-\r\x1c- \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
MessageText = Annotated[StorableText, Field(json_schema_extra={"pattern": NOT_BLANK})]
RowId = Annotated[int, Field(ge=1, le=MAX_ROW_ID)]
RowIdPath = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
RowIdQuery = Annotated[int | None, Query(ge=1, le=MAX_ROW_ID)]
ConversationId = Annotated[StorableText, Path(max_length=36, description="The conversation's id (a UUID).")]
Page = Annotated[int, Query(ge=1, le=MAX_PAGE)]

# A day (its start, in UTC) or a date and time with its offset (RFC 3339): what the schema's
# `date` and `date-time` formats accept. Pydantic alone also reads a number as seconds since
# 1970, so `to=0.5` was a date.
_DAY_OR_MOMENT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?"
)


def day_or_moment(value: object) -> object:
    if isinstance(value, datetime) or (isinstance(value, str) and _DAY_OR_MOMENT.fullmatch(value)):
        return value
    raise PydanticCustomError(
        "day_or_moment",
        "not a date: write a day (2025-12-04) or a date and time with its offset (2025-12-04T09:30:00Z)",
    )


DayOrMoment = Annotated[
    datetime,
    BeforeValidator(day_or_moment),
    WithJsonSchema({"anyOf": [{"type": "string", "format": f} for f in ("date", "date-time")]}),
]


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
