"""`prefixdesk prompts check`: the shipped bots pass; each cache-buster is named and fails the command."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from backend.config import PROJECT_ROOT
from backend.prompting.assembler import PromptAssembler
from backend.prompting.bots import load_bots
from backend.prompting.cache_busters import text_findings
from backend.prompting.chat_format import ChatFormat
from backend.prompting.checks import CacheUsage, cache_usage, fixed_prefix_problems
from backend.prompting.template_checks import chat_template_problems

PROBLEM_LINE = re.compile(r"^(?P<bot>[^/\s]+)/(?P<file>\S+): (?P<kind>[a-z-]+): ", re.MULTILINE)
TABLE_ROW = re.compile(r"^(?P<bot>[a-z0-9-]+) +(\d+) +(\d+) +(\d+) +(\d+) +[\d.]+%$", re.MULTILINE)
# A template that renders only the last few messages: earlier turns vanish from the prompt.
LAST_MESSAGES_TEMPLATE = (
    "{%- for message in messages[-KEEP:] %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def run_check(env_overrides: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFIXDESK_PROMPTS_DIR", "PYTHONHASHSEED")}
    return subprocess.run(
        [sys.executable, "-m", "backend.cli", "prompts", "check"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**env, **(env_overrides or {})},
    )


def reported(result: subprocess.CompletedProcess) -> set[tuple[str, str, str]]:
    return {(m["bot"], m["file"], m["kind"]) for m in PROBLEM_LINE.finditer(result.stdout)}


def edited_bot(tmp_path: Path, file: str, edit) -> Path:
    """shop-en copied to a temp prompts dir as `test-bot`, with `edit` applied to one file's text."""
    folder = tmp_path / "prompts" / "test-bot"
    shutil.copytree(PROJECT_ROOT / "prompts" / "shop-en", folder)
    path = folder / file
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return folder


def check_edited_bot(tmp_path: Path, file: str, edit) -> subprocess.CompletedProcess:
    edited_bot(tmp_path, file, edit)
    return run_check({"PREFIXDESK_PROMPTS_DIR": str(tmp_path / "prompts")})


def found(folder: Path) -> set[tuple[str, str]]:
    """(file, kind) of what the static scan finds, without running the command."""
    return {(problem.file, problem.kind) for problem in fixed_prefix_problems(folder)}


@pytest.fixture(scope="module")
def tokenizer(default_model_dir: Path):
    return AutoTokenizer.from_pretrained(default_model_dir)


# -- the command --------------------------------------------------------------------------


def test_the_shipped_bots_pass_and_the_table_counts_their_real_prefixes(tokenizer):
    result = run_check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no cache-busters found" in result.stdout
    assert not reported(result)
    rows = {m["bot"]: tuple(int(n) for n in m.groups()[1:]) for m in TABLE_ROW.finditer(result.stdout)}
    assembler = PromptAssembler(ChatFormat(tokenizer))
    bots = load_bots(PROJECT_ROOT / "prompts")
    assert set(rows) == set(bots)
    for slug, bot in bots.items():
        prefix, in_blocks, first_turn, from_cache = rows[slug]
        assert prefix == len(assembler.bot_prefix(bot).token_ids)
        assert in_blocks == from_cache == prefix // 32 * 32
        assert first_turn > prefix


def test_a_per_customer_variable_fails_the_command(tmp_path):
    guarded = "{% if customer_name is defined %}You are talking to {{ customer_name }}.\n{% endif %}"
    result = check_edited_bot(tmp_path, "system.j2", lambda text: guarded + text)
    assert reported(result) == {("test-bot", "system.j2", "request-variable")}
    assert "customer_name" in result.stdout
    assert result.returncode == 1


def test_a_random_pick_fails_the_command(tmp_path):
    code = "\n- Mention the discount code SAVE{{ range(1000000) | random }} when asked.\n"
    result = check_edited_bot(tmp_path, "policy.md", lambda text: text + code)
    # Both fresh processes picking the same code: one chance in a million.
    assert reported(result) == {
        ("test-bot", "policy.md", "dynamic-call"),
        ("test-bot", "policy.md", "unstable-render"),
    }
    assert result.returncode == 1


