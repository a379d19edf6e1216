"""Where a conversation's turns go: vLLM's router, with each of its policies, in front of the
same `vllm serve` replicas.

Multi-turn conversations through the service layer, all at once, each conversation's turns
one after another (a customer reads the reply before writing again). Every policy runs on the
same replicas, their prefix caches emptied in between and every bot's fixed prompts warmed on
every replica, so the only difference is where each turn is sent.

    prefixdesk bench --scenario routing --conversations 12 --turns 6 [--way router_kv_aware ...]
"""

import asyncio
import json
import tempfile
import time
from pathlib import Path
from statistics import mean, median

import httpx

from backend.bench.questions import SHOP_EN

# vLLM's router in front of the replicas: its policy per way (`kv_aware` reads their KV events).
WAYS = {
    "router_consistent_hash": "consistent_hash",
    "router_cache_aware": "cache_aware",
    "router_kv_aware": "kv_aware",
    "router_round_robin": "round_robin",
}
COUNTERS = ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:request_success_total")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def replica_counters(urls: list[str]) -> dict[str, dict[str, float]]:
    """vLLM's own counters per replica: the cross-check of the app's figures."""
    counters = {}
    async with httpx.AsyncClient(timeout=10) as client:
        for url in urls:
            text = (await client.get(f"{url}/metrics")).text
            counters[url] = {
                name: sum(
                    float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)
                )
                for name in COUNTERS
            }
    return counters


async def _start(settings, model_dir: Path, replica_urls: list[str], router_url: str):
    """The app's services on the router, on a fresh database: the replicas' prefix caches
    emptied, then every bot's fixed prompts warmed on every replica."""
    from backend.engine.factory import create_remote_engine
    from backend.engine.remote import Replica
    from backend.migrate import upgrade
    from backend.services import build_services

    database = Path(tempfile.mkdtemp()) / "bench.db"
    settings = settings.model_copy(
        update={
            "database_url": f"sqlite+aiosqlite:///{database}",
            "redis_url": None,
            "engine": "remote",
            "engine_url": router_url,
            "engine_health_path": "/readiness",
            "model": model_dir,
        }
    )
    await asyncio.to_thread(upgrade, settings.database_url)
    replicas = [Replica(url, temperature=0.0, timeout_s=600) for url in replica_urls]
    for replica in replicas:
        await replica.reset_prefix_cache()
    engine = create_remote_engine(settings)
    await engine.wait_until_ready(60)
    services = await build_services(settings, engine=engine)
    await services.start()
    await services.engine.wait()
    # Through the router, a bot's warm-up reaches one replica; here every policy finds them everywhere.
    for replica in replicas:
        await replica.probe()
        for live in services.bots.values():
            for _name, token_ids in live.fixed_prompts():
                async for _ in replica.stream(token_ids, max_tokens=1, cache_salt=live.cache_salt):
                    pass
        await replica.aclose()
    return engine, services


async def _open_conversations(services, conversations: int) -> list:
    # Started one by one: SQLite takes one writer at a time, and starting is not routing.
    started = []
    for _ in range(conversations):
        async with services.new_work() as work:
            started.append((await services.customers.start(work, "shop-en", None)).conversation.id)
    return started


async def _converse(services, conversation_id, index: int, turns: int) -> list[dict]:
    """One customer's turns, each sent when the reply before it is done."""
    replies = []
    for turn in range(turns):
        question = SHOP_EN[(index * turns + turn) % len(SHOP_EN)]
        async with services.new_work() as work:
            stream = await services.turns.take(work, conversation_id, question)
        reply = None
        async for event in stream.events():
            if event.name == "error":
                raise RuntimeError(event.data())
            if event.name == "done":
                reply = event.data()
        if reply is None or reply.get("handoff"):
            break
        replies.append({**reply, "turn": turn})
    return replies


def _figures(
    way: str, conversations: int, replies: list[dict], total_s: float, delta: dict, prefix: int
) -> dict:
    """`delta`: each replica's vLLM counters over the run; `prefix`: the bot prefix's cacheable tokens."""
    later = [reply for reply in replies if reply["turn"] > 0]
    prompt = sum(r["prompt_tokens"] for r in replies)
    cached = sum(r["cached_tokens"] for r in replies)
    hits = sum(d["vllm:prefix_cache_hits_total"] for d in delta.values())
    queries = sum(d["vllm:prefix_cache_queries_total"] for d in delta.values())
    ttft = [r["ttft_ms"] for r in replies]
    latency = [r["total_ms"] for r in replies]
    return {
        "way": way,
        "conversations": conversations,
        "turns": len(replies),
        "total_s": round(total_s, 2),
        "qps": round(len(replies) / total_s, 3),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "cached_share": round(cached / prompt, 4),
        "cached_share_turns_after_first": round(
            sum(r["cached_tokens"] for r in later) / max(1, sum(r["prompt_tokens"] for r in later)), 4
        ),
        "cached_share_of_history": round(
            sum(r["cached_tokens"] - prefix for r in later)
            / max(1, sum(r["prompt_tokens"] - prefix for r in later)),
            4,
        ),
        "bot_prefix_cacheable_tokens": prefix,
        "uncached_prompt_tokens": prompt - cached,
        "ttft_ms_mean": round(mean(ttft), 1),
        "ttft_ms_p50": round(median(ttft), 1),
        "ttft_ms_p95": round(percentile(ttft, 0.95), 1),
        "latency_ms_p50": round(median(latency), 1),
        "latency_ms_p95": round(percentile(latency, 0.95), 1),
        "requests_per_replica": [int(d["vllm:request_success_total"]) for d in delta.values()],
        "vllm_prefix_cache_hit_rate": round(hits / queries, 4) if queries else None,
    }


