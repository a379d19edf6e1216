"""Shared fixtures: real Postgres, real Redis and one real vLLM engine per test session.

Three tiers share them (tests/README.md): the service tier (`services`, `make_services`)
calls the app's services directly, each test in a transaction rolled back at its end; the
HTTP tier (`client`) drives the app through its routes; the end-to-end tier (tests/e2e)
adds browsers, processes and outages.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from backend.config import Settings
from backend.db import create_db_engine
from backend.engine.interface import Engine
from backend.engine.model_store import fetch_model
from backend.engine.tiny_model import build_tiny_model
from backend.engine.vllm_engine import VllmEngine
from backend.migrate import upgrade
from backend.services import Services, build_services
from tests.helpers import ScriptedJudges
from tests.support import (
    CACHE_DIR,
    REDIS_URL,
    TEST_DATABASE,
    copy_prompts,
    delete_keys,
    drop_database,
    eventually,
    recreate_database,
    running_app,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tiers as markers too: `-m service` runs the fast tier, `-m "not e2e"` all but the slow one."""
    e2e = Path(__file__).parent / "e2e"
    for item in items:
        if e2e in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        if {"services", "make_services"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.service)


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    return fetch_model(CACHE_DIR)


@pytest.fixture(scope="session")
def default_tokenizer(default_model_dir: Path):
    """The default model's tokenizer, for tests of prompts and chat templates (not the app's own)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(default_model_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(default_model_dir: Path) -> Path:
    return build_tiny_model(default_model_dir, CACHE_DIR / "models" / "tiny-qwen2")


@pytest.fixture
def prompts_copy(tmp_path: Path) -> Path:
    """The shipped prompts/ copied for one test to edit."""
    return copy_prompts(tmp_path)


@pytest.fixture(scope="session")
async def database_url() -> AsyncIterator[str]:
    url = await recreate_database(TEST_DATABASE)
    await asyncio.to_thread(upgrade, url)
    yield url
    await drop_database(TEST_DATABASE)


@pytest.fixture(scope="session")
def redis_prefix() -> str:
    return f"prefixdesk-test-{uuid.uuid4().hex[:8]}:"


@pytest.fixture(scope="session", autouse=True)
async def _clean_redis(redis_prefix: str) -> AsyncIterator[None]:
    yield
    await delete_keys(redis_prefix)


@pytest.fixture(scope="session")
def tiny_settings(tiny_model_dir: Path, database_url: str, redis_prefix: str) -> Settings:
    return Settings(
        model=tiny_model_dir,
        database_url=database_url,
        redis_url=REDIS_URL,
        redis_key_prefix=redis_prefix,
        kv_cache_gib=1,
        max_model_len=2048,
        max_num_batched_tokens=2048,
        max_reply_tokens=8,
        # The tiny model's random samples would doubt every reply that asserts something; the
        # samples' own tests script them (turns/test_agreement.py).
        answer_samples=0,
        # The shared engine drafts, so that speculative decoding stays under test beside the
        # default (off: the eval gate's engine, and test_speculative's plain one).
        speculative_method="ngram",
        # Every test client is 127.0.0.1: the per-address limit has its own test.
        rate_limit_requests_per_address=1_000_000,
        cache_dir=CACHE_DIR,
    )


@pytest.fixture(scope="session")
async def tiny_vllm(tiny_settings: Settings) -> AsyncIterator[VllmEngine]:
    """The tiny model on vLLM, as it is: for the judges' mechanics (tests/judges/test_judges.py)."""
    engine = await VllmEngine.start(tiny_settings, tiny_settings.model)
    yield engine
    engine.shutdown()


