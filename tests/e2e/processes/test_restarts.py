"""The engine's process killed mid-reply, and the whole app restarted mid-conversation.

Each test runs `prefixdesk serve` in its own process, so killing its engine leaves the
test session's shared engine alone.
"""

import os
import signal

import httpx
import psutil
from sqlalchemy import select

from backend.conversations.models import Message
from backend.db import create_db_engine, create_session_factory
from tests.helpers import auth, done_event, parse_sse, send, start
from tests.support import app_process, eventually, serve_env


def engine_core_of(app_pid: int) -> psutil.Process:
    """vLLM runs the model in a child process it titles EngineCore."""
    for child in psutil.Process(app_pid).children(recursive=True):
        if "EngineCore" in " ".join([child.name(), *child.cmdline()]):
            return child
    raise AssertionError("no EngineCore process under the app")


async def readiness(client: httpx.AsyncClient) -> dict:
    return (await client.get("/readyz")).json()


async def stored_messages(database_url: str, conversation_id: str) -> list[tuple[str, str, str]]:
    db = create_db_engine(database_url)
    try:
        async with create_session_factory(db)() as session:
            rows = await session.scalars(
                select(Message).where(Message.conversation_id == conversation_id).order_by(Message.seq)
            )
            return [(m.role.value, m.status.value, m.text) for m in rows]
    finally:
        await db.dispose()


async def test_the_engine_dies_mid_reply_and_the_app_starts_a_new_one(tiny_settings, tmp_path):
    # Long replies, streamed as written (no answer checks), so that the engine is still
    # writing when it is killed after the first token.
    env = serve_env(tiny_settings, PREFIXDESK_MAX_REPLY_TOKENS="1000", PREFIXDESK_ANSWER_CHECKS="off")
    async with (
        app_process(env, tmp_path / "serve.log") as app,
        httpx.AsyncClient(base_url=app.url, timeout=120) as client,
    ):
        conversation = await start(client)
        messages = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        killed = None
        # The engine is paused before the message and killed once the turn is accepted: the
        # tiny model writes fast, and on a busy machine a whole reply could come before the
        # client read the turn's first event.
        paused = engine_core_of(app.process.pid)
        paused.send_signal(signal.SIGSTOP)
        async with client.stream(
            "POST", messages, json={"text": "Where is my parcel?"}, headers=auth(conversation)
        ) as response:
            assert response.status_code == 200
            body = ""
            async for chunk in response.aiter_text():
                body += chunk
                if killed is None and "event: accepted" in body:
                    killed = paused
                    killed.send_signal(signal.SIGKILL)
        assert killed is not None, "the reply ended before the engine could be killed"
        kinds = [kind for kind, _ in parse_sse(body)]
        assert kinds[0] == "accepted" and kinds[-1] == "error" and "done" not in kinds
        assert "your message is saved" in parse_sse(body)[-1][1]["detail"]

        # While a new engine loads, turns are refused cleanly, never half-stored.
        refused = await client.post(messages, json={"text": "Hello?"}, headers=auth(conversation))
        if refused.status_code != 200:
            assert refused.status_code == 503 and refused.headers["retry-after"]

        async def restarted() -> dict | None:
            state = await readiness(client)
            return state if state["ready"] and state["engine"]["restarts"] == 1 else None

        await eventually(restarted, timeout_s=150, interval_s=0.25, what="the engine was restarted")
        assert engine_core_of(app.process.pid).pid != killed.pid

        retry = done_event(await send(client, conversation, "Where is my parcel?"))
        # The new engine warmed the bot's prefix (657 tokens: 20 full blocks) before it took turns.
        assert retry["cached_tokens"] >= 640
        stored = await stored_messages(tiny_settings.database_url, conversation["conversation_id"])
        assert stored[0] == ("user", "complete", "Where is my parcel?")
        assert stored[1][:2] == ("assistant", "failed")
        assert stored[-2] == ("user", "complete", "Where is my parcel?")
        assert stored[-1][:2] == ("assistant", "complete") and stored[-1][2] == retry["text"]
        assert len(stored) in (4, 6)  # 6 if "Hello?" was taken after the new engine was ready


async def test_the_app_killed_mid_reply_restarts_with_the_history_intact_and_the_cache_hits_again(
    tiny_settings, tmp_path
):
    # Long replies, streamed as written (no answer checks), so that the app is still writing one
    # when it is killed after the first token; a short turn lock, so that the dead process's
    # lock frees itself quickly.
    env = serve_env(
        tiny_settings,
        PREFIXDESK_MAX_REPLY_TOKENS="1000",
        PREFIXDESK_TURN_LOCK_TTL_S="5",
        PREFIXDESK_ANSWER_CHECKS="off",
    )
    async with (
        app_process(env, tmp_path / "first.log") as app,
        httpx.AsyncClient(base_url=app.url, timeout=120) as client,
    ):
        conversation = await start(client)
        messages = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        async with client.stream(
            "POST", messages, json={"text": "Do you ship to Norway?"}, headers=auth(conversation)
        ) as response:
            async for chunk in response.aiter_text():
                if "event: token" in chunk:
                    os.killpg(app.process.pid, signal.SIGKILL)
                    break
        await app.process.wait()
        port = int(app.url.rsplit(":", 1)[1])
    stored = await stored_messages(tiny_settings.database_url, conversation["conversation_id"])
    assert [m[:2] for m in stored] == [("user", "complete"), ("assistant", "generating")]

    env = serve_env(tiny_settings, PREFIXDESK_TURN_LOCK_TTL_S="5")  # short replies from here on
    async with (
        app_process(env, tmp_path / "second.log", port=port) as app,
        httpx.AsyncClient(base_url=app.url, timeout=120) as client,
    ):
        history = (await client.get(messages, headers=auth(conversation))).json()["messages"]
        assert history[0]["text"] == "Do you ship to Norway?"

        async def taken() -> httpx.Response | None:
            response = await client.post(messages, json={"text": "Hello?"}, headers=auth(conversation))
            return response if response.status_code != 409 else None

        # Refused (409) until the dead process's turn lock expires.
        response = await eventually(taken, timeout_s=25, interval_s=0.25, what="the turn lock expired")
        assert response.status_code == 200, response.text
        second = done_event(parse_sse(response.text))
        # A new engine: the bot's prefix was warmed at start (657 tokens: 20 full blocks);
        # what the conversation added is computed once more, then hits again.
        assert 640 <= second["cached_tokens"] < second["prompt_tokens"] - 32
        third = done_event(await send(client, conversation, "How long does it take?"))
        assert third["cached_tokens"] >= second["prompt_tokens"] - 32

    stored = await stored_messages(tiny_settings.database_url, conversation["conversation_id"])
    assert [m[:2] for m in stored] == [
        ("user", "complete"),
        ("assistant", "failed"),  # cut off by the kill, marked when the next turn came
        ("user", "complete"),
        ("assistant", "complete"),
        ("user", "complete"),
        ("assistant", "complete"),
    ]
