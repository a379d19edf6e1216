"""A bot's language is a BCP 47 tag ("en", "zh-CN", "pt_BR"); what the app keeps per language
(judge files' tables, the words it says itself, the words its checks read) is keyed by the tag
or by its language alone. One lookup for all of them, so that "zh-CN" is Chinese everywhere."""

from collections.abc import Mapping
from typing import Any, TypeVar

Entry = TypeVar("Entry")

FALLBACK = "en"  # the language of what the app says where a table has nothing in the bot's
# The languages every table of the app's own words for customers has (its handoff message, its
# title of a quoted policy, the widget's labels, the quoting words); a bot in another is told
# so by `prefixdesk prompts check`.
APP_LANGUAGES = ("en", "zh", "es", "fr", "de", "pt", "it")


def primary_language(tag: str) -> str:
    """The ISO 639-1 code of a BCP 47 tag ("zh" of "zh-CN", "en" of "en_GB")."""
    return tag.split("-")[0].split("_")[0].lower()


def in_language(table: Mapping[str, Entry], tag: str) -> Entry | None:
    """The entry for `tag`: its own ("zh-TW"), else its language's ("zh"), else None."""
    for key in (tag, primary_language(tag)):
        if (entry := table.get(key)) is not None:
            return entry
    return None


def in_language_or_english(table: Mapping[str, Entry], tag: str) -> Entry:
    """The entry for `tag` (`in_language`), else the FALLBACK language's, which a table of
    the app's own words always has."""
    entry = in_language(table, tag)
    return table[FALLBACK] if entry is None else entry


def table_in_language(document: Mapping[str, Any], tag: str) -> Any:
    """A file's table for `tag`, one table per language (a judge file): `in_language`'s, else
    the FALLBACK language's; None when it has neither."""
    return in_language(document, tag) or document.get(FALLBACK)
