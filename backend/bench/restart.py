"""How long a restarted app takes to be ready: every shipped bot's fixed prompts computed again
(KV tier off), or read back from the KV tier the start before it filled (on).

Each way starts the app as deployed (`prefixdesk serve`: its embedded engine, the shipped bots,
the help centers included) twice on the same settings, database and tier directory, stopping
it in between as a deployment does (SIGTERM). The second start is the restart measured: from
the process's start to `/readyz` answering 200, split where the engine is up and the bots
begin warming. After it, one question per bot, answered greedily: with the tier the replies
must be those computed without it.

    prefixdesk bench --scenario restart
"""

import asyncio
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

from backend.bench import servers
from backend.bench.app_storage import app_storage, clean_redis
from backend.bench.targets import AppTarget
from backend.bench.workloads import Conversation
from backend.config import Settings
from backend.engine.local_replicas import free_port

WAYS = ("off", "on")
# One plain question per shipped bot, asked after the restart; bots not shipped are not asked.
QUESTIONS = {
    "shop-en": "How long do I have to return an item?",
    "appliance-zh": "洗碗机的保修期是多久?",
    "tallybook-en": "How do I add a new customer?",
}
WARM_LINE = re.compile(r"bot (\S+) warm \((\d+) prefix tokens; (\d+) of its fixed prompts' (\d+) tokens")
TIER_SETTLED_S = 5.0  # the tier's directory unchanged this long: every block written


@dataclass
class Start:
    """One start of the app, timed from its process's start."""

    ready_s: float  # /readyz 200: the engine up and every bot's fixed prompts cached
    engine_s: float  # the engine up; the bots' warming begins
    fixed_tokens: int  # every bot's fixed prompts
    found_cached_tokens: int  # of those, found cached rather than computed
    bots: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def warm_s(self) -> float:
        return round(self.ready_s - self.engine_s, 2)


async def _ready(client: httpx.AsyncClient, began: float, timeout_s: float) -> tuple[float, float]:
    """When the engine was up, and when /readyz answered 200 (seconds since `began`)."""
    engine_s = None
    while time.perf_counter() - began < timeout_s:
        with_status = await client.get("/readyz")
        now = time.perf_counter() - began
        body = with_status.json()
        if engine_s is None and any(warmth != "cold" for warmth in body["bots"].values()):
            engine_s = now  # the engine is up once the bots' warming has begun
        if with_status.status_code == 200:
            return round(engine_s or now, 2), round(now, 2)
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the app was not ready after {timeout_s:.0f} s")


def _warmed(log: Path) -> dict[str, dict[str, int]]:
    bots = {}
    for match in WARM_LINE.finditer(log.read_text(errors="replace")):
        slug, prefix, cached, fixed = match.groups()
        bots[slug] = {"prefix_tokens": int(prefix), "fixed_tokens": int(fixed), "found_cached": int(cached)}
    return bots


def _tier_size(directory: Path) -> tuple[int, int]:
    files = [path for path in directory.rglob("*") if path.is_file()]
    return len(files), sum(path.stat().st_size for path in files)


async def _settled(directory: Path) -> tuple[int, int]:
    """Wait until the tier's files stop changing (its writes are asynchronous): (files, bytes)."""
    seen, still_since = None, time.perf_counter()
    while True:
        now = await asyncio.to_thread(_tier_size, directory)
        if now != seen:
            seen, still_since = now, time.perf_counter()
        elif time.perf_counter() - still_since >= TIER_SETTLED_S:
            return now
        await asyncio.sleep(0.5)


async def _ask(client: httpx.AsyncClient, bots: list[str]) -> dict[str, dict]:
    """One question to each bot: the reply's text, first-token time and cached prompt tokens."""
    target, answers = AppTarget(client), {}
    for slug in bots:
        try:
            state = await target.open(Conversation(slug, (QUESTIONS[slug],), bot=slug))
            reply = await target.send(state, QUESTIONS[slug])
            answers[slug] = {"text": reply.text, "ttft_ms": round(reply.ttft_s * 1000, 1)}
            answers[slug] |= {"prompt_tokens": reply.prompt_tokens, "cached_tokens": reply.cached_tokens}
        except RuntimeError as error:  # a handover or a failure: recorded, not compared
            answers[slug] = {"error": str(error)[:300]}
    return answers


