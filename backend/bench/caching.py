"""Prefix caching on vs off: the same conversations through the service layer.

Each mode runs in its own process with its own engine, so neither inherits the other's
cache or memory. All conversations are submitted at once, as in the article's batch.

    prefixdesk bench --conversations 32
"""

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

from backend.bench.questions import SHOP_EN


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def run_mode(*, caching: bool, conversations: int, bot: str, max_tokens: int) -> dict:
    from transformers import AutoTokenizer

    from backend.app import create_chat_service
    from backend.config import Settings
    from backend.db import create_db_engine, create_session_factory
    from backend.engine.model_store import resolve_model_dir
    from backend.engine.vllm_engine import VllmEngine
    from backend.migrate import upgrade

    base = Settings()
    database = Path(tempfile.mkdtemp()) / "bench.db"
    settings = base.model_copy(
        update={
            "enable_prefix_caching": caching,
            "max_reply_tokens": max_tokens,
            "database_url": f"sqlite+aiosqlite:///{database}",
            "redis_url": None,
        }
    )
    await asyncio.to_thread(upgrade, settings.database_url)
    model_dir = resolve_model_dir(settings.model, settings.cache_dir)
    db = create_db_engine(settings.database_url)
    chat = create_chat_service(settings, create_session_factory(db), AutoTokenizer.from_pretrained(model_dir))
    await chat.sync_bots()
    load_started = time.perf_counter()
    engine = await VllmEngine.start(settings, model_dir)
    load_s = time.perf_counter() - load_started
    await chat.attach_engine(engine, warm_up=True)
    questions = [SHOP_EN[i % len(SHOP_EN)] for i in range(conversations)]

    async def one(question: str) -> dict:
        started = await chat.start_conversation(bot, None)
        turn = await chat.send_message(started.conversation.id, question)
        async for kind, data in turn.events():
            if kind == "done":
                return data
            if kind == "error":
                raise RuntimeError(data)
        raise RuntimeError("no reply")

    began = time.perf_counter()
    replies = await asyncio.gather(*(one(q) for q in questions))
    total_s = time.perf_counter() - began
    engine.shutdown()
    await db.dispose()
    ttft = [r["ttft_ms"] for r in replies]
    # What could be served from cache at best: the full blocks of the shared fixed prefix.
    prefix_blocks = len(chat.bots[bot].prefix.token_ids) // settings.block_size * settings.block_size
    latency = [r["total_ms"] for r in replies]
    prompt_tokens = sum(r["prompt_tokens"] for r in replies)
    return {
        "caching": caching,
        "conversations": conversations,
        "engine_load_s": round(load_s, 1),
        "total_s": round(total_s, 2),
        "qps": round(conversations / total_s, 3),
        "ttft_ms_mean": round(mean(ttft), 1),
        "ttft_ms_p50": round(median(ttft), 1),
        "ttft_ms_p95": round(percentile(ttft, 0.95), 1),
        "latency_ms_p50": round(median(latency), 1),
        "latency_ms_p95": round(percentile(latency, 0.95), 1),
        "prompt_tokens": prompt_tokens,
        "cached_tokens": sum(r["cached_tokens"] for r in replies),
        "shared_prefix_cacheable_tokens": prefix_blocks * conversations,
        "completion_tokens": sum(r["completion_tokens"] for r in replies),
        # Caching must not change what the model says: equal digests mean equal replies.
        "replies_sha256": hashlib.sha256("\n".join(r["text"] for r in replies).encode()).hexdigest(),
        "sample_reply": {"question": questions[0], "reply": replies[0]["text"]},
    }


def run_caching_benchmark(*, conversations: int, bot: str, max_tokens: int, out: Path) -> dict:
    results = {}
    for mode in ("on", "off"):
        print(f"prefix caching {mode}: {conversations} conversations ...", flush=True)
        completed = subprocess.run(  # noqa: S603
            [
                sys.executable,
                "-m",
                "backend.bench.caching",
                "--mode",
                mode,
                "--conversations",
                str(conversations),
                "--bot",
                bot,
                "--max-tokens",
                str(max_tokens),
            ],
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        )
        results[mode] = json.loads(completed.stdout.strip().splitlines()[-1])
    on, off = results["on"], results["off"]
    results["speedup_total_time"] = round(off["total_s"] / on["total_s"], 2)
    results["speedup_qps"] = round(on["qps"] / off["qps"], 2)
    results["cached_share_of_shared_prefix"] = round(
        on["cached_tokens"] / on["shared_prefix_cacheable_tokens"], 3
    )
    results["identical_replies"] = on["replies_sha256"] == off["replies_sha256"]
    print(format_table(results))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    print(f"written: {out}")
    return results


def format_table(results: dict) -> str:
    on, off = results["on"], results["off"]
    rows = [
        ("total time (s)", "total_s"),
        ("QPS", "qps"),
        ("TTFT mean (ms)", "ttft_ms_mean"),
        ("TTFT p50 (ms)", "ttft_ms_p50"),
        ("TTFT p95 (ms)", "ttft_ms_p95"),
        ("latency p50 (ms)", "latency_ms_p50"),
        ("latency p95 (ms)", "latency_ms_p95"),
        ("prompt tokens", "prompt_tokens"),
        ("cached tokens", "cached_tokens"),
        ("cacheable tokens (full blocks of the shared prefix)", "shared_prefix_cacheable_tokens"),
        ("completion tokens", "completion_tokens"),
        ("engine load (s)", "engine_load_s"),
    ]
    lines = ["| metric | caching off | caching on |", "| --- | ---: | ---: |"]
    lines += [f"| {label} | {off[key]} | {on[key]} |" for label, key in rows]
    lines.append(
        f"| **speed-up** | | **{results['speedup_total_time']}x** total time, "
        f"**{results['speedup_qps']}x** QPS |"
    )
    lines.append(
        f"\ncached share of the shared prefix: {results['cached_share_of_shared_prefix']:.1%}; "
        f"identical replies with caching on and off: {results['identical_replies']}"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["on", "off"], required=True)
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--bot", default="shop-en")
    parser.add_argument("--max-tokens", type=int, default=24)
    args = parser.parse_args()
    result = asyncio.run(
        run_mode(
            caching=args.mode == "on",
            conversations=args.conversations,
            bot=args.bot,
            max_tokens=args.max_tokens,
        )
    )
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