async def run_way(
    settings, model_dir: Path, replicas, way: str, *, conversations: int, turns: int, logs: Path
):
    """One way: every conversation at once, each turn sent after the reply before it; the
    figures of the replies, and of vLLM's own counters on each replica."""
    from backend.engine.local_replicas import free_port
    from backend.engine.local_router import start_local_router

    urls = [replica.url for replica in replicas]
    policy = WAYS[way]
    events = {r.url: r.kv_events for r in replicas if r.kv_events} if policy == "kv_aware" else None
    router = await start_local_router(
        urls,
        free_port(),
        logs / f"{way}.log",
        policy=policy,
        kv_events=events,
        block_size=settings.block_size,
        model=str(model_dir),
    )
    try:
        engine, services = await _start(settings, model_dir, urls, router.url)
        before = await replica_counters(urls)
        started = await _open_conversations(services, conversations)
        began = time.perf_counter()
        results = await asyncio.gather(
            *(_converse(services, started[i], i, turns) for i in range(conversations))
        )
        total_s = time.perf_counter() - began
        after = await replica_counters(urls)
        await services.close()
        engine.shutdown()
    finally:
        await router.stop()
    replies = [reply for replies in results for reply in replies]
    # Every way finds the bot prefix warm; what routing decides is whether the history hits.
    prefix = len(services.bots["shop-en"].prefix.token_ids) // settings.block_size * settings.block_size
    delta = {url: {name: after[url][name] - before[url][name] for name in COUNTERS} for url in urls}
    return _figures(way, conversations, replies, total_s, delta, prefix)


async def run(settings, ways: list[str], *, replicas: int, conversations: int, turns: int) -> dict:
    """Every way in `ways` on the same replicas (started here and stopped at the end)."""
    from backend.engine.local_replicas import free_port, start_local_replicas
    from backend.engine.model_store import resolve_model_dir

    if unknown := [way for way in ways if way not in WAYS]:
        raise ValueError(f"unknown routing way: {', '.join(unknown)} (the ways: {', '.join(WAYS)})")
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    logs = Path(tempfile.mkdtemp())
    print(f"starting {replicas} replicas of {model_dir.name} (logs in {logs}) ...", flush=True)
    began = time.perf_counter()
    ports = [free_port() for _ in range(replicas)]
    started = await start_local_replicas(
        settings, model_dir, ports, logs, dev_mode=True, pin_cores=True, kv_events="router_kv_aware" in ways
    )
    load_s = time.perf_counter() - began
    try:
        print("warm-up run (not measured) ...", flush=True)
        await run_way(settings, model_dir, started, "router_round_robin", conversations=2, turns=2, logs=logs)
        runs = {}
        for way in ways:
            print(f"{way}: {conversations} conversations x {turns} turns ...", flush=True)
            runs[way] = await run_way(
                settings, model_dir, started, way, conversations=conversations, turns=turns, logs=logs
            )
            print(json.dumps(runs[way]), flush=True)
    finally:
        await asyncio.gather(*(replica.stop() for replica in started))
    return {
        "model": model_dir.name,
        "replicas": replicas,
        "replica_load_s": round(load_s, 1),
        "max_reply_tokens": settings.max_reply_tokens,
        "block_size": settings.block_size,
        "ways": runs,
    }


def table(results: dict) -> str:
    """The ways side by side, as Markdown."""
    rows = [
        "| way | QPS | TTFT p50 / p95 (ms) | history cached | uncached tokens | turns per replica |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for way, run in results["ways"].items():
        rows.append(
            f"| {way} | {run['qps']:.2f} | {run['ttft_ms_p50']:.0f} / {run['ttft_ms_p95']:.0f} | "
            f"{run['cached_share_of_history']:.1%} | {run['uncached_prompt_tokens']:,} | "
            f"{' + '.join(map(str, run['requests_per_replica']))} |"
        )
    return "\n".join(rows)
