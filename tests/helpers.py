"""Small helpers for a customer's and an agent's steps: over the widget API (the HTTP tier), or
straight through the app's services (the service tier)."""

import asyncio
import json
import re
import uuid
from datetime import datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from backend import sse_reader
from backend.agents import service as agents
from backend.agents.models import Agent, AgentRole
from backend.conversations import repository
from backend.conversations.customers import NewConversation
from backend.conversations.models import Conversation, Message
from backend.engine.interface import Engine, LabelRead
from backend.prompting.office_hours import DAYS
from backend.services import Services
from backend.turns.events import Accepted, Done, TurnEvent


def customer_turn(decoded: str) -> str:
    """A stored customer message as the model saw it, without the note of policy lines that may
    come before it (a system turn of the policy's own text: prompting/reference.py)."""
    if decoded.startswith("<|im_start|>system\n"):
        return decoded.partition("<|im_end|>\n")[2]
    return decoded


async def start(client: httpx.AsyncClient, bot: str = "shop-en", **body) -> dict:
    response = await client.post("/api/v1/widget/conversations", json={"bot": bot, **body})
    assert response.status_code == 201, response.text
    return response.json()


def auth(conversation: dict) -> dict[str, str]:
    return {"Authorization": f"Bearer {conversation['customer_token']}"}


def parse_sse(body: str) -> list[tuple[str, dict]]:
    return [(event.event, json.loads(event.data)) for event in sse_reader.parse_sse(body)]


