"""Bots are tenants: each has its own cache salt, so none hits (or can time) another's prefix."""

import shutil
import uuid

from backend.config import PROJECT_ROOT
from tests.helpers import done_event, send, start
from tests.support import running_app


async def test_an_identical_prefix_of_another_bot_is_not_served_from_cache(
    tiny_settings, tiny_engine, tmp_path
):
    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", prompts)
    twin = f"twin-{uuid.uuid4().hex[:8]}"  # never seen by this engine before
    shutil.copytree(prompts / "shop-en", prompts / twin)
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts, "warmup_on_start": False})
    async with running_app(settings, tiny_engine) as client:
        chat = client.app.state.services
        assert chat.bots[twin].prefix.token_ids == chat.bots["shop-en"].prefix.token_ids
        assert chat.bots[twin].cache_salt != chat.bots["shop-en"].cache_salt
        done_event(await send(client, await start(client, "shop-en"), "Hi"))
        shop = done_event(await send(client, await start(client, "shop-en"), "Hello"))
        assert shop["cached_tokens"] >= 640  # shop-en's prefix is in the cache

        first_twin = done_event(await send(client, await start(client, twin), "Hello"))
        assert first_twin["cached_tokens"] == 0  # same tokens, other tenant: nothing shared
        second_twin = done_event(await send(client, await start(client, twin), "Hello again"))
        assert second_twin["cached_tokens"] >= 640  # its own cache works
