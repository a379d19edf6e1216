"""The FastAPI app: middleware, routers, error format; its lifespan starts and closes the services."""

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import FastAPI
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from backend.admin import audit_routes, erasure_routes
from backend.admin import routes as admin
from backend.agents import routes as agents
from backend.api import health, pages, widget_script
from backend.api.errors import install_error_handlers
from backend.api.limits import BodySizeLimit
from backend.api.methods import AllowedMethods
from backend.api.security import SecurityHeaders
from backend.config import Settings, get_settings
from backend.embedding import routes as widget_origins
from backend.embedding.cors import WidgetCors
from backend.engine.factory import EngineHeadStart, begin_engine
from backend.engine.interface import Engine
from backend.inbox import routes as inbox
from backend.metrics import routes as metrics
from backend.metrics.prometheus import HttpMetrics
from backend.reports import routes as reports
from backend.services import build_services
from backend.webhooks import routes as webhooks
from backend.widget import routes as widget

# How long a server that is stopping waits for open requests (a customer's reply stream)
# before it cancels them; the replies themselves are then drained and stored (Services.close).
SHUTDOWN_GRACE_S = 30


def _lifespan(
    settings: Settings, engine: Engine | None, head_start: EngineHeadStart | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's parts, built and started with it and closed after it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A head start passed in is its caller's to release (`prefixdesk serve`).
        begun_here = begin_engine(settings) if engine is None and head_start is None else None
        try:
            services = await build_services(settings, engine=engine, head_start=head_start or begun_here)
            app.state.services = services
            app.state.provided = services.provided()
            await services.start()
            try:
                yield
            finally:
                await services.close()
        finally:
            if begun_here is not None:
                begun_here.release_untaken()

    return lifespan


def create_app(
    settings: Settings | None = None,
    *,
    engine: Engine | None = None,
    head_start: EngineHeadStart | None = None,
) -> FastAPI:
    """The app. Pass `engine` to share one already-started engine (tests, benchmarks),
    `head_start` to serve on the engine begun loading before it (`prefixdesk serve`); else
    the embedded engine begins loading as the app starts."""
    settings = settings or get_settings()
    app = FastAPI(
        title="prefixdesk",
        version="0.1.0",
        lifespan=_lifespan(settings, engine, head_start),
        description="Customer-service chatbot on vLLM with automatic prefix caching.",
    )
    # Innermost, next to the routes: OPTIONS and 405s name every method a path accepts.
    app.add_middleware(AllowedMethods)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(HttpMetrics)
    app.add_middleware(SecurityHeaders)
    # Shops on other origins embed the widget; it sends the customer token as a header.
    app.add_middleware(WidgetCors)
    # Outermost: every part below sees the client a trusted proxy names (PREFIXDESK_TRUSTED_PROXIES).
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxies)
    app.include_router(widget_script.router)  # before the mount, which would shadow it
    app.mount("/static", pages.static_files(), name="static")
    for router in (
        health.router,
        pages.router,
        widget.router,
        inbox.router,
        inbox.events_router,
        agents.router,
        reports.router,
        webhooks.router,
        metrics.router,
        admin.router,
        erasure_routes.router,
        audit_routes.router,
        widget_origins.router,
    ):
        app.include_router(router)
    install_error_handlers(app)
    return app
