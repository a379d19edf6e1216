"""Prompt versions over the admin API: a conversation keeps its prefix; a reload warms new
prefixes before traffic; a broken edit is refused; each bot as this process serves it."""

import shutil

from backend.agents.models import AgentRole
from backend.conversations import repository
from tests.helpers import done_event, send, start
from tests.knowledge.bots import write_help_bot
from tests.support import make_agent, running_app


async def context_of(client, conversation) -> list[int]:
    chat = client.app.state.services
    async with chat.sessions() as db:
        return await chat.context.rebuild(
            db, await repository.get_conversation(db, conversation["conversation_id"])
        )


async def test_conversations_keep_their_version_and_reloads_are_warm(
    tiny_settings, tiny_engine, prompts_copy
):
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts_copy})
    async with running_app(settings, tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        before = await start(client)
        old_prefix = client.app.state.services.bots["shop-en"].prefix.token_ids
        policy = prompts_copy / "shop-en" / "policy.md"
        policy.write_text(policy.read_text().replace("within 45 days", "within 60 days"))

        reloaded = await client.post("/api/v1/admin/prompts/reload", headers=admin)
        assert reloaded.status_code == 200
        bots = reloaded.json()["bots"]
        assert bots["shop-en"]["changed"] and not bots["appliance-zh"]["changed"]
        new_prefix = client.app.state.services.bots["shop-en"].prefix.token_ids
        assert new_prefix != old_prefix

        after = await start(client)
        first = done_event(await send(client, after, "How long do I have to return an item?"))
        # The new prefix was warmed by the reload, before this conversation existed.
        assert first["cached_tokens"] >= len(new_prefix) // 32 * 32
        assert (await context_of(client, after))[: len(new_prefix)] == list(new_prefix)

        # The older conversation still sees the prefix it started with.
        done_event(await send(client, before, "And how long for a refund?"))
        assert (await context_of(client, before))[: len(old_prefix)] == list(old_prefix)

        versions = (await client.get("/api/v1/admin/bots", headers=admin)).json()
        shop = next(b for b in versions if b["slug"] == "shop-en")
        current = [v for v in shop["versions"] if v["current"]]
        assert len(current) == 1 and current[0]["id"] == bots["shop-en"]["prompt_version_id"]
        assert len(shop["versions"]) >= 2
        assert shop["warmth"] == "warm" and shop["prefix_tokens"] == len(new_prefix)


async def test_each_bot_as_this_process_serves_it(tiny_settings, tiny_engine, prompts_copy):
    """Its warmth, its prefix's tokens and its help center, in the prefix or beside questions;
    nothing of the kind for a bot this process no longer serves."""
    write_help_bot(prompts_copy, "help-en")  # four short articles: they fit in the prefix
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts_copy})
    async with running_app(settings, tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        live = client.app.state.services.bots
        listed = {b["slug"]: b for b in (await client.get("/api/v1/admin/bots", headers=admin)).json()}
        for slug in live:
            assert listed[slug]["warmth"] == "warm", slug
            assert listed[slug]["prefix_tokens"] == len(live[slug].prefix.token_ids), slug
        assert listed["shop-en"]["help_center"] is None
        fits = listed["help-en"]["help_center"]
        assert fits == {"articles": 4, "tokens": live["help-en"].prefix.knowledge_tokens, "in_prefix": True}
        assert 0 < fits["tokens"] < listed["help-en"]["prefix_tokens"]
        # The tiny model's 2048-token window cannot hold tallybook's help center.
        tallybook = listed["tallybook-en"]["help_center"]
        assert tallybook["articles"] == len(live["tallybook-en"].definition.knowledge) == 43
        assert not tallybook["in_prefix"] and tallybook["tokens"] > settings.max_model_len
        assert listed["tallybook-en"]["prefix_tokens"] < tallybook["tokens"]

        shutil.rmtree(prompts_copy / "help-en")
        assert (await client.post("/api/v1/admin/prompts/reload", headers=admin)).status_code == 200
        listed = {b["slug"]: b for b in (await client.get("/api/v1/admin/bots", headers=admin)).json()}
        gone = listed["help-en"]
        assert (gone["warmth"], gone["prefix_tokens"], gone["help_center"]) == (None, None, None)
        assert len(gone["versions"]) >= 1 and not any(v["current"] for v in gone["versions"])


async def test_a_broken_edit_is_refused_and_the_old_prompts_keep_serving(
    tiny_settings, tiny_engine, prompts_copy
):
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts_copy})
    async with running_app(settings, tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        _, agent = await make_agent(client.app)
        assert (await client.post("/api/v1/admin/prompts/reload", headers=agent)).status_code == 403
        (prompts_copy / "shop-en" / "system.j2").write_text("You work for {{ compnay }}.\n{{ policy }}")
        refused = await client.post("/api/v1/admin/prompts/reload", headers=admin)
        assert refused.status_code == 422 and "compnay" in refused.json()["detail"]
        done_event(await send(client, await start(client), "Still there?"))
