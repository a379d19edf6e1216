"""Bots are tenants: each has its own cache salt, so none hits (or can time) another's prefix."""

import shutil
import uuid

from tests.helpers import done_of, open_conversation, take_turn


async def first_turn(services, bot: str, text: str):
    cid = (await open_conversation(services, bot)).conversation.id
    return done_of(await take_turn(services, cid, text))


async def test_an_identical_prefix_of_another_bot_is_not_served_from_cache(make_services, prompts_copy):
    twin = f"twin-{uuid.uuid4().hex[:8]}"  # never seen by this engine before
    shutil.copytree(prompts_copy / "shop-en", prompts_copy / twin)
    services = await make_services(prompts_dir=prompts_copy, warmup_on_start=False)
    assert services.bots[twin].prefix.token_ids == services.bots["shop-en"].prefix.token_ids
    assert services.bots[twin].cache_salt != services.bots["shop-en"].cache_salt
    # What a remote engine names to a router in front of replicas, from each request's salt.
    assert services.bots.slug_of_salt(services.bots[twin].cache_salt) == twin
    assert services.bots.slug_of_salt("labelled") is None

    await first_turn(services, "shop-en", "Hi")
    shop = await first_turn(services, "shop-en", "Hello")
    assert shop.cached_tokens >= 640  # shop-en's prefix is in the cache

    first_twin = await first_turn(services, twin, "Hello")
    assert first_twin.cached_tokens == 0  # same tokens, other tenant: nothing shared
    second_twin = await first_turn(services, twin, "Hello again")
    assert second_twin.cached_tokens >= 640  # its own cache works
