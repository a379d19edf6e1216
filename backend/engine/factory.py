"""The engine the app runs on, chosen by settings."""

from pathlib import Path

from redis.asyncio import Redis

from backend.config import Settings
from backend.engine.interface import Engine
from backend.engine.remote import Replica
from backend.engine.routing.assignments import Assignments, MemoryAssignments, RedisAssignments
from backend.engine.routing.pool import ReplicaPool
from backend.engine.routing.router import Balance, Router
from backend.engine.vllm_engine import VllmEngine


async def start_engine(settings: Settings, model_dir: Path, redis: Redis | None) -> Engine:
    """Start the configured engine; returns once it can take requests."""
    if settings.engine == "remote":
        return await start_replica_pool(settings, redis)
    return await VllmEngine.start(settings, model_dir)


def create_assignments(settings: Settings, redis: Redis | None) -> Assignments:
    # A conversation's replica outlives no longer than its hot session would.
    if redis is not None:
        return RedisAssignments(
            redis, key_prefix=settings.redis_key_prefix, ttl_s=settings.session_ttl_seconds
        )
    return MemoryAssignments(settings.session_ttl_seconds)


UNCAPPED = 1 << 30


def create_replica_pool(settings: Settings, redis: Redis | None) -> ReplicaPool:
    replicas = [
        Replica(
            url,
            temperature=settings.temperature,
            timeout_s=settings.engine_request_timeout_s,
            session_header=settings.session_header,
            health_path=settings.engine_health_path,
        )
        for url in settings.engine_urls
    ]
    balance = Balance(
        load_factor=settings.routing_load_factor,
        abs_threshold=settings.routing_balance_abs_threshold,
        rel_threshold=settings.routing_balance_rel_threshold,
    )
    return ReplicaPool(
        replicas,
        Router(settings.routing, create_assignments(settings, redis), balance),
        block_size=settings.block_size,
        max_model_len=settings.max_model_len or UNCAPPED,  # the replicas say theirs; the smallest holds
        health_interval_s=settings.health_check_interval_s,
    )


async def start_replica_pool(settings: Settings, redis: Redis | None) -> ReplicaPool:
    pool = create_replica_pool(settings, redis)
    await pool.wait_until_ready(settings.engine_start_timeout_s)
    return pool
