"""Postgres restarted under the app: clean 503s while it is down, recovery by itself after.

Runs its own Postgres server, so the shared one stays up for the other tests.
"""

import asyncio
import glob
import os
import pwd
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backend.migrate import upgrade
from tests.helpers import auth, done_event, send, start
from tests.support import free_port, running_app

SERVER_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
BIN = Path(SERVER_BINS[-1]) if SERVER_BINS else None


class PrivatePostgres:
    def __init__(self, data_dir: Path, port: int):
        self.data_dir, self.port = data_dir, port
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{port}/postgres"

    async def _run(self, *command: str) -> None:
        # Postgres refuses to run as root; run it as the postgres user then.
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        process = await asyncio.create_subprocess_exec(
            *prefix, *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        output, _ = await process.communicate()
        assert process.returncode == 0, output.decode()

    async def init(self) -> None:
        await self._run(str(BIN / "initdb"), "-D", str(self.data_dir), "-A", "trust", "-U", "postgres", "-N")

    async def start(self) -> None:
        options = f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.data_dir / "server.log")
        pg_ctl = str(BIN / "pg_ctl")
        await self._run(pg_ctl, "-D", str(self.data_dir), "-o", options, "-l", log, "-w", "start")

    async def stop(self) -> None:
        if not (self.data_dir / "postmaster.pid").exists():
            return
        await self._run(str(BIN / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop")


@pytest.fixture
async def private_postgres() -> AsyncIterator[PrivatePostgres]:
    if BIN is None:
        pytest.skip("needs Debian's PostgreSQL server binaries")
    data_dir = Path(tempfile.mkdtemp(prefix="prefixdesk-pg-"))
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(data_dir, account.pw_uid, account.pw_gid)
    server = PrivatePostgres(data_dir, free_port())
    await server.init()
    await server.start()
    try:
        await asyncio.to_thread(upgrade, server.url)
        yield server
    finally:
        await server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


async def test_requests_fail_cleanly_while_postgres_is_down_and_recover(
    private_postgres, tiny_settings, tiny_engine
):
    settings = tiny_settings.model_copy(update={"database_url": private_postgres.url})
    async with running_app(settings, tiny_engine) as client:
        conversation = await start(client)
        messages = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        first = done_event(await send(client, conversation, "Do you ship to Norway?"))

        await private_postgres.stop()
        for request in (
            lambda: client.post(messages, json={"text": "Still there?"}, headers=auth(conversation)),
            lambda: client.get(messages, headers=auth(conversation)),
            lambda: client.post("/api/v1/widget/conversations", json={"bot": "shop-en"}),
        ):
            response = await request()
            assert response.status_code == 503, response.text
            assert "database" in response.json()["detail"] and response.headers["retry-after"]

        await private_postgres.start()
        again = done_event(await send(client, conversation, "And to Switzerland?"))
        assert again["cached_tokens"] >= first["prompt_tokens"] - 32
        history = (await client.get(messages, headers=auth(conversation))).json()["messages"]
        assert [m["text"] for m in history if m["role"] == "user"] == [
            "Do you ship to Norway?",
            "And to Switzerland?",
        ]
        assert [m["status"] for m in history] == ["complete"] * 4