@pytest.fixture(scope="session")
def tiny_engine(tiny_vllm: VllmEngine, tiny_model_dir: Path) -> Engine:
    """The engine most tests share: the tiny model, its yes/no judges scripted (tests/helpers.py)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    return ScriptedJudges(tiny_vllm, tokenizer.decode)


@pytest.fixture(scope="session")
def default_settings(default_model_dir: Path, tiny_settings: Settings) -> Settings:
    return tiny_settings.model_copy(
        update={
            "model": default_model_dir,
            "kv_cache_gib": 2,
            "max_model_len": 4096,
            "max_num_batched_tokens": 4096,
            "max_reply_tokens": 64,
        }
    )


@pytest.fixture(scope="session")
async def default_engine(default_settings: Settings) -> AsyncIterator[VllmEngine]:
    """The default model on vLLM, started once for every test that needs real answers."""
    engine = await VllmEngine.start(default_settings, default_settings.model)
    yield engine
    engine.shutdown()


@pytest.fixture
async def client(tiny_settings: Settings, tiny_engine: Engine) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(tiny_settings, tiny_engine) as client:
        yield client


# -- the service tier: the app's services without HTTP, every write rolled back ----------------

MakeServices = Callable[..., Awaitable[Services]]


@pytest.fixture(scope="session")
async def test_db(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_db_engine(database_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def db_connection(test_db: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """One connection with a transaction open for the whole test, rolled back at its end."""
    async with test_db.connect() as connection:
        transaction = await connection.begin()
        try:
            yield connection
        finally:
            await transaction.rollback()


@pytest.fixture
async def key_prefix(redis_prefix: str) -> AsyncIterator[str]:
    """The test's own Redis key prefix (and event channel), its keys deleted after it."""
    prefix = f"{redis_prefix}{uuid.uuid4().hex[:8]}:"
    yield prefix
    await delete_keys(prefix)


class OneUnitAtATime(AsyncSession):
    """A session on the test's connection that waits for the one before it to close: units of
    work (the test's, a reply's in its task, a reload another process announced) take turns
    on the connection, as they would take connections from a pool, and never interleave their
    savepoints."""

    async def __aenter__(self) -> "OneUnitAtATime":
        await self.info["turn"].acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await super().__aexit__(*exc_info)
        finally:
            self.info["turn"].release()


def join_transaction(services: Services, connection: AsyncConnection, turn: asyncio.Lock) -> None:
    """Every unit of work `services` opens from now on is a savepoint in the test's transaction
    on `connection`: SQLAlchemy's "join an external transaction" recipe. The webhook sender
    keeps sessions of its own: it only sends what was committed, which a test's rows never are."""
    services.webhooks.sessions = async_sessionmaker(services.db_engine, expire_on_commit=False)
    services.sessions.class_ = OneUnitAtATime
    services.sessions.configure(
        bind=connection, join_transaction_mode="create_savepoint", info={"turn": turn}
    )


@pytest.fixture
async def make_services(
    tiny_settings: Settings, tiny_engine: Engine, db_connection: AsyncConnection, key_prefix: str
) -> AsyncIterator[MakeServices]:
    """Builds the app's services as `build_services` does for the app, on the session's engine
    (or one wrapping it) and the test's transaction and key prefix; started: bots recorded,
    the engine attached and every bot's prefix warm. Keyword arguments override settings.
    Services built twice in one test share the database and Redis like two app processes."""
    built: list[Services] = []
    turn = asyncio.Lock()  # one unit of work at a time on the test's connection

    async def make(*, engine: Engine | None = None, **settings: Any) -> Services:
        update = {"redis_key_prefix": key_prefix, **settings}
        services = await build_services(tiny_settings.model_copy(update=update), engine=engine or tiny_engine)
        built.append(services)
        join_transaction(services, db_connection, turn)
        await services.start()
        await services.engine.wait()
        await eventually(lambda: not services.bots.warming, timeout_s=120, what="every bot's prefix is warm")
        return services

    yield make
    for services in reversed(built):
        await services.close()


@pytest.fixture
async def services(make_services: MakeServices) -> Services:
    """The app's services on the tiny settings, for one test."""
    return await make_services()
