"""Prometheus metrics of this process: the app's own, and vLLM's (registered by its engine)."""

import time

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.metrics.store import Reply

SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)

http_requests = Counter("prefixdesk_http_requests", "HTTP requests", ["method", "route", "status"])
http_duration = Histogram(
    "prefixdesk_http_request_duration_seconds",
    "Time to the response start",
    ["method", "route"],
    buckets=SECONDS,
)
replies = Counter("prefixdesk_replies", "Bot replies", ["bot", "outcome"])
reply_ttft = Histogram(
    "prefixdesk_reply_time_to_first_token_seconds", "Bot reply time to first token", ["bot"], buckets=SECONDS
)
reply_duration = Histogram(
    "prefixdesk_reply_duration_seconds", "Bot reply total time", ["bot"], buckets=SECONDS
)
prompt_tokens = Counter("prefixdesk_prompt_tokens", "Prompt tokens of bot replies", ["bot"])
cached_tokens = Counter("prefixdesk_cached_tokens", "Prompt tokens served from the prefix cache", ["bot"])
# rate(stream tokens) / rate(stream seconds): how fast replies stream after their first token.
stream_tokens = Counter("prefixdesk_reply_stream_tokens", "Reply tokens after the first", ["bot"])
stream_seconds = Counter(
    "prefixdesk_reply_stream_seconds", "Time from a reply's first token to its last", ["bot"]
)

checks_shed = Counter(
    "prefixdesk_checks_shed", "Optional reply checks dropped under load (turns/shedding.py)", ["check"]
)


def observe_reply(reply: Reply) -> None:
    replies.labels(reply.bot, "ok" if reply.ok else "error").inc()
    if reply.ok:
        reply_ttft.labels(reply.bot).observe(reply.ttft_ms / 1000)
        reply_duration.labels(reply.bot).observe(reply.total_ms / 1000)
        prompt_tokens.labels(reply.bot).inc(reply.prompt_tokens)
        cached_tokens.labels(reply.bot).inc(reply.cached_tokens)
        stream_tokens.labels(reply.bot).inc(max(0, reply.completion_tokens - 1))
        stream_seconds.labels(reply.bot).inc(reply.stream_ms / 1000)


class HttpMetrics:
    """Counts requests by route template (not raw path, which would explode the label set)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500

        async def timed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                route = scope.get("route")
                path = getattr(route, "path", "unmatched")
                http_duration.labels(scope["method"], path).observe(time.perf_counter() - started)
                http_requests.labels(scope["method"], path, str(status)).inc()
            await send(message)

        await self.app(scope, receive, timed_send)