async def send(client: httpx.AsyncClient, conversation: dict, text: str) -> list[tuple[str, dict]]:
    """Send a message and read the whole SSE reply."""
    response = await client.post(
        f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
        json={"text": text},
        headers=auth(conversation),
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def done_event(events: list[tuple[str, dict]]) -> dict:
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "accepted" and kinds[-1] == "done", kinds
    return events[-1][1]


# -- the service tier: the same steps, straight through the app's services -------------------


async def open_conversation(
    services: Services, bot: str = "shop-en", context: dict[str, Any] | None = None
) -> NewConversation:
    """A customer starts a conversation, as the widget route does (in a unit of work of its own)."""
    async with services.new_work() as work:
        return await services.customers.start(work, bot, context)


async def take_turn(services: Services, conversation_id: str, text: str) -> list[TurnEvent]:
    """A customer's message, as the widget route takes it, and every event of its turn."""
    async with services.new_work() as work:
        turn = await services.turns.take(work, conversation_id, text)
    return [event async for event in turn.events()]


async def first_turn(services: Services, text: str) -> tuple[str, list[TurnEvent]]:
    """A new conversation's id and the events of its first turn."""
    conversation_id = (await open_conversation(services)).conversation.id
    return conversation_id, await take_turn(services, conversation_id, text)


def done_of(events: list[TurnEvent]) -> Done:
    assert isinstance(events[0], Accepted) and isinstance(events[-1], Done), events
    return events[-1]


async def stored(services: Services, conversation_id: str) -> tuple[Conversation, list[Message]]:
    """The conversation's row and its messages, as stored now."""
    async with services.new_work() as work:
        conversation = await repository.require_conversation(work.db, conversation_id, fresh=True)
        return conversation, await repository.list_messages(work.db, conversation_id)


async def new_agent(services: Services, role: AgentRole = AgentRole.AGENT) -> Agent:
    async with services.new_work() as work:
        return await agents.create_agent(
            work.db,
            name=f"{role.value} {uuid.uuid4().hex[:6]}",
            email=f"{uuid.uuid4().hex}@example.com",
            role=role,
            by=None,
        )


async def assert_released(services: Services, conversation_id: str) -> None:
    """The turn let go of its reply slot and its lock: another turn may start at once."""
    assert services.claims.slots.taken == 0
    async with services.claims.locks.hold(conversation_id, busy_message="the turn lock is still held"):
        pass


class WrappedEngine:
    """The session's engine with something changed by a subclass; everything else passed on."""

    def __init__(self, inner: Engine):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def stream(self, prompt_ids, **options):
        return self.inner.stream(prompt_ids, **options)


class RecordsRequests(WrappedEngine):
    """The real engine, noting when each request starts and ends, or is cancelled."""

    def __init__(self, inner):
        super().__init__(inner)
        self.log: list[tuple[str, str]] = []

    async def read_labels(self, prompt_ids, labels, *, request_id=None, **options):
        self.log.append(("start", str(request_id)))
        event = "end"
        try:
            return await self.inner.read_labels(prompt_ids, labels, request_id=request_id, **options)
        except asyncio.CancelledError:
            event = "cancelled"
            raise
        finally:
            self.log.append((event, str(request_id)))

    async def stream(self, prompt_ids, **options):
        request_id = str(options.get("request_id"))
        self.log.append(("start", request_id))
        async for item in self.inner.stream(prompt_ids, **options):
            yield item
        self.log.append(("end", request_id))

    def when(self, event: str, prefix: str) -> int:
        return next(n for n, (e, name) in enumerate(self.log) if e == event and name.startswith(prefix))

    def requests(self, event: str, prefix: str) -> list[str]:
        return [name for e, name in self.log if e == event and name.startswith(prefix)]


class HeldReplies(WrappedEngine):
    """Replies (not warm-ups) wait until the test lets them go: a turn stays running meanwhile."""

    def __init__(self, inner: Engine):
        super().__init__(inner)
        self.go = asyncio.Event()

    async def stream(self, prompt_ids, **options):
        if str(options.get("request_id", "")).startswith("reply-"):
            await self.go.wait()
        async for item in self.inner.stream(prompt_ids, **options):
            yield item


class PacedReplies(WrappedEngine):
    """Replies come a delta every `pace_s`: a reply of 1,000 tokens lasts for seconds however
    fast the tiny model drafts, so what a test does mid-reply happens mid-reply."""

    def __init__(self, inner: Engine, pace_s: float = 0.05):
        super().__init__(inner)
        self.pace_s = pace_s

    async def stream(self, prompt_ids, **options):
        paced = str(options.get("request_id", "")).startswith("reply-")
        async for item in self.inner.stream(prompt_ids, **options):
            if paced:
                await asyncio.sleep(self.pace_s)
            yield item


class ScriptedJudges(WrappedEngine):
    """The tiny engine, with its yes/no questions answered by a script: its random weights
    would answer them arbitrarily. A customer asks for a person when the message says "a human",
    "real person" or 转人工; every reply answered and is supported. Replies stay the model's.

    The judges' own mechanics run on the real engine in tests/judges/test_judges.py.
    """

    ASKS_FOR_PERSON = re.compile(r"a human|real person|转人工", re.IGNORECASE)

    def __init__(self, inner: Engine, decode):
        super().__init__(inner)
        self.decode = decode

    async def read_labels(self, prompt_ids, labels, *, request_id=None, **options):
        yes = False
        if str(request_id).startswith("handoff-"):
            yes = bool(self.ASKS_FOR_PERSON.search(self.decode(list(prompt_ids[-80:]))))
        elif str(request_id).startswith("supported-"):
            yes = True
        says_yes = [self.decode([label]).strip().lower() == "yes" for label in labels]
        logprobs = tuple(0.0 if label_is_yes == yes else -20.0 for label_is_yes in says_yes)
        return LabelRead(logprobs, len(prompt_ids), 0, 0.0)


def prefix_tokens(settings, bot: str = "shop-en") -> int:
    """How many tokens `bot`'s fixed prefix has on the settings' model and prompts."""
    from transformers import AutoTokenizer

    from backend.prompting.assembler import PromptAssembler
    from backend.prompting.chat_format import ChatFormat
    from backend.prompting.definitions import load_bot

    assembler = PromptAssembler(ChatFormat(AutoTokenizer.from_pretrained(settings.model)))
    return len(assembler.bot_prefix(load_bot(settings.prompts_dir / bot)).token_ids)


def add_office_hours(prompts: Path, bot: str, hours: list[str], timezone: str = "Europe/Amsterdam") -> None:
    """Office hours appended to a copied bot's bot.toml."""
    path = prompts / bot / "bot.toml"
    table = f'\n[office_hours]\ntimezone = "{timezone}"\nhours = {json.dumps(hours)}\n'
    path.write_text(path.read_text(encoding="utf-8") + table, encoding="utf-8")


def away_until_in_two_days(timezone: str) -> tuple[list[str], datetime]:
    """Office hours that are closed now: one hour, in two days; and when they open."""
    today = datetime.now(ZoneInfo(timezone)).date()
    day = today + timedelta(days=2)
    return [f"{DAYS[day.weekday()]} 09:00-10:00"], datetime.combine(day, time(9), tzinfo=ZoneInfo(timezone))


ALWAYS_OPEN = ["mon-sun 00:00-24:00"]
