"""The three ways one request can be served, behind one interface.

- `AppTarget`: the whole product, over HTTP through the widget API (SSE replies);
- `EngineTarget`: vLLM's AsyncLLM in this process, through the app's engine wrapper;
- `PeerTarget`: vLLM's own OpenAI-compatible server, `/v1/completions` with token-id prompts.

Times are taken the same way for all three, on the client side: from sending the request to
the first streamed token (TTFT) and to the end of the reply.
"""

import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from backend.bench.prompt_ids import PromptIds
from backend.bench.workloads import Conversation


@dataclass
class Reply:
    ttft_s: float
    total_s: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    text: str


class Target(Protocol):
    async def open(self, conversation: Conversation) -> Any: ...

    async def send(self, state: Any, text: str) -> Reply: ...


class EngineTarget:
    def __init__(self, engine, ids: PromptIds, max_tokens: int):
        self.engine, self.ids, self.max_tokens = engine, ids, max_tokens

    async def open(self, conversation: Conversation):
        return self.ids.opening(conversation)

    async def send(self, history, text: str) -> Reply:
        from backend.engine.vllm_engine import GenerationResult

        prompt = self.ids.prompt(history, text)
        started = time.perf_counter()
        first = None
        async for item in self.engine.stream(prompt, max_tokens=self.max_tokens, cache_salt=history.salt):
            if first is None:
                first = time.perf_counter()
            if isinstance(item, GenerationResult):
                result = item
        ended = time.perf_counter()
        self.ids.add_reply(history, result.token_ids)
        return Reply(
            (first or ended) - started,
            ended - started,
            len(prompt),
            result.cached_tokens,
            len(result.token_ids),
            result.text,
        )


def sse_events(lines: list[str]) -> tuple[str, str] | None:
    """One server-sent event from its lines: (event name, data)."""
    kind, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return (kind, "\n".join(data)) if data else None


async def read_sse(response: httpx.Response):
    lines: list[str] = []
    async for line in response.aiter_lines():
        if line:
            lines.append(line)
            continue
        event = sse_events(lines)
        lines = []
        if event:
            yield event
    if lines and (event := sse_events(lines)):
        yield event


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
            async for kind, data in read_sse(response):
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
    def __init__(self, client: httpx.AsyncClient, ids: PromptIds, max_tokens: int, model: str):
        self.client, self.ids, self.max_tokens, self.model = client, ids, max_tokens, model

    async def open(self, conversation: Conversation):
        return self.ids.opening(conversation)

    def request(self, prompt: list[int], salt: str | None, max_tokens: int) -> dict:
        body = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            # Greedy, as the app: override the sampling defaults of the model's generation config.
            "temperature": 0.0,
            "top_p": 1.0,
            "top_k": 0,
            "repetition_penalty": 1.0,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_token_ids": True,
        }
        if salt:
            body["cache_salt"] = salt
        return body

    async def send(self, history, text: str) -> Reply:
        prompt = self.ids.prompt(history, text)
        reply = await self.complete(prompt, history.salt, self.max_tokens)
        self.ids.add_reply(history, reply.pop("token_ids"))
        return Reply(**reply)

    async def complete(self, prompt: list[int], salt: str | None, max_tokens: int) -> dict:
        started = time.perf_counter()
        first = None
        token_ids: list[int] = []
        text: list[str] = []
        usage: dict = {}
        body = self.request(prompt, salt, max_tokens)
        async with self.client.stream("POST", "/v1/completions", json=body) as response:
            if response.status_code != 200:
                await response.aread()
                raise RuntimeError(f"peer answered {response.status_code}: {response.text[:300]}")
            async for _kind, data in read_sse(response):
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                for choice in chunk.get("choices", []):
                    if choice.get("token_ids") and first is None:
                        first = time.perf_counter()
                    token_ids += choice.get("token_ids") or []
                    text.append(choice.get("text") or "")
                usage = chunk.get("usage") or usage
        ended = time.perf_counter()
        details = usage.get("prompt_tokens_details") or {}
        return {
            "ttft_s": (first or ended) - started,
            "total_s": ended - started,
            "prompt_tokens": usage.get("prompt_tokens", len(prompt)),
            "cached_tokens": details.get("cached_tokens") or 0,
            "completion_tokens": len(token_ids),
            "text": "".join(text),
            "token_ids": token_ids,
        }
