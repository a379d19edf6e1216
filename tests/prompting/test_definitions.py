"""Bot folders: rendering with StrictUndefined, order of the prompt, clear errors."""

import shutil
from pathlib import Path

import pytest

from backend.config import PROJECT_ROOT
from backend.prompting.definitions import BotDefinitionError, load_bot, load_bots


def test_shipped_bots_load_with_policy_inside_the_system_prompt():
    bots = load_bots(PROJECT_ROOT / "prompts")
    assert {"shop-en", "appliance-zh"} <= set(bots)
    shop, zh = bots["shop-en"], bots["appliance-zh"]
    assert "45 days" in shop.system_prompt and "Northwind Outfitters" in shop.system_prompt
    assert zh.greeting == "您好，请问有什么可以帮您？"
    assert "400-820-1357" in zh.system_prompt
    assert "{{" not in shop.system_prompt + zh.system_prompt


def test_context_is_rendered_per_customer():
    bot = load_bots(PROJECT_ROOT / "prompts")["shop-en"]
    rendered = bot.render_context({"name": "Ada", "order": "NW-1001"})
    assert "- name: Ada" in rendered and "- order: NW-1001" in rendered


def copy_bot(tmp_path: Path) -> Path:
    folder = tmp_path / "test-bot"
    shutil.copytree(PROJECT_ROOT / "prompts" / "shop-en", folder)
    return folder


def test_a_misspelt_variable_is_an_error_not_an_empty_string(tmp_path):
    folder = copy_bot(tmp_path)
    (folder / "system.j2").write_text("You work for {{ compnay }}.\n{{ policy }}")
    with pytest.raises(BotDefinitionError, match="compnay"):
        load_bot(folder)


def test_a_missing_file_is_named(tmp_path):
    folder = copy_bot(tmp_path)
    (folder / "policy.md").unlink()
    with pytest.raises(BotDefinitionError, match="policy.md"):
        load_bot(folder)


def test_user_context_is_data_not_a_template(tmp_path):
    bot = load_bot(copy_bot(tmp_path))
    assert "{{ 7 * 7 }}" in bot.render_context({"note": "{{ 7 * 7 }}"})


def test_a_bot_with_a_help_center_quotes_its_policy_and_help_center_as_such():
    # Its lines come from the policy or the articles: the quote does not call them all policy.
    helped = load_bot(PROJECT_ROOT / "prompts" / "tallybook-en")
    plain = load_bot(PROJECT_ROOT / "prompts" / "shop-en")
    assert helped.fallback.quote("X").startswith("Here is what our policy and help center say: X")
    assert helped.fallback.unknown.startswith("I'm sorry, neither our policy nor our help center says")
    assert plain.fallback.quote("X").startswith("Here is what our policy says: X")
