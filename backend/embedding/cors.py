"""CORS for the widget's API, on the allowed origins as they are now (admins change them at run
time), with a refusal that says what to do.

A page of another origin calls the widget API after the browser's preflight (OPTIONS) says it
may. For an origin that is not allowed the preflight gets a 403 in the API's error format, which
names the origin and the setting; the browser then blocks the call itself. Requests without an
Origin header (curl, servers) and same-origin requests pass through untouched.
"""

from typing import cast

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.api.deps import Provided
from backend.config import WIDGET_ORIGINS_SETTING
from backend.embedding.origins import AllowedOrigins

WIDGET_API = "/api/v1/widget/"
ORIGINS_API = "/api/v1/admin/widget-origins"
PREFLIGHT_MAX_AGE_S = 600


def not_allowed(origin: str) -> str:
    return (
        f"the origin {origin} is not allowed to use the chat widget: add it to {WIDGET_ORIGINS_SETTING} "
        f'or, without a restart, POST {{"origin": "{origin}"}} to {ORIGINS_API} (admin); scheme, host '
        "and port must match exactly"
    )


class WidgetCors:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None or origin == own_origin(scope, headers):
            return await self.app(scope, receive, send)
        preflight = scope["method"] == "OPTIONS" and "access-control-request-method" in headers
        if not scope["path"].startswith(WIDGET_API):
            if preflight:
                detail = f"only the widget API ({WIDGET_API}...) may be called from another origin"
                return await refuse("forbidden", detail)(scope, receive, send)
            return await self.app(scope, receive, send)
        origins = cast(Provided, scope["app"].state.provided).get(AllowedOrigins)
        if await origins.allows(origin):
            # Starlette speaks the CORS protocol; the decision about the origin is made above.
            cors = CORSMiddleware(
                self.app,
                allow_origins=[origin],
                allow_methods=["GET", "POST", "PUT"],
                allow_headers=["authorization", "content-type", "accept"],
                max_age=PREFLIGHT_MAX_AGE_S,
            )
            return await cors(scope, receive, send)
        if preflight:
            return await refuse("origin_not_allowed", not_allowed(origin))(scope, receive, send)
        await self.app(scope, receive, send)  # no CORS headers: the browser hides the answer


def own_origin(scope: Scope, headers: Headers) -> str:
    return f"{scope['scheme']}://{headers.get('host', '')}"


def refuse(code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=403)
