"""Cache-aware routing vs round-robin over the same `vllm serve` replicas.

Multi-turn conversations through the service layer, all at once, each conversation's turns
one after another (a customer reads the reply before writing again). Both policies run on
the same replicas, their prefix caches emptied in between and every bot prefix warmed on
every replica, so the only difference is where each turn is sent.

    python -m backend.bench.routing --replicas 2 --conversations 16 --turns 4
"""

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from statistics import mean, median

import httpx

from backend.bench.questions import SHOP_EN

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


async def _start(settings, model_dir: Path, urls: list[str], policy: str):
    """The app's services on the replicas with this routing policy, on a fresh database: the
    replicas' prefix caches emptied, then every bot prefix warmed on every replica."""
    from backend.engine.factory import create_replica_pool
    from backend.migrate import upgrade
    from backend.services import build_services

    database = Path(tempfile.mkdtemp()) / "bench.db"
    settings = settings.model_copy(
        update={
            "database_url": f"sqlite+aiosqlite:///{database}",
            "redis_url": None,
            "engine": "remote",
            "engine_urls": urls,
            "routing": policy,
            "model": model_dir,
        }
    )
    await asyncio.to_thread(upgrade, settings.database_url)
    pool = create_replica_pool(settings, None)
    for replica in pool.replicas.values():
        await replica.reset_prefix_cache()
    await pool.wait_until_ready(60)
    services = await build_services(settings, engine=pool)
    await services.start()
    await services.engine.wait()  # every bot prefix is warm on every replica
    return pool, services


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
    policy: str, conversations: int, replies: list[dict], total_s: float, delta: dict, prefix: int
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
        "policy": policy,
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


async def run_policy(
    settings, model_dir: Path, urls: list[str], policy: str, *, conversations: int, turns: int
):
    """One policy: every conversation at once, each turn sent after the reply before it; the
    figures of the replies, and of vLLM's own counters on each replica."""
    pool, services = await _start(settings, model_dir, urls, policy)
    before = await replica_counters(urls)
    started = await _open_conversations(services, conversations)
    began = time.perf_counter()
    results = await asyncio.gather(*(_converse(services, started[i], i, turns) for i in range(conversations)))
    total_s = time.perf_counter() - began
    after = await replica_counters(urls)
    await services.close()
    pool.shutdown()
    replies = [reply for replies in results for reply in replies]
    # Every policy finds the bot prefix warm; what routing decides is whether the history hits.
    prefix = len(services.bots["shop-en"].prefix.token_ids) // settings.block_size * settings.block_size
    delta = {url: {name: after[url][name] - before[url][name] for name in COUNTERS} for url in urls}
    return _figures(policy, conversations, replies, total_s, delta, prefix)


async def run(args) -> dict:
    from backend.config import Settings
    from backend.engine.local_replicas import free_port, start_local_replicas
    from backend.engine.model_store import resolve_model_dir

    settings = Settings().model_copy(
        update={"max_reply_tokens": args.max_tokens, "kv_cache_gib": args.kv_cache_gib}
    )
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    logs = Path(tempfile.mkdtemp())
    print(f"starting {args.replicas} replicas of {model_dir.name} (logs in {logs}) ...", flush=True)
    began = time.perf_counter()
    ports = [free_port() for _ in range(args.replicas)]
    replicas = await start_local_replicas(settings, model_dir, ports, logs, dev_mode=True, pin_cores=True)
    load_s = time.perf_counter() - began
    urls = [replica.url for replica in replicas]
    try:
        print("warm-up run (not measured) ...", flush=True)
        await run_policy(settings, model_dir, urls, "round_robin", conversations=2, turns=2)
        runs = {}
        for policy in args.policies:
            print(f"{policy}: {args.conversations} conversations x {args.turns} turns ...", flush=True)
            runs[policy] = await run_policy(
                settings, model_dir, urls, policy, conversations=args.conversations, turns=args.turns
            )
            print(json.dumps(runs[policy]), flush=True)
    finally:
        await asyncio.gather(*(replica.stop() for replica in replicas))
    results = {
        "model": model_dir.name,
        "replicas": args.replicas,
        "replica_load_s": round(load_s, 1),
        "max_reply_tokens": args.max_tokens,
        "block_size": settings.block_size,
        "runs": runs,
    }
    if {"cache_aware", "round_robin"} <= runs.keys():
        aware, robin = runs["cache_aware"], runs["round_robin"]
        results["qps_ratio"] = round(aware["qps"] / robin["qps"], 2)
        results["uncached_tokens_ratio"] = round(
            robin["uncached_prompt_tokens"] / max(1, aware["uncached_prompt_tokens"]), 2
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--kv-cache-gib", type=float, default=2.0)
    parser.add_argument("--policies", nargs="+", default=["cache_aware", "round_robin"])
    parser.add_argument("--out", type=Path, default=Path("bench/results/routing.json"))
    args = parser.parse_args()
    results = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
