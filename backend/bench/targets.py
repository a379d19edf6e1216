"""The three ways one request can be served, behind one interface.

- `AppTarget`: the whole product, over HTTP through the widget API (SSE replies);
- `EngineTarget`: vLLM's AsyncLLM in this process, through the app's engine wrapper;
- `PeerTarget`: vLLM's own OpenAI-compatible server, `/v1/completions` with token-id prompts,
  through the app's own replica client.

Times are taken the same way for all three, on the client side: from sending the request to
the first streamed token (TTFT) and to the end of the reply. The bare engine's also to the end
of its first sentence: the app shows a held reply only once its first sentence is written and
checked (`turns/release.py`), so that is the earliest a checked word can be shown.
"""

import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from backend.bench.prompt_ids import PromptIds
from backend.bench.workloads import Conversation
from backend.engine.interface import GenerationResult
from backend.engine.remote import Replica
from backend.sse_reader import read_sse
from backend.turns.sentences import completes_sentence


@dataclass
class Reply:
    ttft_s: float
    total_s: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    text: str
    first_sentence_s: float | None = None  # to a whole first sentence or the end (bare engine)


class Target(Protocol):
    async def open(self, conversation: Conversation) -> Any: ...

    async def send(self, state: Any, text: str) -> Reply: ...


class EngineTarget:
    def __init__(self, engine, ids: PromptIds, max_tokens: int):
        self.engine, self.ids, self.max_tokens = engine, ids, max_tokens

    async def open(self, conversation: Conversation):
        return self.ids.opening(conversation)

    async def send(self, history, text: str) -> Reply:
        prompt = self.ids.prompt(history, text)
        started = time.perf_counter()
        first = sentence = None
        written = ""
        async for item in self.engine.stream(prompt, max_tokens=self.max_tokens, cache_salt=history.salt):
            if first is None:
                first = time.perf_counter()
            if isinstance(item, GenerationResult):
                result = item
                continue
            if sentence is None and completes_sentence(written, item.text):
                sentence = time.perf_counter()
            written = item.text  # the piece before the next: a stop then a space ends a sentence
        ended = time.perf_counter()
        self.ids.add_reply(history, result.token_ids)
        return Reply(
            (first or ended) - started,
            ended - started,
            len(prompt),
            result.cached_tokens,
            len(result.token_ids),
            result.text,
            (sentence or ended) - started,
        )


class AppTarget:
    def __init__(self, client: httpx.AsyncClient):
        self.client = client

    async def open(self, conversation: Conversation):
        if conversation.bot is None:
            raise ValueError("the app always opens with a bot's prefix; this scenario has none")
        response = await self.client.post("/api/v1/widget/conversations", json={"bot": conversation.bot})
        response.raise_for_status()
        body = response.json()
        return body["conversation_id"], {"Authorization": f"Bearer {body['customer_token']}"}

    async def send(self, state, text: str) -> Reply:
        conversation_id, headers = state
        url = f"/api/v1/widget/conversations/{conversation_id}/messages"
        started = time.perf_counter()
        first = None
        async with self.client.stream("POST", url, json={"text": text}, headers=headers) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"app answered {response.status_code}: {response.text[:300]}")
            async for event in read_sse(response.aiter_lines()):
                kind, data = event.event, event.data
                if kind == "token" and first is None:
                    first = time.perf_counter()
                elif kind == "done":
                    done = json.loads(data)
                    if done.get("handoff"):
                        raise RuntimeError(f"the bot handed the conversation over: {done}")
                    ended = time.perf_counter()
                    return Reply(
                        (first or ended) - started,
                        ended - started,
                        done["prompt_tokens"],
                        done["cached_tokens"],
                        done["completion_tokens"],
                        done["text"],
                    )
                elif kind in ("error", "waiting"):
                    raise RuntimeError(f"no reply: {kind} {data}")
        raise RuntimeError("the reply stream ended without a done event")


class PeerTarget:
    """vLLM's own server, through the client the app's remote mode uses."""

    def __init__(self, replica: Replica, ids: PromptIds, max_tokens: int):
        self.replica, self.ids, self.max_tokens = replica, ids, max_tokens

    async def open(self, conversation: Conversation):
        return self.ids.opening(conversation)

    async def send(self, history, text: str) -> Reply:
        prompt = self.ids.prompt(history, text)
        result = await self.complete(prompt, history.salt, self.max_tokens)
        self.ids.add_reply(history, result.token_ids)
        return Reply(
            result.ttft_s,
            result.total_s,
            result.prompt_tokens,
            result.cached_tokens,
            len(result.token_ids),
            result.text,
        )

    async def complete(self, prompt: list[int], salt: str | None, max_tokens: int) -> GenerationResult:
        async for item in self.replica.stream(prompt, max_tokens=max_tokens, cache_salt=salt):
            if isinstance(item, GenerationResult):
                return item
        raise RuntimeError("the peer's stream ended without a result")
