"""The methods each path accepts, said whole: OPTIONS is answered with them (204 and `Allow`), and
a method the path does not accept gets a 405 whose `Allow` lists them all.

Starlette alone refuses with the `Allow` of the first route whose path matched, so a path served
by a GET route and a POST route said `Allow: GET` and answered OPTIONS with a 405. A browser's
cross-origin preflight never gets here: the widget's CORS answers or refuses it first.
"""

from collections.abc import Iterable

from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

READ_ONLY = frozenset({"GET", "HEAD"})  # what static files answer


def path_methods(routes: Iterable[BaseRoute], scope: Scope) -> set[str]:
    """Every method some route takes at this request's path (empty: no route has the path)."""
    methods: set[str] = set()
    for route in routes:
        match, _child = route.matches(scope)
        if match == Match.NONE:
            continue
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            methods |= READ_ONLY
        methods |= getattr(route, "methods", None) or set()
    return methods


def allow_header(methods: set[str]) -> str:
    return ", ".join(sorted(methods | {"OPTIONS"}))


class AllowedMethods:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        methods = path_methods(scope["app"].router.routes, scope)
        method = scope["method"]
        if not methods or method in methods:
            return await self.app(scope, receive, send)  # no such path (404), or a route takes it
        allow = {"Allow": allow_header(methods)}
        if method == "OPTIONS":
            return await Response(status_code=204, headers=allow)(scope, receive, send)
        detail = f"{method} is not allowed on {scope['path']}; it accepts {allow['Allow']}"
        refusal = {"error": "method_not_allowed", "detail": detail}
        await JSONResponse(refusal, status_code=405, headers=allow)(scope, receive, send)
