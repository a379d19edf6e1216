"""Reading server-sent events as a client: the app's reply streams (benchmarks, tests) and
vLLM's streamed completions (remote replicas)."""

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSentEvent:
    event: str  # "message" when the server names none
    data: str


def parse_event(lines: Iterable[str]) -> ServerSentEvent | None:
    """One event from the lines of its block; None for a block without data (a comment, a ping)."""
    event, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return ServerSentEvent(event, "\n".join(data)) if data else None


def parse_sse(body: str) -> list[ServerSentEvent]:
    """Every event of a whole response body."""
    blocks = body.replace("\r\n", "\n").split("\n\n")
    return [event for block in blocks if (event := parse_event(block.split("\n")))]


async def read_sse(lines: AsyncIterator[str]) -> AsyncIterator[ServerSentEvent]:
    """Events as they arrive, from a response's lines (`httpx.Response.aiter_lines()`)."""
    block: list[str] = []
    async for line in lines:
        if line:
            block.append(line)
            continue
        if event := parse_event(block):
            yield event
        block = []
    if event := parse_event(block):
        yield event
