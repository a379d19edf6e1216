"""Failures end in a clear error, and every accepted message stays in Postgres."""

from backend.engine.interface import EngineUnavailable, TokenDelta
from tests.helpers import auth, done_event, send, start
from tests.support import running_app


class EngineThatDiesMidReply:
    """The real engine, except that chosen replies break after their first token."""

    def __init__(self, inner):
        self.inner = inner
        self.block_size, self.max_model_len = inner.block_size, inner.max_model_len
        self.fail_next = False

    async def stream(self, prompt_ids, **options):
        async for item in self.inner.stream(prompt_ids, **options):
            yield item
            if self.fail_next and isinstance(item, TokenDelta):
                self.fail_next = False
                raise EngineUnavailable("the model engine failed: worker died")


async def test_an_engine_failure_mid_reply_keeps_the_message_and_a_retry_works(tiny_settings, tiny_engine):
    engine = EngineThatDiesMidReply(tiny_engine)
    async with running_app(tiny_settings, engine) as client:
        conversation = await start(client)
        engine.fail_next = True
        events = await send(client, conversation, "Where is my parcel?")
        kinds = [kind for kind, _ in events]
        assert kinds[0] == "accepted" and kinds[-1] == "error" and "done" not in kinds
        assert "your message is saved" in events[-1][1]["detail"]

        retry = done_event(await send(client, conversation, "Where is my parcel?"))
        history = (
            await client.get(
                f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
                headers=auth(conversation),
            )
        ).json()["messages"]
        assert [(m["role"], m["status"]) for m in history] == [
            ("user", "complete"),
            ("assistant", "failed"),
            ("user", "complete"),
            ("assistant", "complete"),
        ]
        assert history[3]["text"] == retry["text"]
        # The failed reply added nothing to the context, and the cache still serves the
        # bot's prefix (657 tokens: 20 full blocks) and what follows it.
        assert retry["cached_tokens"] >= 640


async def test_an_unreachable_redis_gives_a_clean_503_and_stores_nothing(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"})
    async with running_app(settings, tiny_engine) as client:
        conversation = await start(client)  # Postgres alone is enough to start
        url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        response = await client.post(url, json={"text": "hello"}, headers=auth(conversation))
        assert response.status_code == 503
        assert "session store" in response.json()["detail"] and response.headers["retry-after"]
        assert (await client.get(url, headers=auth(conversation))).json()["messages"] == []
