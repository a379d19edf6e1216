"""vLLM's router (`vllm-router`, a Rust binary from PyPI) in front of replicas, as a local process.

For tests, benchmarks and a one-host trial of remote mode behind a router; a deployment runs it
as its own service (docker-compose.yml's `replicas` profile, docs/scaling.md). The app then lists
the router's URL alone and sends each conversation's id in the session header it routes on.
"""

import asyncio
import os
import shutil
import sys
from pathlib import Path

from backend.engine.local_replicas import LocalReplica, free_port, wait_healthy

POLICIES = ("consistent_hash", "cache_aware", "kv_aware", "power_of_two", "round_robin")

# A lost replica is out of the router's choice after one failed request or health check (a
# second), and that request is retried on another: a cache miss, not an error.
FAILOVER_FLAGS = (
    "--health-check-interval-secs", "1",
    "--health-failure-threshold", "1",
    "--cb-failure-threshold", "1",
)  # fmt: skip


def router_binary() -> str:
    """The `vllm-router` installed beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "vllm-router"
    found = str(beside) if beside.is_file() else shutil.which("vllm-router")
    if found is None:
        raise FileNotFoundError("vllm-router is not installed: pip install 'prefixdesk[router]'")
    return found


def router_command(
    worker_urls: list[str],
    port: int,
    policy: str,
    *,
    host: str = "127.0.0.1",
    kv_events: dict[str, str] | None = None,
    block_size: int = 32,
    model: str | None = None,
) -> list[str]:
    """`kv_events`: each replica's ZMQ endpoint of KV-cache events, which `kv_aware` reads;
    `model`: the name the replicas serve their model by (the events' model identity)."""
    if policy not in POLICIES:
        raise ValueError(f"vllm-router policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    command = [router_binary(), "--host", host, "--port", str(port), "--policy", policy]
    # Its Prometheus exporter listens on a port of its own (29000 unless told): one free one each.
    command += ["--prometheus-host", host, "--prometheus-port", str(free_port())]
    command += ["--worker-urls", *worker_urls, *FAILOVER_FLAGS]
    for url, endpoint in (kv_events or {}).items():
        command += ["--kv-event-source", f"{url}={endpoint}"]
    if kv_events:
        command += ["--kv-event-block-size", str(block_size), "--kv-event-model", model or ""]
    return command


async def start_local_router(
    worker_urls: list[str],
    port: int,
    log: Path,
    *,
    policy: str = "consistent_hash",
    kv_events: dict[str, str] | None = None,
    block_size: int = 32,
    model: str | None = None,
) -> LocalReplica:
    """The router, once it answers /health (it waits for its replicas to answer theirs)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    command = router_command(
        worker_urls, port, policy, kv_events=kv_events, block_size=block_size, model=model
    )
    with open(log, "wb") as out:  # noqa: ASYNC230 (a moment, once per router)
        process = await asyncio.create_subprocess_exec(
            *command,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
            start_new_session=True,
        )
    router = LocalReplica(f"http://127.0.0.1:{port}", process, log)
    try:
        await wait_healthy(router, timeout_s=120)
    except BaseException:
        await router.stop()
        raise
    return router
