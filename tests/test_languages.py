"""What the app keeps per language is found for any tag of that language ("zh-CN", "en_GB")."""

import tomllib
from datetime import datetime
from zoneinfo import ZoneInfo

from backend.authoring.rendering import TYPICAL_QUESTIONS
from backend.config import PROJECT_ROOT
from backend.evaluation.outcomes import OFFERS
from backend.languages import APP_LANGUAGES, in_language, in_language_or_english, primary_language
from backend.prompting.assembler import ARTICLES_HEADINGS
from backend.prompting.definitions import DEFAULT_HANDOFF_MESSAGES
from backend.prompting.judge_prompts import format_item
from backend.prompting.office_hours import opening_text
from backend.prompting.reference import DEFAULT_HEADINGS, WITH_HELP_CENTER_HEADINGS
from backend.turns import grounding
from backend.turns.shown_sources import POLICY_TITLES
from backend.turns.sources import QUESTIONS


def test_a_tag_finds_its_own_entry_then_its_languages_then_english():
    table = {"en": "colour", "en-US": "color", "zh": "颜色"}
    assert in_language(table, "en-US") == "color"
    assert in_language(table, "en_GB") == "colour" and in_language(table, "EN") == "colour"
    assert in_language(table, "zh-Hant-TW") == "颜色"
    assert in_language(table, "pt-BR") is None
    assert in_language_or_english(table, "pt-BR") == "colour"
    assert primary_language("zh_Hans") == "zh"


def test_the_words_the_app_reads_and_writes_follow_the_language_of_a_regional_tag():
    assert grounding.denies("不支持七天退货", "zh-TW") is True
    assert grounding.denies("支持七天退货", "zh-CN") is False
    assert grounding.denies("Vi skickar inte", "sv-SE") is None  # no word list: not checked
    assert format_item({"question": "能退货吗？"}, "zh-CN") == format_item({"question": "能退货吗？"}, "zh")
    monday = datetime(2026, 12, 7, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    assert opening_text(monday, "zh-CN") == opening_text(monday, "zh") != opening_text(monday, "en")


def test_every_table_of_the_app_s_own_words_for_customers_has_every_app_language():
    """A language is added to the app whole: its handoff message, its title of a quoted policy,
    its words of a yes or no denied, its quoting words, its eval's words of an offer, the
    headings of the notes the model reads and the question of a reply's source."""
    quoting = tomllib.loads((PROJECT_ROOT / "prompts/_judges/line_answers.toml").read_text(encoding="utf-8"))
    tables = {
        "DEFAULT_HANDOFF_MESSAGES": DEFAULT_HANDOFF_MESSAGES,
        "POLICY_TITLES": POLICY_TITLES,
        "DENIALS": grounding.DENIALS,
        "OFFERS": OFFERS,
        "TYPICAL_QUESTIONS": TYPICAL_QUESTIONS,
        "DEFAULT_HEADINGS": DEFAULT_HEADINGS,
        "WITH_HELP_CENTER_HEADINGS": WITH_HELP_CENTER_HEADINGS,
        "ARTICLES_HEADINGS": ARTICLES_HEADINGS,
        "QUESTIONS": QUESTIONS,
        "line_answers.toml": {language: table for language, table in quoting.items() if "quote" in table},
    }
    for name, table in tables.items():
        assert set(table) == set(APP_LANGUAGES), name
