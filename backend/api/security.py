"""Security headers: on every response, and a strict content security policy on our pages."""

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Scripts only from this server (no inline code, no eval); styles may be inline because the
# widget styles its shadow root with a <style> element it creates.
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
)
# The OpenAPI pages load their assets from a CDN; they keep the general headers only.
NO_PAGE_POLICY = ("/docs", "/redoc")


class SecurityHeaders:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "strict-origin-when-cross-origin")
                is_page = headers.get("content-type", "").startswith("text/html")
                if is_page and not scope["path"].startswith(NO_PAGE_POLICY):
                    headers.setdefault("Content-Security-Policy", PAGE_POLICY)
                    headers.setdefault("X-Frame-Options", "DENY")
            await send(message)

        await self.app(scope, receive, with_headers)
