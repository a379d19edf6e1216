"""Bot folders: rendering with StrictUndefined, order of the prompt, clear errors."""

import shutil
from pathlib import Path

import pytest

from backend.authoring.cli import language_lines
from backend.config import PROJECT_ROOT
from backend.languages import APP_LANGUAGES
from backend.prompting.definitions import DEFAULT_HANDOFF_MESSAGES, BotDefinitionError, load_bot, load_bots
from backend.prompting.judge_prompts import in_english


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


@pytest.mark.parametrize("tag", ["zh-CN", "zh_Hans", "ZH"])
def test_a_language_tag_with_a_region_or_script_reads_its_languages_tables(tmp_path, tag):
    shipped = load_bots(PROJECT_ROOT / "prompts")["appliance-zh"]
    folder = tmp_path / "appliance-cn"
    shutil.copytree(PROJECT_ROOT / "prompts" / "appliance-zh", folder)
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('language = "zh"', f'language = "{tag}"'))
    bot = load_bot(folder)
    assert bot.language == tag
    # The judges' instructions and examples, the words of a yes or no, of "I don't know" and of
    # a quote, what it says when it hands over: all Chinese, as for "zh".
    for name, judge in shipped.judges.items():
        assert bot.judges[name].instruction == judge.instruction, name
        assert bot.judges[name].examples == judge.examples, name
    assert bot.yes_no == shipped.yes_no and bot.quoting == shipped.quoting
    assert bot.fallback == shipped.fallback and bot.handoff.message == shipped.handoff.message


@pytest.mark.parametrize("tag", ["sv-SE", "sw"])
def test_a_language_without_tables_of_its_own_reads_the_english_ones(tmp_path, tag):
    english = load_bots(PROJECT_ROOT / "prompts")["shop-en"]
    folder = copy_bot(tmp_path)
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('language = "en"', f'language = "{tag}"'))
    bot = load_bot(folder)
    assert bot.judges["handoff"].instruction == english.judges["handoff"].instruction
    assert bot.yes_no == english.yes_no and bot.quoting == english.quoting


@pytest.mark.parametrize(
    ("tag", "quote"),
    [("es-MX", "Esto es lo que dice"), ("fr", "Voici ce que dit"), ("de", "Das steht in"),
     ("pt-BR", "Isto é o que diz"), ("it", "Ecco cosa dice")],
)  # fmt: skip
def test_a_language_with_only_the_words_of_a_judge_says_them_and_asks_in_english(tmp_path, tag, quote):
    english = load_bots(PROJECT_ROOT / "prompts")["shop-en"]
    folder = copy_bot(tmp_path)
    toml = folder / "bot.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('language = "en"', f'language = "{tag}"'))
    bot = load_bot(folder)
    assert bot.quoting.quote("Returns within 30 days.").startswith(quote)
    assert bot.quoting.unknown_openings != english.quoting.unknown_openings
    # The question, its examples and its threshold: English's.
    assert bot.judges["line_answers"] == english.judges["line_answers"]
    # A table of words alone is the words' own: a judge that has none still needs an instruction.
    judges = folder / "judges"
    judges.mkdir()
    handoff = (PROJECT_ROOT / "prompts" / "_judges" / "handoff.toml").read_text(encoding="utf-8")
    (judges / "handoff.toml").write_text(f'{handoff}\n[{tag}]\nquote = "{{line}}"\n', encoding="utf-8")
    with pytest.raises(BotDefinitionError, match="handoff.toml: \[.*\] needs an instruction"):
        load_bot(folder)


def test_prompts_check_names_the_judge_files_a_bot_reads_in_english(tmp_path):
    prompts = tmp_path / "prompts"
    shutil.copytree(PROJECT_ROOT / "prompts", prompts)
    for slug, tag in (("shop-en", "es-MX"), ("appliance-zh", "zh-TW"), ("tallybook-en", "en-GB")):
        toml = prompts / slug / "bot.toml"
        language = "zh" if slug.endswith("zh") else "en"
        toml.write_text(
            toml.read_text(encoding="utf-8").replace(f'language = "{language}"', f'language = "{tag}"')
        )
    # Spanish has the words of a yes or no (opening.toml) and of a quote (line_answers.toml),
    # but the question of every judge but the opening one is asked in English until the bot has
    # its own copy.
    assert in_english(prompts / "shop-en", "es-MX").asked == [
        "handoff", "offer_made", "offer_accepted", "unanswered", "supported", "line_answers"
    ]  # fmt: skip
    assert in_english(prompts / "shop-en", "es-MX").said == []
    assert in_english(prompts / "appliance-zh", "zh-TW").asked == []
    assert in_english(prompts / "tallybook-en", "en-GB").asked == []
    (lines,) = language_lines(prompts)
    assert "shop-en: no [es-MX] instruction in handoff.toml" in lines and "line_answers.toml" in lines
    assert "said in English" not in lines and "the app has no words" not in lines
    assert in_english(prompts / "shop-en", "ja").said == ["opening", "line_answers"]
    toml = prompts / "shop-en" / "bot.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('language = "es-MX"', 'language = "ja"'))
    (_, words, app) = language_lines(prompts)
    assert "opening.toml, line_answers.toml: its words are said in English" in words
    assert "shop-en: the app has no words in [ja]" in app and "handoff message are in English" in app
    judges = prompts / "shop-en" / "judges"
    judges.mkdir()
    own = (PROJECT_ROOT / "prompts" / "_judges" / "line_answers.toml").read_text(encoding="utf-8")
    (judges / "line_answers.toml").write_text(own.replace("[en", "[es"), encoding="utf-8")
    assert "line_answers" not in in_english(prompts / "shop-en", "es-MX").asked


@pytest.mark.parametrize("tag", [*APP_LANGUAGES, "es-MX", "pt_BR"])
def test_a_bot_without_its_own_handoff_message_hands_over_in_its_language(tmp_path, tag):
    folder = copy_bot(tmp_path)
    toml = folder / "bot.toml"
    text = toml.read_text(encoding="utf-8").replace('language = "en"', f'language = "{tag}"')
    toml.write_text("\n".join(line for line in text.splitlines() if not line.startswith("message = ")))
    message = load_bot(folder).handoff.message
    assert message == DEFAULT_HANDOFF_MESSAGES[tag[:2]]
    assert (message == DEFAULT_HANDOFF_MESSAGES["en"]) == (tag == "en")
