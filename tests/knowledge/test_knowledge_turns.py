"""A help center on the real stack (tiny model, Postgres, Redis): in the fixed prefix when it
fits, else the matching articles beside each question, once each and append-only; versions
kept by conversations; sources checked and stored."""

from backend.knowledge.articles import Article
from backend.prompting.assembler import cacheable_tokens
from tests.helpers import WrappedEngine, done_of, open_conversation, stored, take_turn
from tests.knowledge.bots import article_file, help_prompts


async def test_a_help_center_that_fits_is_in_the_fixed_prefix(make_services, tmp_path):
    services = await make_services(prompts_dir=help_prompts(tmp_path))
    live = services.bots["help-en"]
    assert live.prefix.knowledge_in_prefix and live.prefix.knowledge_tokens > 0
    prefix_text = services.assembler.format.tokenizer.decode(live.prefix.token_ids)
    assert "## [late-fees] Late fees on overdue invoices" in prefix_text
    # Canonical order: by id, whatever order the files were written in.
    assert (
        prefix_text.index("[bank-sync]")
        < prefix_text.index("[invoice-numbering]")
        < prefix_text.index("[late-fees]")
    )
    cid = (await open_conversation(services, "help-en")).conversation.id
    done_of(await take_turn(services, cid, "Is there a late fee?"))
    _, messages = await stored(services, cid)
    assert messages[0].articles is None


async def test_articles_that_do_not_fit_come_beside_the_question_once_each(make_services, tmp_path):
    services = await make_services(prompts_dir=help_prompts(tmp_path))
    live = services.bots["help-search-en"]
    assert not live.prefix.knowledge_in_prefix
    assert "late fee" not in services.assembler.format.tokenizer.decode(live.prefix.token_ids)
    cid = (await open_conversation(services, "help-search-en")).conversation.id

    first = done_of(await take_turn(services, cid, "Do you charge a late fee on overdue invoices?"))
    second = done_of(await take_turn(services, cid, "And how late is too late for the fee?"))
    third = done_of(await take_turn(services, cid, "My bank sync stopped working"))
    _, messages = await stored(services, cid)
    users = [m for m in messages if m.role == "user"]
    assert users[0].articles is not None and "late-fees" in users[0].articles
    assert users[0].articles == sorted(users[0].articles)  # canonical order within a turn
    assert not set(users[1].articles or []) & set(users[0].articles)  # never given twice
    assert "bank-sync" in (users[2].articles or [])
    decode = services.assembler.format.tokenizer.decode
    assert "A late fee of 2% of the invoice total" in decode(users[0].token_ids)
    assert "[late-fees] Late fees on overdue invoices" in decode(users[0].token_ids)
    assert "[late-fees]" not in decode(users[1].token_ids)  # the article is not given again

    # Append-only: each turn's prompt starts with everything before it, so the cache serves it.
    history = [*live.prefix.token_ids]
    for message in messages:
        history.extend(message.token_ids)
    rebuilt = await services.context.rebuild_for(cid) if hasattr(services.context, "rebuild_for") else None
    assert rebuilt is None or rebuilt == history
    for earlier, later in ((first, second), (second, third)):
        earlier_end = earlier.prompt_tokens + earlier.completion_tokens
        assert later.cached_tokens >= cacheable_tokens(earlier_end, 32) - 32


async def test_chinese_questions_bring_chinese_articles(make_services, tmp_path):
    services = await make_services(prompts_dir=help_prompts(tmp_path))
    cid = (await open_conversation(services, "help-search-zh")).conversation.id
    done_of(await take_turn(services, cid, "压缩机坏了，保修几年？"))
    done_of(await take_turn(services, cid, "空调安装要收费吗"))
    _, messages = await stored(services, cid)
    users = [m for m in messages if m.role == "user"]
    assert users[0].articles == ["warranty"]
    assert users[1].articles == ["install"]
    assert "与顾客下一条消息相关的帮助中心文章" in services.assembler.format.tokenizer.decode(
        users[0].token_ids
    )


async def test_a_conversation_keeps_the_help_center_it_started_with(make_services, tmp_path):
    prompts = help_prompts(tmp_path)
    services = await make_services(prompts_dir=prompts)
    old = await open_conversation(services, "help-search-en")
    old_version = services.bots["help-search-en"].prompt_version_id
    (prompts / "help-search-en" / "knowledge" / "late-fees.md").write_text(
        article_file("Late fees on overdue invoices", None, "A late fee of 5% is added after 14 days."),
        encoding="utf-8",
    )
    async with services.new_work() as work:
        await services.bots.reload(work, services.engine.current)
    assert services.bots["help-search-en"].prompt_version_id != old_version
    new = await open_conversation(services, "help-search-en")
    decode = services.assembler.format.tokenizer.decode
    for conversation, fee in ((old, "2%"), (new, "5%")):
        cid = conversation.conversation.id
        done_of(await take_turn(services, cid, "Is there a late fee?"))
        _, messages = await stored(services, cid)
        assert f"A late fee of {fee}" in decode(messages[0].token_ids)


class CitingReplies(WrappedEngine):
    """The model's reply, with citations written after it: one real article, one made up."""

    async def stream(self, prompt_ids, **options):
        async for item in self.inner.stream(prompt_ids, **options):
            if hasattr(item, "finish_reason") and str(options.get("request_id", "")).startswith("reply-"):
                item = type(item)(**{**vars(item), "text": "A 2% fee applies [late-fees] [made-up-faq]."})
            yield item


async def test_a_reply_keeps_the_articles_it_cites_that_exist(make_services, tiny_engine, tmp_path):
    services = await make_services(prompts_dir=help_prompts(tmp_path), engine=CitingReplies(tiny_engine))
    cid = (await open_conversation(services, "help-search-en")).conversation.id
    done = done_of(await take_turn(services, cid, "Is there a late fee?"))
    source = {
        "id": "late-fees",
        "title": "Late fees on overdue invoices",
        "url": "https://help.example.com/late-fees",
    }
    # Each with the passage of the article that matches the question and the reply best.
    assert done.text == "A 2% fee applies." and len(done.sources) == 1
    passage = done.sources[0].pop("passage")
    assert done.sources == [source] and passage and "2%" in passage
    _, messages = await stored(services, cid)
    assert messages[-1].text == "A 2% fee applies." and messages[-1].sources == [
        {**source, "passage": passage}
    ]


def test_article_note_labels_each_article_with_its_id(assembler_en=None):
    from backend.prompting.assembler import PromptAssembler

    note = PromptAssembler.articles_note([Article("a-b", "Title", None, "Body.")], "en")
    assert note is not None and note.endswith("[a-b] Title\nBody.")
