"""One benchmark run in its own process: one way, caching on or off, one engine.

    python -m backend.bench.worker SPEC.json      (written by `prefixdesk bench`)

The spec names the way (`app`, `engine`, `peer`), the caching mode and the workloads; the
figures of every request go to the spec's `out` file. The engine (and, for `app` and
`peer`, the server around it) lives only as long as this process.
"""

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from backend.bench import capacity, servers
from backend.bench.app_storage import app_storage, clean_redis
from backend.bench.costs import app_costs_reader
from backend.bench.measure import measure, warm_up
from backend.bench.peaks import Peaks, metrics_counters_reader, metrics_drafts_reader, metrics_kv_reader
from backend.bench.processes import stop_on_sigterm
from backend.bench.prompt_ids import PromptIds
from backend.bench.spec_workloads import capacity_plan, workloads_of
from backend.bench.targets import AppTarget, EngineTarget, PeerTarget
from backend.bench.workloads import BOT, KNOWLEDGE_BOT
from backend.config import Settings
from backend.engine.kv_sizing import context_window, knowledge_budget
from backend.engine.local_replicas import free_port
from backend.engine.model_store import resolve_model_dir
from backend.engine.remote import Replica
from backend.engine.vllm_options import engine_environment

HTTP_LIMITS = httpx.Limits(max_connections=2000, max_keepalive_connections=200)
# Replies wait in the engine's queue as long as the load makes them: no client-side timeout.
HTTP_TIMEOUT = httpx.Timeout(3600.0)


async def run_engine(spec: dict, settings: Settings, ids: PromptIds, model_dir: Path) -> dict:
    from backend.engine.interface import warm
    from backend.engine.vllm_engine import VllmEngine

    started = time.perf_counter()
    engine = await VllmEngine.start(settings, model_dir)
    try:
        for slug in ids.bots:
            await warm(engine, ids.prefixes[slug], f"warmup-{slug}", cache_salt=ids.salts[slug])
        load_s = time.perf_counter() - started

        async def kv_usage() -> float:
            return engine.stats.kv_cache_usage

        async def drafts() -> tuple[int, int]:
            return engine.stats.draft_tokens, engine.stats.accepted_tokens

        runs = await measure(
            workloads_of(spec, settings.prompts_dir),
            EngineTarget(engine, ids, spec["max_tokens"]),
            lambda: Peaks(os.getpid(), kv_usage),
            drafts,
            {slug: len(p) for slug, p in ids.prefixes.items()},
            settings.block_size,
        )
    finally:
        engine.shutdown()
    return {"engine_load_s": load_s, "runs": runs}


async def run_app(spec: dict, settings: Settings, ids: PromptIds, workdir: Path) -> dict:
    settings, storage = app_storage(settings, workdir)
    redis_prefix = f"prefixdesk-bench-{uuid.uuid4().hex[:8]}:"
    env = servers.app_environment(settings, max_tokens=spec["max_tokens"], redis_prefix=redis_prefix)
    env["PREFIXDESK_PROMPTS_DIR"] = str(settings.prompts_dir)
    env["PREFIXDESK_KV_CACHE_GIB"] = f"{settings.kv_cache_gib:g}"
    env.update(spec.get("app_env", {}))
    if spec.get("kv_tier") == "on":  # on a fresh directory: what it holds, this run wrote
        env |= {"PREFIXDESK_KV_TIER": "disk", "PREFIXDESK_KV_TIER_PATH": str(workdir / "kv-tier")}
    port = free_port()
    log = workdir / "app.log"
    started = time.perf_counter()
    try:
        async with (
            servers.running(servers.app_command(port), env, "/readyz", log) as server,
            httpx.AsyncClient(base_url=server.url, timeout=HTTP_TIMEOUT, limits=HTTP_LIMITS) as client,
        ):
            load_s = time.perf_counter() - started
            target = AppTarget(client)
            if "capacity" in spec["scenarios"]:
                await warm_up(target)  # untimed, as in `measure`
                runs = await capacity.measure(
                    capacity_plan(spec),
                    target,
                    prefix_tokens=len(ids.prefixes[BOT]),
                    block_size=settings.block_size,
                    peaks_of=lambda: Peaks(server.pid, metrics_kv_reader(client)),
                    counters=metrics_counters_reader(client),
                )
            else:
                runs = await measure(
                    workloads_of(spec, settings.prompts_dir),
                    target,
                    lambda: Peaks(server.pid, metrics_kv_reader(client)),
                    metrics_drafts_reader(client),
                    {slug: len(p) for slug, p in ids.prefixes.items()},
                    settings.block_size,
                    app_costs_reader(client, server.pid),
                )
    finally:
        await clean_redis(settings.redis_url, redis_prefix)
        shutil.rmtree(workdir / "kv-tier", ignore_errors=True)
    return {"engine_load_s": load_s, "runs": runs, "storage": storage, "engine_log": servers.engine_log(log)}


