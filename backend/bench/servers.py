"""The servers a benchmark drives over HTTP: the app itself, and vLLM's own as the peer.

Each is started in its own process group on a free loopback port and stopped with it, so its
engine, caches and memory end with the run.
"""

import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from backend.config import PROJECT_ROOT, Settings
from backend.engine.local_replicas import replica_command
from backend.prompting.definitions import copy_with_bots
from backend.prompting.judge_prompts import SHARED_FOLDER, SHIPPED

PEER_MODEL_NAME = "bench"


def app_command(port: int) -> list[str]:
    return [sys.executable, "-m", "backend.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]


def app_environment(settings: Settings, *, max_tokens: int, redis_prefix: str) -> dict[str, str]:
    """The app as deployed, with the abuse limits lifted: all load comes from one address."""
    env = {
        "PREFIXDESK_ENABLE_PREFIX_CACHING": str(settings.enable_prefix_caching).lower(),
        "PREFIXDESK_MAX_REPLY_TOKENS": str(max_tokens),
        "PREFIXDESK_SPECULATIVE_METHOD": settings.speculative_method,
        "PREFIXDESK_SPECULATIVE_MAX_BATCH": str(settings.speculative_max_batch),
        "PREFIXDESK_RATE_LIMIT_REQUESTS_PER_ADDRESS": "100000000",
        "PREFIXDESK_RATE_LIMIT_MESSAGES_PER_CONVERSATION": "100000",
        "PREFIXDESK_MAX_PENDING_REPLIES": "100000",
        "PREFIXDESK_REDIS_KEY_PREFIX": redis_prefix,
        "DATABASE_URL": settings.database_url,
    }
    if settings.redis_url:
        env["REDIS_URL"] = settings.redis_url
    if settings.model is not None:
        env["PREFIXDESK_MODEL"] = str(settings.model)
    return env


def engine_log(path: Path) -> dict:
    """What the app's log says of its KV cache: vLLM's size in tokens, and the app's own sizing."""
    text = path.read_text(errors="replace") if path.exists() else ""
    tokens = re.search(r"KV cache size: ([\d,]+) tokens", text)
    sizing = re.search(r"(KV cache: [\d,]+ tokens at .*?)\s*$", text, re.MULTILINE)
    fixed = re.search(r"warm prefixes take ([\d,]+)", text)
    return {
        "kv_cache_tokens": int(tokens[1].replace(",", "")) if tokens else None,
        "sizing": sizing[1] if sizing else None,
        "fixed_tokens": int(fixed[1].replace(",", "")) if fixed else None,
    }


BENCH_HANDOFF_THRESHOLD = 0.99


def bench_prompts(
    source: Path, target: Path, *, only: Collection[str] | None = None, retrieval: Collection[str] = ()
) -> Path:
    """The bots as they are, except that they never hand over for replies that did not answer,
    and their handoff judges only when all but certain: they are still asked every turn (their cost
    is the app's), but a benchmark question they misread must not end a conversation.

    Every turn must be a bot reply in every way, or the ways would not do the same work; the
    fixed prefixes (system prompt, greeting) are unchanged. `only`: just these bots (and the
    shared folders, such as `_judges`); `retrieval`: these bots keep no help-center article in
    their fixed prefix (`[knowledge] max_prefix_tokens = 0`), so the articles matching each
    question come beside it.
    """

    if only is None:
        shutil.copytree(source, target)
    else:
        copy_with_bots(source, target, only)
    for bot_toml in target.glob("*/bot.toml"):
        text = _set_key(bot_toml.read_text(encoding="utf-8"), "handoff", "max_unanswered", "1000000")
        if bot_toml.parent.name in retrieval:
            text = _set_key(text, "knowledge", "max_prefix_tokens", "0")
        bot_toml.write_text(text, encoding="utf-8")
    for name in ("handoff.toml", "offer_accepted.toml"):
        shared = target / SHARED_FOLDER / name
        if not shared.is_file():  # a prompts folder without it gets the shipped one: copy that in
            shared.parent.mkdir(exist_ok=True)
            shutil.copy2(SHIPPED / name, shared)
        for judge in [shared, *target.glob(f"*/judges/{name}")]:
            text = re.sub(
                r"(?m)^threshold\s*=.*$", f"threshold = {BENCH_HANDOFF_THRESHOLD}", judge.read_text("utf-8")
            )
            judge.write_text(text, encoding="utf-8")
    return target


def _set_key(text: str, table: str, key: str, value: str) -> str:
    """`key = value` in the TOML `[table]` of a bot.toml (the key set the same in every table)."""
    text, found = re.subn(rf"(?m)^{key}\s*=.*$", f"{key} = {value}", text)
    if found:
        return text
    if f"[{table}]\n" in text:
        return text.replace(f"[{table}]\n", f"[{table}]\n{key} = {value}\n", 1)
    return text + f"\n[{table}]\n{key} = {value}\n"


def peer_command(settings: Settings, model_dir: Path, port: int) -> list[str]:
    """`vllm serve` with the app's engine settings, as a remote-mode replica runs it."""
    return [*replica_command(settings, model_dir, port), "--served-model-name", PEER_MODEL_NAME]


class Server:
    def __init__(self, process: subprocess.Popen, url: str, log: Path):
        self.process, self.url, self.log = process, url, log

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-chars:]
        return ""

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@asynccontextmanager
async def running(
    command: list[str], extra_env: dict[str, str], ready_path: str, log: Path, timeout_s: float = 1200
) -> AsyncIterator[Server]:
    """Start a server and yield it once `ready_path` answers 200; stop it afterwards."""
    port = int(command[command.index("--port") + 1])
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603, ASYNC220 (our own interpreter; returns at once)
            command,
            env={**os.environ, **extra_env},
            cwd=PROJECT_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with everything it started
        )
    server = Server(process, url, log)
    try:
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient(base_url=url, timeout=5) as client:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"server exited with {process.returncode}:\n{server.log_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server not ready after {timeout_s:.0f} s:\n{server.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(ready_path)).status_code == 200:
                        break
                await asyncio.sleep(0.5)
        yield server
    finally:
        await asyncio.to_thread(server.stop)
