"""The prompt token ids the app would send, built with the app's own assembler.

The bare engine and the peer server get exactly these ids (and the bot's cache salt), so
all three ways compute the same tokens.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backend.bench.workloads import Conversation
from backend.bots.registry import cache_salt
from backend.prompting.assembler import PromptAssembler
from backend.prompting.chat_format import ChatFormat
from backend.prompting.definitions import load_bots


@dataclass
class History:
    """One conversation's tokens so far, as the model saw them."""

    ids: list[int]
    salt: str | None
    bot: str | None  # its bot's slug; None for a bare system prompt
    pending: list[int] = field(default_factory=list)  # the last message, until its reply is added


class PromptIds:
    def __init__(
        self,
        model_dir: Path,
        prompts_dir: Path,
        secret_key: str,
        relevant_lines: int,
        knowledge_budget: int | None = None,
    ):
        """`knowledge_budget`: the app's (from its context window), so that a help center is in
        a bot's prefix here exactly when it is in the app's."""
        from transformers import AutoTokenizer

        self.assembler = PromptAssembler(ChatFormat(AutoTokenizer.from_pretrained(model_dir)))
        self.bots = load_bots(prompts_dir)
        prefixes = {slug: self.assembler.bot_prefix(bot, knowledge_budget) for slug, bot in self.bots.items()}
        self.prefixes = {slug: list(prefix.token_ids) for slug, prefix in prefixes.items()}
        self.knowledge_in_prefix = {
            slug: prefix.knowledge_in_prefix for slug, prefix in prefixes.items() if self.bots[slug].knowledge
        }
        self.salts = {slug: cache_salt(secret_key, slug) for slug in self.bots}
        self.relevant_lines = relevant_lines

    def opening(self, conversation: Conversation) -> History:
        if conversation.bot is None:
            fmt = self.assembler.format
            return History(fmt.message(fmt.first_system, conversation.system_text or ""), None, None)
        slug = conversation.bot
        return History(list(self.prefixes[slug]), self.salts[slug], slug)

    def prompt(self, history: History, text: str) -> list[int]:
        """The prompt for a reply to `text`; `add_reply` completes the turn."""
        bot = self.bots.get(history.bot) if history.bot else None
        note = bot.reference.note(text, self.relevant_lines) if bot else None  # as the app does
        history.pending = self.assembler.user_message(text, note)
        return self.assembler.prompt_for_reply([*history.ids, *history.pending])

    def add_reply(self, history: History, generated: Sequence[int]) -> None:
        history.ids += [*history.pending, *self.assembler.reply(generated)]
        history.pending = []