async def run_peer(spec: dict, settings: Settings, ids: PromptIds, model_dir: Path, workdir: Path) -> dict:
    port = free_port()
    command = servers.peer_command(settings, model_dir, port)
    started = time.perf_counter()
    env = engine_environment(settings)
    async with (
        servers.running(command, env, "/health", workdir / "peer.log") as server,
        httpx.AsyncClient(base_url=server.url, timeout=HTTP_TIMEOUT, limits=HTTP_LIMITS) as client,
    ):
        replica = Replica(server.url, temperature=0.0, timeout_s=HTTP_TIMEOUT.read or 3600.0, client=client)
        if not await replica.probe():
            raise RuntimeError(f"the peer at {server.url} does not answer")
        target = PeerTarget(replica, ids, spec["max_tokens"])
        for slug in ids.bots:  # as the app warms every bot's prefix at start
            await target.complete(ids.prefixes[slug], ids.salts[slug], 1)
        load_s = time.perf_counter() - started
        runs = await measure(
            workloads_of(spec, settings.prompts_dir),
            target,
            lambda: Peaks(server.pid, metrics_kv_reader(client)),
            metrics_drafts_reader(client),
            {slug: len(p) for slug, p in ids.prefixes.items()},
            settings.block_size,
        )
    return {"engine_load_s": load_s, "runs": runs, "command": " ".join(command[1:])}


async def run(spec: dict) -> dict:
    update = {"enable_prefix_caching": spec["caching"], "max_reply_tokens": spec["max_tokens"]}
    if spec.get("speculation") is not None:  # else as configured
        update["speculative_method"] = "ngram" if spec["speculation"] else "off"
    if spec.get("kv_cache_gib") is not None:  # else as configured
        update["kv_cache_gib"] = spec["kv_cache_gib"]
    settings = Settings().model_copy(update=update)
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    workdir = Path(tempfile.mkdtemp(prefix=f"prefixdesk-bench-{spec['way']}-"))
    if spec["way"] == "app":  # the app reads its own copy of the bots
        retrieval = [KNOWLEDGE_BOT] if spec.get("knowledge_path") == "retrieval" else []
        prompts = servers.bench_prompts(
            settings.prompts_dir, workdir / "prompts", only=spec.get("bots"), retrieval=retrieval
        )
        settings = settings.model_copy(update={"prompts_dir": prompts})
    window = context_window(model_dir, settings.max_model_len)
    ids = PromptIds(
        model_dir,
        settings.prompts_dir,
        settings.secret_key,
        settings.relevant_lines,
        knowledge_budget(window, settings.conversation_room_tokens),
    )
    if spec["way"] == "engine":
        result = await run_engine(spec, settings, ids, model_dir)
    elif spec["way"] == "app":
        result = await run_app(spec, settings, ids, workdir)
    elif spec["way"] == "peer":
        result = await run_peer(spec, settings, ids, model_dir, workdir)
    else:
        raise ValueError(f"unknown way {spec['way']!r}")
    return {
        "way": spec["way"],
        "caching": spec["caching"],
        "speculation": spec.get("speculation"),
        "knowledge_path": spec.get("knowledge_path"),
        "kv_tier": spec.get("kv_tier"),
        "speculative_method": settings.speculative_method,
        "block_size": settings.block_size,
        "kv_cache_gib": settings.kv_cache_gib,
        "max_num_seqs": settings.max_num_seqs,
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "max_reply_tokens": settings.max_reply_tokens,
        "context_window": window,
        "prefix_tokens": {slug: len(p) for slug, p in ids.prefixes.items()},
        "knowledge_in_prefix": ids.knowledge_in_prefix,
        **({"knowledge_options": spec["knowledge"]} if "knowledge" in spec["scenarios"] else {}),
        **({"capacity_plan": spec["capacity"]} if "capacity" in spec["scenarios"] else {}),
        **result,
    }


def main() -> None:
    stop_on_sigterm()  # the benchmark stopped by hand stops this run: its servers go with it
    spec = json.loads(Path(sys.argv[1]).read_text())
    result = asyncio.run(run(spec))
    Path(spec["out"]).write_text(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
