"""The bot registry's reload, through `PromptReloads` on the real engine and Postgres, no HTTP: a
changed prefix is a new version, warmed before it serves; conversations keep theirs; a
broken edit changes nothing; every process follows a reload."""

import pytest

from backend.errors import InvalidInput
from tests.helpers import done_of, open_conversation, stored, take_turn
from tests.support import eventually


async def reload(services) -> dict:
    async with services.new_work() as work:
        return await services.reloads.reload(work)


async def context_of(services, conversation_id: str) -> list[int]:
    conversation, _ = await stored(services, conversation_id)
    async with services.new_work() as work:
        return await services.context.rebuild(work.db, conversation)


def edit_policy(prompts_copy) -> None:
    policy = prompts_copy / "shop-en" / "policy.md"
    policy.write_text(policy.read_text().replace("within 45 days", "within 60 days"))


async def test_a_reload_without_changes_keeps_every_version(services):
    versions = {slug: live.prompt_version_id for slug, live in services.bots.items()}
    reloaded = await reload(services)
    assert {slug: bot["changed"] for slug, bot in reloaded.items()} == dict.fromkeys(versions, False)
    assert {slug: bot["prompt_version_id"] for slug, bot in reloaded.items()} == versions
    assert {slug: live.prompt_version_id for slug, live in services.bots.items()} == versions


async def test_a_changed_prefix_is_a_new_version_warmed_before_it_serves(make_services, prompts_copy):
    services = await make_services(prompts_dir=prompts_copy)
    old = services.bots["shop-en"]
    before = (await open_conversation(services)).conversation.id
    edit_policy(prompts_copy)

    reloaded = await reload(services)

    assert reloaded["shop-en"]["changed"] and not reloaded["appliance-zh"]["changed"]
    new = services.bots["shop-en"]
    assert new.prompt_version_id == reloaded["shop-en"]["prompt_version_id"] != old.prompt_version_id
    assert new.prefix != old.prefix and new.cache_salt == old.cache_salt
    assert new.definition.reference.meaning.prepared  # its lines encoded while it warmed
    assert services.bots.prefix_of_version(old.prompt_version_id) == old.prefix.token_ids
    after = (await open_conversation(services)).conversation.id
    first = done_of(await take_turn(services, after, "How long do I have to return an item?"))
    # The new prefix was warmed by the reload, before this conversation existed.
    assert first.cached_tokens >= len(new.prefix.token_ids) // 32 * 32
    assert (await context_of(services, after))[: len(new.prefix.token_ids)] == list(new.prefix.token_ids)
    # The older conversation still sees the prefix it started with.
    done_of(await take_turn(services, before, "And how long for a refund?"))
    assert (await context_of(services, before))[: len(old.prefix.token_ids)] == list(old.prefix.token_ids)


async def test_a_broken_edit_is_refused_and_the_old_prompts_keep_serving(make_services, prompts_copy):
    services = await make_services(prompts_dir=prompts_copy)
    versions = {slug: live.prompt_version_id for slug, live in services.bots.items()}
    (prompts_copy / "shop-en" / "system.j2").write_text("You work for {{ compnay }}.\n{{ policy }}")

    with pytest.raises(InvalidInput, match="compnay"):
        await reload(services)

    assert {slug: live.prompt_version_id for slug, live in services.bots.items()} == versions
    cid = (await open_conversation(services)).conversation.id
    done_of(await take_turn(services, cid, "Still there?"))


async def test_every_process_follows_a_reload(make_services, prompts_copy):
    here = await make_services(prompts_dir=prompts_copy)
    elsewhere = await make_services(prompts_dir=prompts_copy)  # another app process, same Redis
    edit_policy(prompts_copy)

    reloaded = await reload(here)

    new_version = reloaded["shop-en"]["prompt_version_id"]
    await eventually(
        lambda: elsewhere.bots["shop-en"].prompt_version_id == new_version,
        what="the other process reloaded too",
    )
    assert elsewhere.bots["shop-en"].prefix == here.bots["shop-en"].prefix
