"""A session store out of reach ends a turn in a clean 503, with nothing stored.

(An engine failing mid-reply: tests/turns/test_turns.py.)"""

from tests.helpers import auth, start
from tests.support import running_app


async def test_an_unreachable_redis_gives_a_clean_503_and_stores_nothing(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0"})
    async with running_app(settings, tiny_engine) as client:
        conversation = await start(client)  # Postgres alone is enough to start
        url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        response = await client.post(url, json={"text": "hello"}, headers=auth(conversation))
        assert response.status_code == 503
        assert "session store" in response.json()["detail"] and response.headers["retry-after"]
        assert (await client.get(url, headers=auth(conversation))).json()["messages"] == []
