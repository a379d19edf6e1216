"""The engine the app runs on, chosen by settings."""

from collections.abc import Callable
from pathlib import Path

from backend.config import Settings
from backend.engine.interface import Engine
from backend.engine.remote import Replica
from backend.engine.remote_engine import RemoteEngine
from backend.engine.vllm_engine import VllmEngine

UNCAPPED = 1 << 30


async def start_engine(
    settings: Settings, model_dir: Path, bot_of: Callable[[str | None], str | None] = lambda salt: None
) -> Engine:
    """Start the configured engine; returns once it can take requests. `bot_of`: a request's
    bot from its cache salt, which a remote engine names to the router."""
    if settings.engine == "remote":
        engine = create_remote_engine(settings, bot_of)
        await engine.wait_until_ready(settings.engine_start_timeout_s)
        return engine
    return await VllmEngine.start(settings, model_dir)


def create_remote_engine(
    settings: Settings, bot_of: Callable[[str | None], str | None] = lambda salt: None
) -> RemoteEngine:
    if settings.engine_url is None:
        raise ValueError("PREFIXDESK_ENGINE=remote needs PREFIXDESK_ENGINE_URL")
    replica = Replica(
        settings.engine_url,
        temperature=settings.temperature,
        timeout_s=settings.engine_request_timeout_s,
        session_header=settings.session_header,
        health_path=settings.engine_health_path,
        bot_of=bot_of,
    )
    return RemoteEngine(
        replica,
        block_size=settings.block_size,
        max_model_len=settings.max_model_len or UNCAPPED,  # the replicas say theirs
        health_interval_s=settings.health_check_interval_s,
    )
