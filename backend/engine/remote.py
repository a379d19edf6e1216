"""One `vllm serve` replica, or vLLM's router in front of several, spoken to over the
OpenAI-compatible `/v1/completions`.

Prompts go as token ids and replies come back as token ids (`return_token_ids`), so the
conversation stays append-only across the network exactly as with the embedded engine.
The replica must run with `--enable-prefix-caching --enable-prompt-tokens-details`: the
second makes it report each request's cached tokens.
"""

import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, NoReturn

import httpx

from backend.engine.interface import (
    LABEL_TOP_K,
    EngineUnavailable,
    GenerationResult,
    LabelRead,
    StreamAccumulator,
    TokenDelta,
    label_logprobs,
)
from backend.sse_reader import read_sse

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 5.0
SESSION_HEADER = "X-Session-Id"  # what vllm-router's consistent_hash reads first
BOT_HEADER = "X-Prefixdesk-Bot"  # the bot's slug, for a router that separates bots


class ReplicaUnavailable(EngineUnavailable):
    """The replica could not be reached, went away, or failed on its side (5xx)."""


class ReplicaRequestError(RuntimeError):
    """The replica refused the request itself (4xx): another replica would refuse it too."""


def cached_tokens(usage: dict[str, Any]) -> int:
    """The prompt tokens served from the replica's prefix cache, from a response's usage."""
    return int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)


