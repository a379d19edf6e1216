"""Drive one workload against one target and record every request."""

import asyncio
import time
from dataclasses import asdict, dataclass

from backend.bench.targets import Target
from backend.bench.workloads import Conversation, Workload


@dataclass
class Record:
    conversation: str
    turn: int
    ttft_ms: float
    total_ms: float
    prompt_tokens: int
    cached_tokens: int
    cacheable_tokens: int
    completion_tokens: int
    text: str
    first_sentence_ms: float | None = None


def cacheable(shared: int, prompt_tokens: int, block_size: int) -> int:
    """Tokens a prefix cache could serve: full blocks of what was computed before.

    The engine always computes the last prompt token itself.
    """
    return max(0, min(shared, prompt_tokens - 1)) // block_size * block_size


async def send_turn(
    target: Target, state, key: str, turn: int, text: str, shared: int, block_size: int
) -> tuple[Record, int]:
    """One customer message and its reply; the record, and the tokens computed before the next
    turn (`shared`: those computed before this one)."""
    reply = await target.send(state, text)
    record = Record(
        key,
        turn,
        round(reply.ttft_s * 1000, 1),
        round(reply.total_s * 1000, 1),
        reply.prompt_tokens,
        reply.cached_tokens,
        cacheable(shared, reply.prompt_tokens, block_size),
        reply.completion_tokens,
        reply.text,
        None if reply.first_sentence_s is None else round(reply.first_sentence_s * 1000, 1),
    )
    # The next prompt extends this one with the reply; the reply's last token was sampled,
    # never fed through the model, so its keys and values were not computed.
    return record, reply.prompt_tokens + reply.completion_tokens - 1


async def _converse(
    target: Target, conversation: Conversation, prefix_tokens: int, block_size: int, started: float
) -> list[Record]:
    state = await target.open(conversation)
    records = []
    # Before the first turn, only a bot's (warmed) fixed prefix has been computed.
    shared = prefix_tokens
    for turn, text in enumerate(conversation.turns):
        if conversation.arrivals is not None:
            await asyncio.sleep(max(0.0, started + conversation.arrivals[turn] - time.perf_counter()))
        record, shared = await send_turn(target, state, conversation.key, turn, text, shared, block_size)
        records.append(record)
    return records


async def drive(
    workload: Workload, target: Target, *, prefix_tokens: dict[str | None, int], block_size: int
) -> tuple[float, list[dict]]:
    """Run every conversation at once, or `workload.concurrency` at a time in their order (turns
    in order within each); total seconds and records."""
    started = time.perf_counter()
    slots = asyncio.Semaphore(workload.concurrency or max(1, len(workload.conversations)))

    async def converse(conversation: Conversation) -> list[Record]:
        async with slots:
            prefix = prefix_tokens.get(conversation.bot, 0)
            return await _converse(target, conversation, prefix, block_size, started)

    per_conversation = await asyncio.gather(*(converse(c) for c in workload.conversations))
    total_s = time.perf_counter() - started
    return total_s, [asdict(r) for records in per_conversation for r in records]
