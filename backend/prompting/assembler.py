"""Prompt assembly in token ids, append-only.

A conversation's prompt is, in order:

    [bot's fixed prefix: system prompt with policy and help center, the worked examples as
     customer and bot turns, greeting as the first reply]
    [per-customer context, if any]
    [each turn: a note (help-center articles not in the prefix that match the message, given
     once each, in canonical order; matching policy lines) and the user message; generation
     prompt + reply tokens exactly as generated + close]
    [generation prompt]                      <- only while asking for the next reply

Every piece is a list of token ids computed once and stored, so the prompt of turn N+1
starts with the exact ids of turn N's prompt and the tokens the model generated; the
engine's prefix cache then serves everything said before.
"""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backend.knowledge.articles import Article, render_article
from backend.languages import in_language_or_english
from backend.prompting.chat_format import ChatFormat
from backend.prompting.definitions import Bot

ARTICLES_HEADINGS = {
    "en": "Help-center articles for the customer's next message:",
    "zh": "与顾客下一条消息相关的帮助中心文章：",
    "es": "Artículos del centro de ayuda para el próximo mensaje del cliente:",
    "fr": "Articles du centre d'aide pour le prochain message du client :",
    "de": "Artikel des Hilfecenters zur nächsten Nachricht des Kunden:",
    "pt": "Artigos da central de ajuda para a próxima mensagem do cliente:",
    "it": "Articoli del centro assistenza per il prossimo messaggio del cliente:",
}


def articles_heading(language: str) -> str:
    """What introduces the articles brought beside a message: the language's, else English."""
    return in_language_or_english(ARTICLES_HEADINGS, language)


@dataclass(frozen=True)
class BotPrefix:
    """A bot's fixed prefix, identical for all its conversations."""

    bot_slug: str
    token_ids: tuple[int, ...]
    digest: str  # names this exact prefix and help center (and so the cache entries it fills)
    knowledge_in_prefix: bool = True  # False: its articles come beside the questions they match
    knowledge_tokens: int = 0  # what its articles add to the prefix, whether they fit or not


class PromptAssembler:
    def __init__(self, chat_format: ChatFormat):
        self.format = chat_format

    def bot_prefix(self, bot: Bot, knowledge_budget: int | None = None) -> BotPrefix:
        """The bot's system prompt, worked examples and greeting; its help center inside the
        system prompt if its tokens fit in the bot's own `max_prefix_tokens`, else in
        `knowledge_budget` (None: no limit)."""
        ids = self._prefix_ids(bot, bot.system_prompt)
        in_prefix, knowledge_tokens = True, 0
        if bot.knowledge:
            lean = self._prefix_ids(bot, bot.lean_system_prompt)
            knowledge_tokens = len(ids) - len(lean)
            limit = bot.knowledge_settings.max_prefix_tokens
            limit = knowledge_budget if limit is None else limit
            if limit is not None and knowledge_tokens > limit:
                ids, in_prefix = lean, False
        named = json.dumps(ids) + (bot.knowledge.digest if bot.knowledge else "")
        digest = hashlib.sha256(named.encode()).hexdigest()
        return BotPrefix(bot.slug, tuple(ids), digest, in_prefix, knowledge_tokens)

    def _prefix_ids(self, bot: Bot, system_prompt: str) -> list[int]:
        ids = self.format.message(self.format.first_system, system_prompt)
        for example in bot.examples:
            ids += self.format.message(self.format.user, example.question)
            ids += self.format.message(self.format.assistant, example.answer)
        return [*ids, *self.format.message(self.format.assistant, bot.greeting)]

    def customer_context(self, bot: Bot, context: dict[str, Any] | None) -> list[int]:
        if not context:
            return []
        return self.format.message(self.format.system, bot.render_context(context))

    def note(self, bot: Bot, text: str, articles: Sequence[Article], relevant_lines: int) -> str | None:
        """What the model reads just before a customer's message: the help-center articles it
        brings (when they are not in the prefix), then the policy lines that match it best."""
        notes = [self.articles_note(articles, bot.language), bot.reference.note(text, relevant_lines)]
        return "\n\n".join(note for note in notes if note) or None

    @staticmethod
    def note_headings(bot: Bot) -> tuple[str, ...]:
        """The headings of the notes put before a customer's message: the app's own words."""
        return (bot.reference.heading, articles_heading(bot.language))

    @classmethod
    def without_note_headings(cls, bot: Bot, reply: str) -> str:
        """The reply without copies of its notes' headings: a small model now and then opens
        its reply by repeating the note it was given, and a customer should not read the
        app's own instructions. The lines the note brought stay: they are the bot's policy."""
        repeated = [heading for heading in cls.note_headings(bot) if heading in reply]
        for heading in repeated:
            reply = reply.replace(heading, "")
        return reply.strip() if repeated else reply

    @staticmethod
    def articles_note(articles: Sequence[Article], language: str) -> str | None:
        """The articles brought beside a message, each labelled with the id a reply cites."""
        if not articles:
            return None
        return "\n\n".join([articles_heading(language), *map(render_article, articles)])

    def user_message(self, text: str, note: str | None = None) -> list[int]:
        """The customer's message, after a system note on it if there is one (the policy lines
        that match it): the message itself stays as the customer wrote it."""
        ids = self.format.message(self.format.user, text)
        return [*self.format.message(self.format.system, note), *ids] if note else ids

    @property
    def generation_prompt(self) -> list[int]:
        return list(self.format.generation_prompt)

    def reply(self, generated: Sequence[int]) -> list[int]:
        """The ids an assistant reply adds to the conversation, generation prompt included."""
        return [*self.format.generation_prompt, *generated, *self.format.close_reply(list(generated))]

    def scripted_reply(self, text: str) -> list[int]:
        """A reply the model did not write (a human agent's, the handoff notice), as an assistant turn."""
        return self.reply(self.format.encode_text(text))

    def prompt_for_reply(self, history: Sequence[int]) -> list[int]:
        return [*history, *self.format.generation_prompt]


def cacheable_tokens(prompt_tokens: int, block_size: int) -> int:
    """How many prompt tokens a prefix cache could serve at most.

    Only full blocks are cached, and the engine always computes at least the last
    prompt token itself.
    """
    return max(0, (prompt_tokens - 1) // block_size * block_size)
