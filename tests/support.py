"""What several test modules share: service addresses, a fresh database, a running app, and
`eventually`, the one way tests wait for something to happen."""

import asyncio
import contextlib
import inspect
import os
import shutil
import signal
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import redis.asyncio as aioredis
import uvicorn
from sqlalchemy import text

from backend.agents import service as agents
from backend.agents.models import AgentRole
from backend.app import SHUTDOWN_GRACE_S, create_app
from backend.config import PROJECT_ROOT, Settings
from backend.db import create_db_engine

POSTGRES_ADMIN_URL = os.environ.get(
    "PREFIXDESK_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("PREFIXDESK_TEST_REDIS", "redis://127.0.0.1:6379/0")
# One database per test session, so sessions running side by side never share one.
TEST_DATABASE = f"prefixdesk_test_{os.getpid()}"
CHROMIUM = os.environ.get("PREFIXDESK_TEST_CHROMIUM", "/usr/bin/chromium")
# No sandbox as root; no background traffic (this machine has no network beyond loopback).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
]
SCREENSHOTS = Path(os.environ.get("PREFIXDESK_SCREENSHOTS_DIR", "var/screenshots"))
CACHE_DIR = Path(os.environ.get("PREFIXDESK_CACHE_DIR", Path.home() / ".cache" / "prefixdesk"))


T = TypeVar("T")


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.02,
    ignoring: tuple[type[BaseException], ...] = (),
    what: str = "",
) -> T:
    """The first truthy value of `condition` (a plain or an async function), polled every
    `interval_s`: returns as soon as it holds, fails the test if it does not within `timeout_s`.

    Exceptions of the `ignoring` types count as "not yet" (a server still starting up).
    Tests wait with this, never with a fixed sleep.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
        except ignoring as error:
            value = error
        if time.monotonic() >= deadline:
            what = what or getattr(condition, "__qualname__", repr(condition))
            raise AssertionError(f"not within {timeout_s} s: {what} (last: {value!r})")
        await asyncio.sleep(interval_s)


async def is_ready(client: httpx.AsyncClient) -> bool:
    return (await client.get("/readyz")).status_code == 200


async def delete_keys(prefix: str) -> None:
    """Every Redis key under `prefix`, gone."""
    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def copy_prompts(parent: Path) -> Path:
    """The shipped prompts/ copied under `parent`, to be edited there."""
    target = parent / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", target)
    return target


async def _admin(statement: str) -> None:
    admin = create_db_engine(POSTGRES_ADMIN_URL)
    async with admin.connect() as connection:
        connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text(statement))
    await admin.dispose()


async def recreate_database(name: str) -> str:
    await drop_database(name)
    await _admin(f'CREATE DATABASE "{name}"')
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


async def drop_database(name: str) -> None:
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@asynccontextmanager
async def running_app(settings: Settings, engine) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan, on the given engine, ready (warmed) before yielding."""
    app = create_app(settings, engine=engine)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as client:
            try:
                # Ready once every bot's prefixes are warm: its own and its judges' (three of
                # about 1,000 tokens each on the default model, minutes on two AVX2 cores).
                await eventually(lambda: is_ready(client), timeout_s=600)
            except AssertionError:
                raise AssertionError(
                    f"app never became ready: {app.state.services.supervisor.error}"
                ) from None
            client.app = app
            yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_SERVED_APPS: dict[str, object] = {}


def client_app(url: str):
    """The app behind a `served` URL (for test set-up straight into its database)."""
    return _SERVED_APPS[url]


@asynccontextmanager
async def served(settings, engine) -> AsyncIterator[str]:
    port = free_port()
    app = create_app(settings, engine=engine)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE_S
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started or task.done(), timeout_s=30, what="uvicorn started")
    if task.done():
        task.result()  # the server could not start: its error
    url = f"http://127.0.0.1:{port}"
    _SERVED_APPS[url] = app
    try:
        yield url
    finally:
        _SERVED_APPS.pop(url, None)
        server.should_exit = True
        await task


async def wait_ready(client: httpx.AsyncClient) -> None:
    await eventually(lambda: is_ready(client), timeout_s=30, what="/readyz answered 200")


async def make_agent(app, role: AgentRole = AgentRole.AGENT) -> tuple[int, dict[str, str]]:
    """A new agent of `role` and the headers that carry its API token."""
    async with app.state.services.sessions() as db:
        agent = await agents.create_agent(
            db,
            name=f"{role.value} {uuid.uuid4().hex[:6]}",
            email=f"{uuid.uuid4().hex[:10]}@example.com",
            role=role,
            by=None,
        )
        _token, plain = await agents.issue_token(db, agent, by=None)
        await db.commit()
    return agent.id, {"Authorization": f"Bearer {plain}"}


def serve_env(settings: Settings, **overrides: str) -> dict[str, str]:
    """The environment for `prefixdesk serve` on the tiny test settings' model, database and Redis."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url or "",
        "PREFIXDESK_REDIS_KEY_PREFIX": settings.redis_key_prefix,
        "PREFIXDESK_MODEL": str(settings.model),
        "PREFIXDESK_CACHE_DIR": str(settings.cache_dir),
        "PREFIXDESK_KV_CACHE_GIB": str(settings.kv_cache_gib),
        "PREFIXDESK_MAX_MODEL_LEN": str(settings.max_model_len),
        "PREFIXDESK_MAX_NUM_BATCHED_TOKENS": str(settings.max_num_batched_tokens),
        "PREFIXDESK_MAX_REPLY_TOKENS": str(settings.max_reply_tokens),
        "PREFIXDESK_PROMPTS_DIR": str(settings.prompts_dir),
        "PREFIXDESK_RATE_LIMIT_REQUESTS_PER_ADDRESS": "1000000",
        # The tiny model's random weights answer yes/no questions arbitrarily; in-process
        # tests script its judges instead (tests/helpers.py, ScriptedJudges).
        "PREFIXDESK_MODEL_JUDGES": "false",
    }
    return {**env, **overrides}


@dataclass
class AppProcess:
    url: str
    process: asyncio.subprocess.Process
    log: Path


@asynccontextmanager
async def app_process(env: dict[str, str], log: Path, port: int | None = None) -> AsyncIterator[AppProcess]:
    """`prefixdesk serve` in its own process group, ready (model loaded, bots warmed) on yield."""
    port = port or free_port()
    with open(log, "ab") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "backend.cli",
            "serve",
            "--port",
            str(port),
            env=env,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=url) as client:

            async def ready() -> bool:
                if process.returncode is not None:
                    raise AssertionError(f"prefixdesk serve exited:\n{log.read_text()[-3000:]}")
                return await is_ready(client)

            try:
                await eventually(ready, timeout_s=300, interval_s=0.1, ignoring=(httpx.HTTPError,))
            except AssertionError as error:
                if process.returncode is not None:
                    raise
                raise AssertionError(
                    f"prefixdesk serve never became ready:\n{log.read_text()[-3000:]}"
                ) from error
        yield AppProcess(url, process, log)
    finally:
        await stop_process_group(process)


async def stop_process_group(process: asyncio.subprocess.Process, timeout_s: float = 60) -> None:
    """SIGTERM to the process and its children (the engine core), SIGKILL if they linger."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
