"""`prefixdesk prompts check` and `prefixdesk prompts reload`, run as a user runs them.

The shipped bots pass the check; each cache-buster is named and fails the command; a reload
reaches the running app.
"""

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

from backend.agents.models import AgentRole
from backend.config import PROJECT_ROOT
from backend.prompting.assembler import PromptAssembler
from backend.prompting.chat_format import ChatFormat
from backend.prompting.definitions import load_bots
from tests.authoring.edits import LAST_MESSAGES_TEMPLATE, edited_bot
from tests.support import client_app, copy_prompts, make_agent, served, wait_ready

PROBLEM_LINE = re.compile(r"^(?P<bot>[^/\s]+)/(?P<file>\S+): (?P<kind>[a-z-]+): ", re.MULTILINE)
TABLE_ROW = re.compile(r"^(?P<bot>[a-z0-9-]+) +(\d+) +(\d+) +(\d+) +(\d+) +[\d.]+%$", re.MULTILINE)


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


def check_edited_bot(tmp_path: Path, file: str, edit) -> subprocess.CompletedProcess:
    edited_bot(tmp_path, file, edit)
    return run_check({"PREFIXDESK_PROMPTS_DIR": str(tmp_path / "prompts")})


def test_the_shipped_bots_pass_and_the_table_counts_their_real_prefixes(default_tokenizer):
    result = run_check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no cache-busters found" in result.stdout
    assert not reported(result)
    rows = {m["bot"]: tuple(int(n) for n in m.groups()[1:]) for m in TABLE_ROW.finditer(result.stdout)}
    assembler = PromptAssembler(ChatFormat(default_tokenizer))
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


async def test_the_reload_command_reaches_the_running_app(tiny_settings, tiny_engine, tmp_path):
    prompts_copy = copy_prompts(tmp_path)
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts_copy})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        _, admin = await make_agent(client_app(url), AgentRole.ADMIN)
        greeting = prompts_copy / "appliance-zh" / "bot.toml"
        greeting.write_text(
            greeting.read_text().replace("您好，请问有什么可以帮您？", "您好！请问需要什么帮助？")
        )
        # Not subprocess.run: this event loop also serves the app the command talks to.
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "backend.cli",
            "prompts",
            "reload",
            "--url",
            url,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PREFIXDESK_API_TOKEN": admin["Authorization"][7:]},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 300)
        assert process.returncode == 0, stderr.decode()
        assert "appliance-zh\tversion" in stdout.decode() and "new version, warmed" in stdout.decode()
        started = (await client.post("/api/v1/widget/conversations", json={"bot": "appliance-zh"})).json()
        assert started["greeting"] == "您好！请问需要什么帮助？"


def test_a_help_center_is_counted_against_its_budget_and_scanned_like_the_prefix(tmp_path):
    from tests.knowledge.bots import write_help_bot

    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts" / "_judges", prompts / "_judges")
    write_help_bot(prompts, "help-en")
    write_help_bot(prompts, "help-search-en", max_prefix_tokens=0)
    result = run_check({"PREFIXDESK_PROMPTS_DIR": str(prompts)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(
        r"help-en: help center of 4 articles, [\d,]+ tokens \(budget [\d,]+\): in the fixed prefix",
        result.stdout,
    )
    assert "help-search-en: help center of 4 articles" in result.stdout
    assert "over budget: the articles that match each question come beside it" in result.stdout

    # An article is part of the fixed prefix: what would make it differ per render is named.
    article = prompts / "help-en" / "knowledge" / "late-fees.md"
    article.write_text(article.read_text() + "Session 3f2b8c1e-9d4a-4f6b-8e2a-1c5d7e9f0a3b.\n")
    result = run_check({"PREFIXDESK_PROMPTS_DIR": str(prompts)})
    assert ("help-en", "knowledge", "random-id") in reported(result) and result.returncode == 1