def test_a_date_fails_the_command(tmp_path):
    result = check_edited_bot(
        tmp_path, "policy.md", lambda text: text + "\n- Prices are valid until 2026-11-29."
    )
    assert reported(result) == {("test-bot", "policy.md", "date-time")}
    assert result.returncode == 1


def test_a_random_id_fails_the_command(tmp_path):
    line = "\nSession id: 3f2b8c1d-9e4a-4b7c-8d2e-1a2b3c4d5e6f"
    result = check_edited_bot(tmp_path, "system.j2", lambda text: text + line)
    assert reported(result) == {("test-bot", "system.j2", "random-id")}
    assert result.returncode == 1


def test_iterating_over_a_set_fails_the_command(tmp_path):
    # `dict.keys() - []` is a set: its order follows the hash seed of the process.
    topics = (
        "{% for topic in {'returns': 1, 'shipping': 2, 'warranty': 3, 'payment': 4, 'sizes': 5,"
        " 'contact': 6}.keys() - [] %}- {{ topic }}\n{% endfor %}"
    )
    result = check_edited_bot(tmp_path, "policy.md", lambda text: "## Topics\n" + topics + text)
    assert reported(result) == {("test-bot", "policy.md", "unstable-render")}
    assert "PYTHONHASHSEED" in result.stdout
    assert result.returncode == 1


def test_trailing_whitespace_fails_the_command(tmp_path):
    def edit(text: str) -> str:
        return text.replace("cannot be returned or refunded.", "cannot be returned.   ")

    result = check_edited_bot(tmp_path, "policy.md", edit)
    assert reported(result) == {("test-bot", "policy.md", "whitespace")}
    assert result.returncode == 1


def copy_model_with_chat_template(source: Path, target: Path, chat_template: str) -> Path:
    target.mkdir()
    for path in source.iterdir():
        if path.suffix == ".safetensors":
            (target / path.name).symlink_to(path)  # the check never loads weights
        else:
            shutil.copy(path, target / path.name)
    (target / "chat_template.jinja").write_text(chat_template)
    return target


def test_a_chat_template_that_rewrites_earlier_turns_fails_the_command(tmp_path, tiny_model_dir):
    template = LAST_MESSAGES_TEMPLATE.replace("KEEP", "2")
    model = copy_model_with_chat_template(tiny_model_dir, tmp_path / "model", template)
    result = run_check({"PREFIXDESK_MODEL": str(model)})
    # The multi-turn check and ChatFormat's single steps both refuse it; no bot is rendered.
    assert reported(result) == {
        ("(model)", "chat_template", "not-append-only"),
        ("(model)", "chat_template", "chat-template"),
    }
    assert re.search(r"^shop-en +- +- +- +- +-$", result.stdout, re.MULTILINE)
    assert result.returncode == 1


# -- the checks, one file or template at a time ----------------------------------------------


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


def test_the_models_own_chat_template_is_append_only_over_four_turns(tokenizer):
    assert chat_template_problems(tokenizer) == []


def test_only_whole_conversations_show_a_template_that_drops_early_turns(tokenizer):
    original = tokenizer.chat_template
    tokenizer.chat_template = LAST_MESSAGES_TEMPLATE.replace("KEEP", "6")
    try:
        ChatFormat(tokenizer)  # its single steps see at most three messages and pass
        problems = chat_template_problems(tokenizer)
    finally:
        tokenizer.chat_template = original
    assert [(p.kind, p.file) for p in problems] == [("not-append-only", "chat_template")]
    assert "7 messages" in problems[0].detail


def test_a_generation_prompt_that_is_not_how_replies_start_is_named(tokenizer):
    original = tokenizer.chat_template
    tokenizer.chat_template = LAST_MESSAGES_TEMPLATE.replace("[-KEEP:]", "").replace(
        "'<|im_start|>assistant\\n'", "'<|im_start|>bot\\n'"
    )
    try:
        problems = chat_template_problems(tokenizer)
    finally:
        tokenizer.chat_template = original
    assert [(p.kind, p.file) for p in problems] == [("not-append-only", "chat_template")]
    assert "generation prompt" in problems[0].detail
