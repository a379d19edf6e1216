"""Prompt assembly in token ids, append-only.

A conversation's prompt is, in order:

    [bot's fixed prefix: system prompt with policy, greeting as the first reply]
    [per-customer context, if any]
    [each turn: user message; generation prompt + reply tokens exactly as generated + close]
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

from backend.prompting.bots import Bot
from backend.prompting.chat_format import ChatFormat


@dataclass(frozen=True)
class BotPrefix:
    """A bot's fixed prefix, identical for all its conversations."""

    bot_slug: str
    token_ids: tuple[int, ...]
    digest: str  # names this exact prefix (and so the cache entries it fills)


class PromptAssembler:
    def __init__(self, chat_format: ChatFormat):
        self.format = chat_format

    def bot_prefix(self, bot: Bot) -> BotPrefix:
        ids = [
            *self.format.message(self.format.first_system, bot.system_prompt),
            *self.format.message(self.format.assistant, bot.greeting),
        ]
        digest = hashlib.sha256(json.dumps(ids).encode()).hexdigest()
        return BotPrefix(bot.slug, tuple(ids), digest)

    def customer_context(self, bot: Bot, context: dict[str, Any] | None) -> list[int]:
        if not context:
            return []
        return self.format.message(self.format.system, bot.render_context(context))

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
