"""The FastAPI app; its lifespan owns the database, Redis, the event bus and the engine."""

import asyncio
import contextlib
import logging
from contextlib import asynccontextmanager
from http import HTTPStatus
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException

from backend.agents import routes as agents
from backend.api import health, pages, widget_script
from backend.api.limits import BodySizeLimit
from backend.api.rate_limits import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from backend.api.security import SecurityHeaders
from backend.config import Settings, get_settings
from backend.conversations import routes as widget
from backend.conversations.context import ConversationContext
from backend.conversations.service import ChatService
from backend.conversations.session_store import MemorySessionStore, RedisSessionStore, SessionStore
from backend.db import create_db_engine, create_session_factory
from backend.engine.factory import start_engine as start_configured_engine
from backend.engine.model_store import resolve_model_dir
from backend.engine.supervisor import EngineSupervisor
from backend.engine.vllm_engine import Engine
from backend.errors import AppError
from backend.events import routes as events
from backend.events.bus import EventBus, MemoryEventBus, RedisEventBus
from backend.inbox import routes as inbox
from backend.inbox.service import InboxService
from backend.metrics import routes as metrics_routes
from backend.metrics.prometheus import HttpMetrics
from backend.metrics.recorder import Metrics
from backend.metrics.store import MemoryMetricsStore, MetricsStore, RedisMetricsStore
from backend.prompting import routes as prompt_routes
from backend.prompting.assembler import PromptAssembler
from backend.prompting.chat_format import ChatFormat
from backend.reports import routes as reports
from backend.webhooks import routes as webhooks
from backend.webhooks.worker import WebhookWorker

logger = logging.getLogger(__name__)


def create_session_store(settings: Settings) -> SessionStore:
    if settings.redis_url:
        return RedisSessionStore(
            settings.redis_url, ttl_s=settings.session_ttl_seconds, key_prefix=settings.redis_key_prefix
        )
    return MemorySessionStore(settings.session_ttl_seconds)


def create_event_bus(settings: Settings) -> EventBus:
    if settings.redis_url:
        return RedisEventBus(settings.redis_url, channel=f"{settings.redis_key_prefix}events")
    return MemoryEventBus()


def create_metrics_store(settings: Settings) -> MetricsStore:
    if settings.redis_url:
        return RedisMetricsStore(settings.redis_url, key_prefix=settings.redis_key_prefix)
    return MemoryMetricsStore()


def create_rate_limiter(settings: Settings) -> RateLimiter:
    if settings.redis_url:
        return RedisRateLimiter(settings.redis_url, key_prefix=settings.redis_key_prefix)
    return MemoryRateLimiter()


def load_tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def create_chat_service(settings: Settings, sessions, tokenizer) -> ChatService:
    """The chat service and what it stands on (session store, event bus, metrics), from settings."""
    return ChatService(
        settings=settings,
        sessions=sessions,
        context=ConversationContext(create_session_store(settings), lock_ttl_s=settings.turn_lock_ttl_s),
        events=create_event_bus(settings),
        assembler=PromptAssembler(ChatFormat(tokenizer)),
        metrics=Metrics(create_metrics_store(settings)),
    )


def create_app(settings: Settings | None = None, *, engine: Engine | None = None) -> FastAPI:
    """The app. Pass `engine` to share one already-started engine (tests, benchmarks)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        db_engine = create_db_engine(settings.database_url)
        sessions = create_session_factory(db_engine)
        model_dir = resolve_model_dir(settings.model, settings.cache_dir)
        tokenizer = await asyncio.to_thread(load_tokenizer, model_dir)
        chat = create_chat_service(settings, sessions, tokenizer)
        bus, metrics = chat.events, chat.metrics
        await chat.sync_bots()
        worker = WebhookWorker(
            sessions,
            max_attempts=settings.webhook_max_attempts,
            backoff_base_s=settings.webhook_backoff_base_s,
            poll_interval_s=settings.webhook_poll_interval_s,
        )
        app.state.sessions, app.state.events, app.state.metrics = sessions, bus, metrics
        app.state.chat, app.state.inbox = chat, InboxService(chat)
        app.state.rate_limiter = limiter = create_rate_limiter(settings)
        warm_up = settings.warmup_on_start
        supervisor: EngineSupervisor | None = None
        if engine is None:
            supervisor = EngineSupervisor(
                start=lambda: start_configured_engine(settings, model_dir),
                attach=lambda started: chat.attach_engine(started, warm_up=warm_up),
                detach=chat.detach_engine,
            )
        app.state.engine_supervisor = supervisor

        async def attach_given_engine() -> None:
            try:
                await chat.attach_engine(engine, warm_up=warm_up)
                logger.info("ready: %d bots warmed", len(chat.bots))
            except Exception as error:
                logger.exception("the engine did not start")
                app.state.startup_error = f"the engine did not start: {error}"

        # Loading takes a minute; /healthz answers meanwhile and /readyz says when it is done.
        background = [
            asyncio.create_task(supervisor.run() if supervisor else attach_given_engine()),
            asyncio.create_task(worker.run()),
            asyncio.create_task(chat.follow_events()),
            asyncio.create_task(metrics.sample_engine(lambda: chat.engine)),
        ]
        try:
            yield
        finally:
            for task in background:
                task.cancel()
            for task in background:
                with contextlib.suppress(BaseException):
                    await task
            await chat.drain()
            if supervisor is not None:
                supervisor.shutdown()
            await worker.close()
            await bus.close()
            await chat.context.store.close()
            await metrics.store.close()
            await limiter.close()
            await db_engine.dispose()

    app = FastAPI(
        title="prefixdesk",
        version="0.1.0",
        lifespan=lifespan,
        description="Customer-service chatbot on vLLM with automatic prefix caching.",
    )
    app.state.settings = settings
    app.state.startup_error = None
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(HttpMetrics)
    app.add_middleware(SecurityHeaders)
    if settings.widget_origins:
        # Shops on other origins embed the widget; it sends the customer token as a header.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.widget_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
        )
    app.include_router(widget_script.router)  # before the mount, which would shadow it
    app.mount("/static", pages.static_files(), name="static")
    for module in (
        health,
        pages,
        widget,
        events,
        inbox,
        agents,
        reports,
        webhooks,
        metrics_routes,
        prompt_routes,
    ):
        app.include_router(module.router)

    @app.exception_handler(AppError)
    async def app_error(_request: Request, error: AppError) -> JSONResponse:
        return JSONResponse(
            {"error": error.code, "detail": error.message},
            status_code=error.status_code,
            headers=error.headers,
        )

    @app.exception_handler(ConnectionError)
    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_unavailable(_request: Request, error: Exception) -> JSONResponse:
        # Postgres restarting or out of reach: nothing was committed, so a retry is safe.
        logger.warning("database unavailable: %s", error)
        return JSONResponse(
            {"error": "service_unavailable", "detail": "the database is unavailable; try again shortly"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, error: HTTPException) -> JSONResponse:
        """Starlette's own refusals (no such path 404, method 405) in the API's error format."""
        code = HTTPStatus(error.status_code).phrase.lower().replace(" ", "_").replace("-", "_")
        return JSONResponse(
            {"error": code, "detail": str(error.detail)}, status_code=error.status_code, headers=error.headers
        )

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in error.errors()
        )
        return JSONResponse({"error": "invalid_input", "detail": problems}, status_code=422)

    return app