class Replica:
    def __init__(
        self,
        url: str,
        *,
        temperature: float,
        timeout_s: float,
        session_header: str = SESSION_HEADER,
        health_path: str = "/health",
        bot_of: Callable[[str | None], str | None] = lambda salt: None,
        client: httpx.AsyncClient | None = None,
    ):
        self.url = url.rstrip("/")
        self.temperature = temperature
        self.session_header = session_header
        self.health_path = health_path
        self.bot_of = bot_of  # a request's bot, from its cache salt
        self.model: str | None = None  # the served model's name, from /v1/models
        self.max_model_len: int | None = None
        self.last_error = ""  # why the last probe failed
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s, connect=PROBE_TIMEOUT_S),
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=64),
        )

    def __repr__(self) -> str:
        return f"Replica({self.url})"

    async def probe(self) -> bool:
        """True if the replica answers its health path (and, the first time, says what it serves);
        if not, `last_error` says why."""
        try:
            response = await self._client.get(f"{self.url}{self.health_path}", timeout=PROBE_TIMEOUT_S)
            if response.status_code != 200:
                self.last_error = f"{self.health_path} answered {response.status_code}"
                return False
            if self.model is None:
                models = await self._client.get(f"{self.url}/v1/models", timeout=PROBE_TIMEOUT_S)
                models.raise_for_status()
                served = models.json()["data"][0]
                self.model, self.max_model_len = served["id"], served.get("max_model_len")
            return True
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as error:
            self.last_error = f"{type(error).__name__}: {error}"
            return False

    async def reset_prefix_cache(self) -> None:
        """Empty the replica's prefix cache (benchmarks; needs VLLM_SERVER_DEV_MODE=1 there)."""
        response = await self._client.post(f"{self.url}/reset_prefix_cache", timeout=PROBE_TIMEOUT_S)
        response.raise_for_status()

    async def aclose(self) -> None:
        await self._client.aclose()

    def _headers(self, session: str | None, cache_salt: str | None) -> dict[str, str]:
        """The session key a router in front of replicas routes on: the conversation's id, or,
        for a bot's prefix being warmed, the bot's salt (its warm-ups stay together); and the bot."""
        key = session or (f"prefix-{cache_salt}" if cache_salt else None)
        bot = self.bot_of(cache_salt)
        return {**({self.session_header: key} if key else {}), **({BOT_HEADER: bot} if bot else {})}

    def _body(
        self, prompt_ids: Sequence[int], max_tokens: int, request_id: str, cache_salt: str | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": list(prompt_ids),
            "max_tokens": max_tokens,
            # The same sampling as the embedded engine; explicit, so the model's
            # generation_config.json (which `vllm serve` applies by default) changes nothing.
            "temperature": self.temperature,
            "top_p": 1.0,
            "top_k": 0,
            "repetition_penalty": 1.0,
            "skip_special_tokens": True,
            "return_token_ids": True,
            "stream": True,
            "stream_options": {"include_usage": True},
            "request_id": request_id,
        }
        if cache_salt:
            body["cache_salt"] = cache_salt
        return body

    async def stream(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        session: str | None = None,
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        """`session` (the conversation) goes out in the session header, for a router before replicas."""
        body = self._body(prompt_ids, max_tokens, request_id or uuid.uuid4().hex, cache_salt)
        headers = self._headers(session, cache_salt)
        reply = StreamAccumulator(len(prompt_ids))
        try:
            # Leaving this block (the caller stopped reading) closes the connection, and
            # vLLM aborts a request whose client went away.
            completions = f"{self.url}/v1/completions"
            async with self._client.stream("POST", completions, json=body, headers=headers) as response:
                if response.status_code >= 400:
                    self._refuse(response.status_code, (await response.aread()).decode(errors="replace"))
                async for event in read_sse(response.aiter_lines()):
                    if event.data == "[DONE]":
                        continue
                    chunk = json.loads(event.data)
                    if "error" in chunk:
                        raise ReplicaUnavailable(f"{self.url} failed the request: {chunk['error']}")
                    for choice in chunk.get("choices") or ():
                        if delta := reply.add(choice.get("text") or "", choice.get("token_ids") or []):
                            yield delta
                        reply.finish_reason = choice.get("finish_reason") or reply.finish_reason
                    if usage := chunk.get("usage"):
                        reply.cached_tokens = cached_tokens(usage)
        except httpx.HTTPError as error:
            raise ReplicaUnavailable(f"{self.url}: {type(error).__name__}: {error}") from error
        yield reply.result()

    async def read_labels(
        self,
        prompt_ids: Sequence[int],
        labels: Sequence[int],
        *,
        request_id: str | None = None,
        cache_salt: str | None = None,
        session: str | None = None,
    ) -> LabelRead:
        """One greedy step that reports the log-probabilities of `labels` (from the top tokens')."""
        body = self._body(prompt_ids, 1, request_id or uuid.uuid4().hex, cache_salt)
        body.update(
            stream=False,
            temperature=0.0,
            logprobs=LABEL_TOP_K,
            return_tokens_as_token_ids=True,  # keys "token_id:<id>", not text that may collide
        )
        del body["stream_options"]
        headers = self._headers(session, cache_salt)
        started = time.perf_counter()
        try:
            response = await self._client.post(f"{self.url}/v1/completions", json=body, headers=headers)
        except httpx.HTTPError as error:
            raise ReplicaUnavailable(f"{self.url}: {type(error).__name__}: {error}") from error
        if response.status_code >= 400:
            self._refuse(response.status_code, response.text)
        try:
            answer = response.json()
            read = answer["choices"][0]["logprobs"]["top_logprobs"][0]
            top = {int(key.removeprefix("token_id:")): float(value) for key, value in read.items()}
            logprobs = label_logprobs(top, labels)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ReplicaUnavailable(f"{self.url} sent no label log-probabilities: {error}") from error
        cached = cached_tokens(answer.get("usage") or {})
        return LabelRead(logprobs, len(prompt_ids), cached, time.perf_counter() - started)

    async def sample(
        self,
        prompt_ids: Sequence[int],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        session: str | None = None,
    ) -> list[str]:
        """`n` sampled replies from one completion request (the prompt prefilled once)."""
        body = self._body(prompt_ids, max_tokens, request_id or uuid.uuid4().hex, cache_salt)
        body.update(stream=False, n=n, temperature=temperature, seed=seed, return_token_ids=False)
        del body["stream_options"]
        headers = self._headers(session, cache_salt)
        try:
            response = await self._client.post(f"{self.url}/v1/completions", json=body, headers=headers)
        except httpx.HTTPError as error:
            raise ReplicaUnavailable(f"{self.url}: {type(error).__name__}: {error}") from error
        if response.status_code >= 400:
            self._refuse(response.status_code, response.text)
        try:
            return [str(choice["text"]) for choice in response.json()["choices"]]
        except (KeyError, TypeError, ValueError) as error:
            raise ReplicaUnavailable(f"{self.url} sent no samples: {error}") from error

    def _refuse(self, status_code: int, detail: str) -> NoReturn:
        """A 5xx: this replica failed (another may not); a 4xx: the request itself was refused."""
        if status_code >= 500:
            raise ReplicaUnavailable(f"{self.url} answered {status_code}")
        raise ReplicaRequestError(f"{self.url} refused the request: {detail[:500]}")
