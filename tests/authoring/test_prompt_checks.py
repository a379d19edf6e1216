"""The prompt checks, one file or template at a time: cache-busters named, chat templates tested."""

from pathlib import Path

import pytest

from backend.authoring.cache_busters import text_findings
from backend.authoring.checks import CacheUsage, cache_usage
from backend.authoring.fixed_prefix import fixed_prefix_problems
from backend.authoring.template_checks import chat_template_problems
from backend.prompting.chat_format import ChatFormat
from tests.authoring.edits import LAST_MESSAGES_TEMPLATE, edited_bot


def found(folder: Path) -> set[tuple[str, str]]:
    """(file, kind) of what the static scan finds, without running the command."""
    return {(problem.file, problem.kind) for problem in fixed_prefix_problems(folder)}


@pytest.mark.parametrize(
    "line",
    [
        "It is {{ now() }}.",
        "Your reference: {{ uuid4() }}",
        "{{ lipsum(1) }}",
        "{{ ['Hi', 'Hello'] | random }}",
    ],
)
def test_calls_that_differ_per_render_are_named(tmp_path, line):
    folder = edited_bot(tmp_path, "system.j2", lambda text: line + "\n" + text)
    assert found(folder) == {("system.j2", "dynamic-call")}


def test_a_variable_from_bot_toml_vars_is_static(tmp_path):
    folder = edited_bot(tmp_path, "bot.toml", lambda text: text + 'city = "Rotterdam"\n')
    (folder / "policy.md").write_text("We are in {{ city }}, at {{ company }}.\n{{ opening_hours }}")
    assert found(folder) == {("policy.md", "request-variable")}
    assert "opening_hours" in str(fixed_prefix_problems(folder))


def test_a_system_prompt_that_renders_the_worked_examples_is_named(tmp_path):
    loop = "\n{% for e in examples %}{{ e }}{% endfor %}"
    folder = edited_bot(tmp_path, "system.j2", lambda text: text + loop)
    assert found(folder) == {("system.j2", "examples-in-system-prompt")}


@pytest.mark.parametrize(
    ("file", "edit"),
    [
        ("system.j2", lambda text: "Today is Friday.\n" + text),
        ("system.j2", lambda text: text + "\nLast updated on Friday, 29 November."),
        ("bot.toml", lambda text: text.replace("How can I help", "The time is 14:05:33. How can I help")),
        ("policy.md", lambda text: text + "\n- 2026年11月29日起，运费上调。"),
        ("policy.md", lambda text: text + "\n- Prices changed on 29/11/2026."),
    ],
)
def test_dates_and_times_are_named_in_each_fixed_file(tmp_path, file, edit):
    assert found(edited_bot(tmp_path, file, edit)) == {(file, "date-time")}


@pytest.mark.parametrize(
    "text",
    [
        "Human colleagues answer from Monday to Friday, 08:00 to 18:00 CET.",
        "Orders placed before 14:00 CET on a business day ship the same day.",
        "人工客服服务时间为每天9:00到21:00。服务热线：400-820-1357。",
        "Return shipping costs a flat 6.90 EUR; call +31 10 555 0145. Customers may return items.",
    ],
)
def test_opening_hours_prices_and_phone_numbers_are_not_dates(text):
    assert text_findings(text) == []


@pytest.mark.parametrize(
    "line",
    ["request_id=7f3a9c2e", "Build 9f86d081884c7d659a2feaa0c55ad015", "Token k3J9xQ2mP8vL1nR7tY4wZ"],
)
def test_random_ids_are_named(tmp_path, line):
    assert found(edited_bot(tmp_path, "policy.md", lambda text: text + "\n" + line)) == {
        ("policy.md", "random-id")
    }


@pytest.mark.parametrize(
    ("file", "edit"),
    [
        ("bot.toml", lambda text: text.replace("Hi, I'm", "Hi,\\u00A0I'm")),  # a TOML escape
        ("bot.toml", lambda text: text.replace("Hi, I'm", "Hi,\\r\\nI'm")),
        ("system.j2", lambda text: text.replace("Be brief", "\tBe brief")),
    ],
)
def test_invisible_and_fragile_characters_are_named(tmp_path, file, edit):
    assert found(edited_bot(tmp_path, file, edit)) == {(file, "whitespace")}


def test_cached_share_counts_full_blocks_of_the_prefix():
    assert cache_usage(657, 676, 32) == CacheUsage(657, 640, 676, 640)
    # A prefix of exactly 20 blocks is followed by the question, so all 20 are reused;
    # cacheable_tokens(640, 32) would say 19 (it keeps a prompt's own last token to compute).
    assert cache_usage(640, 660, 32) == CacheUsage(640, 640, 660, 640)
    assert cache_usage(20, 40, 32) == CacheUsage(20, 0, 40, 0)


def test_the_models_own_chat_template_is_append_only_over_four_turns(default_tokenizer):
    assert chat_template_problems(default_tokenizer) == []


def test_only_whole_conversations_show_a_template_that_drops_early_turns(default_tokenizer):
    original = default_tokenizer.chat_template
    default_tokenizer.chat_template = LAST_MESSAGES_TEMPLATE.replace("KEEP", "6")
    try:
        ChatFormat(default_tokenizer)  # its single steps see at most three messages and pass
        problems = chat_template_problems(default_tokenizer)
    finally:
        default_tokenizer.chat_template = original
    assert [(p.kind, p.file) for p in problems] == [("not-append-only", "chat_template")]
    assert "7 messages" in problems[0].detail


def test_a_generation_prompt_that_is_not_how_replies_start_is_named(default_tokenizer):
    original = default_tokenizer.chat_template
    default_tokenizer.chat_template = LAST_MESSAGES_TEMPLATE.replace("[-KEEP:]", "").replace(
        "'<|im_start|>assistant\\n'", "'<|im_start|>bot\\n'"
    )
    try:
        problems = chat_template_problems(default_tokenizer)
    finally:
        default_tokenizer.chat_template = original
    assert [(p.kind, p.file) for p in problems] == [("not-append-only", "chat_template")]
    assert "generation prompt" in problems[0].detail
