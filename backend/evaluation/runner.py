"""`prefixdesk eval`: every bot's eval cases through the app's own API, one at a time.

The app is a running server (by URL) or this process's own, on an embedded engine with a
throwaway SQLite database. Cases run one after another: the CPU build rounds floats
differently when requests are batched, and a gate in CI must give the same score each run.
"""

import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from backend.config import Settings
from backend.evaluation.cases import EVAL_FILE, Case, judge, load_cases
from backend.evaluation.outcomes import Ground, classify
from backend.evaluation.summary import summarise
from backend.evaluation.transcript import CaseResult, Transcript
from backend.prompting.definitions import copy_with_bots, load_bot
from backend.sse_reader import read_sse

# How long the eval's own app may take to load the engine and warm its bots' prefixes: a help
# center of 15,000 tokens alone takes over ten minutes on two AVX2 cores in float32.
WARM_TIMEOUT_S = 3600.0


async def run_case(client: httpx.AsyncClient, bot: str, case: Case) -> CaseResult:
    body: dict[str, Any] = {"bot": bot}
    if case.context:
        body["context"] = case.context
    started = await client.post("/api/v1/widget/conversations", json=body)
    started.raise_for_status()
    conversation = started.json()
    headers = {"Authorization": f"Bearer {conversation['customer_token']}"}
    url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
    said = Transcript()
    for turn in case.turns:
        await _send(client, url, headers, turn, said)
    return CaseResult(case, said, judge(case, said.reply, said.handed_off))


async def _send(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], text: str, said: Transcript
) -> None:
    sent, shown_ms = time.perf_counter(), None
    async with client.stream("POST", url, json={"text": text}, headers=headers) as response:
        if response.status_code != 200:
            await response.aread()
            raise RuntimeError(f"the app answered {response.status_code}: {response.text[:300]}")
        async for event in read_sse(response.aiter_lines()):
            if event.event == "token" and shown_ms is None and json.loads(event.data).get("text"):
                shown_ms = (time.perf_counter() - sent) * 1000  # the first word the customer sees
            elif event.event == "waiting":  # a human has the conversation already
                said.handed_off, said.reply, said.doubt, said.sources = True, "", None, ()
            elif event.event == "error":
                raise RuntimeError(f"the reply failed: {event.data}")
            elif event.event == "done":
                said.add_done(json.loads(event.data), shown_ms)


async def evaluate_bot(
    client: httpx.AsyncClient, bot: str, cases: list[Case], ground: Ground
) -> dict[str, Any]:
    started = time.perf_counter()
    results = []
    for case in tqdm(cases, desc=bot, unit="case", leave=False):
        result = await run_case(client, bot, case)
        said = result.said
        result.outcome, result.why = classify(case, said.reply, said.handed_off, result.passed, ground)
        results.append(result)
    return summarise(results, time.perf_counter() - started)


def bot_cases(prompts_dir: Path, bots: list[str] | None) -> dict[str, list[Case]]:
    """Each bot's cases (every bot with an eval file, or the ones named)."""
    folders = sorted(p for p in prompts_dir.iterdir() if (p / EVAL_FILE).is_file())
    chosen = {folder.name: folder for folder in folders if not bots or folder.name in bots}
    missing = sorted(set(bots or ()) - set(chosen))
    if missing:
        raise ValueError(f"no {EVAL_FILE} for {missing} in {prompts_dir}")
    return {slug: load_cases(folder / EVAL_FILE) for slug, folder in chosen.items()}


def eval_app_settings(settings: Settings, database: str, prompts: Path, *, as_served: bool) -> Settings:
    """The eval's own app: its database and prompts, no Redis, and one engine request at a time
    (the handoff judges' included: the same score each run) unless `as_served`. It is one client
    sending each case's messages as fast as the bot answers them, which the widget's limits per
    address and per conversation would cut short on a fast engine."""
    return settings.model_copy(
        update={
            "database_url": database,
            "redis_url": None,
            "prompts_dir": prompts,
            "one_request_at_a_time": not as_served,
            "rate_limit_requests_per_address": 1_000_000,
            "rate_limit_messages_per_conversation": 1_000_000,
        }
    )


@asynccontextmanager
async def app_client(
    settings: Settings, url: str | None, bots: Collection[str], *, as_served: bool = False
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the running app at `url`, or of an app of this process's own with only `bots`:
    one engine request at a time, or `as_served`, the turn's requests side by side as `serve`
    runs them (its timings are the customer's; its score may move a case or two between runs)."""
    if url:
        async with httpx.AsyncClient(base_url=url, timeout=600) as client:
            yield client
        return
    from backend.app import create_app
    from backend.migrate import upgrade

    with tempfile.TemporaryDirectory(prefix="prefixdesk-eval-") as folder:
        database = f"sqlite+aiosqlite:///{folder}/eval.db"
        await asyncio.to_thread(upgrade, database)
        # No bot it does not evaluate is loaded and warmed.
        prompts = copy_with_bots(settings.prompts_dir, Path(folder) / "prompts", bots)
        own = eval_app_settings(settings, database, prompts, as_served=as_served)
        app = create_app(own)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://eval", timeout=600) as client:
                await _wait_until_ready(client, max(own.engine_start_timeout_s, WARM_TIMEOUT_S))
                yield client


async def evaluate(
    settings: Settings, url: str | None, cases: dict[str, list[Case]], as_served: bool = False
) -> dict[str, Any]:
    """Each bot's cases through one app (see `app_client`), one bot after the other."""
    prompts = settings.prompts_dir
    grounds = {slug: Ground.of(load_bot(prompts / slug), prompts, prompts / slug) for slug in cases}
    async with app_client(settings, url, cases.keys(), as_served=as_served) as client:
        return {
            slug: await evaluate_bot(client, slug, bot_cases_, grounds[slug])
            for slug, bot_cases_ in cases.items()
        }


async def _wait_until_ready(client: httpx.AsyncClient, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while (response := await client.get("/readyz")).status_code != 200:
        if "error" in response.json() or time.monotonic() > deadline:
            raise RuntimeError(f"the app did not become ready: {response.json()}")
        await asyncio.sleep(1)