async def start_app(env: dict[str, str], log: Path, *, ask: list[str], tier: Path | None) -> dict:
    """The app started once and stopped: its Start, the answers to `ask`, the tier's size."""
    port = free_port()
    began = time.perf_counter()
    async with (
        servers.running(servers.app_command(port), env, "/healthz", log) as server,
        httpx.AsyncClient(base_url=server.url, timeout=600) as client,
    ):
        engine_s, ready_s = await _ready(client, began, timeout_s=1800)
        answers = await _ask(client, ask)
        files, size = await _settled(tier) if tier is not None else (0, 0)
    bots = _warmed(log)
    fixed = sum(bot["fixed_tokens"] for bot in bots.values())
    found = sum(bot["found_cached"] for bot in bots.values())
    start = Start(ready_s, engine_s, fixed, found, bots)
    tier_size = {"tier_files": files, "tier_bytes": size}
    return {**asdict(start), "warm_s": start.warm_s, "answers": answers, **tier_size}


async def run_way(settings: Settings, way: str, workdir: Path) -> dict:
    """Two starts of the app on the same database (and tier): the first, then the restart."""
    settings, storage = app_storage(settings, workdir / way)
    redis_prefix = f"prefixdesk-bench-{uuid.uuid4().hex[:8]}:"
    env = servers.app_environment(settings, max_tokens=settings.max_reply_tokens, redis_prefix=redis_prefix)
    env |= {"PREFIXDESK_PROMPTS_DIR": str(settings.prompts_dir), "PREFIXDESK_KV_TIER": "off"}
    tier = workdir / way / "kv-tier" if way == "on" else None
    if tier is not None:
        env |= {"PREFIXDESK_KV_TIER": "disk", "PREFIXDESK_KV_TIER_PATH": str(tier)}
        env |= {"PREFIXDESK_KV_TIER_GIB": f"{settings.kv_tier_gib:g}"}
    bots = [slug for slug in QUESTIONS if (settings.prompts_dir / slug).is_dir()]
    try:
        first = await start_app(env, workdir / f"{way}-first.log", ask=[], tier=tier)
        print(f"{way}: first start ready in {first['ready_s']:.1f} s; restarting ...", flush=True)
        restart = await start_app(env, workdir / f"{way}-restart.log", ask=bots, tier=None)
    finally:
        await clean_redis(settings.redis_url, redis_prefix)
    return {**restart, "first_start": first, "storage": storage}


async def run(settings: Settings, ways: list[str]) -> dict:
    """Every way in `ways`, one after the other, each on a fresh database and tier."""
    if unknown := [way for way in ways if way not in WAYS]:
        raise ValueError(f"unknown restart way: {', '.join(unknown)} (the ways: {', '.join(WAYS)})")
    workdir = Path(tempfile.mkdtemp(prefix="prefixdesk-restart-"))
    (workdir / "off").mkdir()
    (workdir / "on").mkdir()
    print(f"restart: the app started twice per way (logs in {workdir}) ...", flush=True)
    results: dict = {"kv_tier_gib": settings.kv_tier_gib}
    for way in ways:
        results[way] = await run_way(settings, way, workdir)
        print(f"{way}: restart ready in {results[way]['ready_s']:.1f} s", flush=True)
    if "off" in results and "on" in results:
        results["on_vs_off_ready"] = round(results["on"]["ready_s"] / results["off"]["ready_s"], 3)
        results["replies_identical"] = _same_replies(results["off"]["answers"], results["on"]["answers"])
    for way in ways:
        if (workdir / way / "kv-tier").exists():
            shutil.rmtree(workdir / way / "kv-tier")  # its size is recorded; the logs stay
    return results


def _same_replies(off: dict, on: dict) -> bool | None:
    compared = [slug for slug in off if "text" in off[slug] and "text" in on.get(slug, {})]
    return all(off[slug]["text"] == on[slug]["text"] for slug in compared) if compared else None


def table(results: dict) -> str:
    """The ways side by side, as Markdown."""
    rows = [
        "| KV tier | restart to ready | engine up | bots warmed | fixed tokens found cached |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for way in WAYS:
        if way in results:
            run = results[way]
            rows.append(
                f"| {way} | {run['ready_s']:.1f} s | {run['engine_s']:.1f} s | {run['warm_s']:.1f} s | "
                f"{run['found_cached_tokens']:,} of {run['fixed_tokens']:,} |"
            )
    return "\n".join(rows)
