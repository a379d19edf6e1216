"""What every part that adds to a conversation's context shares, wired once (`services.py`):
the chat turn, the reply it writes and the agents' inbox take the same parts."""

from dataclasses import dataclass

from backend.bots.registry import BotRegistry
from backend.config import Settings
from backend.engine.live import LiveEngine
from backend.metrics.recorder import Metrics
from backend.prompting.assembler import PromptAssembler
from backend.turns.context import ConversationContext
from backend.turns.settlement import NewWork
from backend.turns.turn_lock import TurnLocks


@dataclass(frozen=True)
class TurnLimits:
    max_message_chars: int
    max_model_len: int
    max_reply_tokens: int
    relevant_lines: int  # policy lines repeated beside each customer message

    @classmethod
    def of(cls, settings: Settings, context_window: int) -> "TurnLimits":
        return cls(
            settings.max_message_chars,
            context_window,
            settings.max_reply_tokens,
            settings.relevant_lines,
        )


@dataclass(frozen=True)
class ConversationParts:
    limits: TurnLimits
    engine: LiveEngine
    bots: BotRegistry
    context: ConversationContext
    assembler: PromptAssembler
    locks: TurnLocks
    metrics: Metrics
    new_work: NewWork  # a unit of work of its own, for what happens after the request

    def room_after(self, context_ids: list[int]) -> int:
        """What the context window leaves for a reply after `context_ids`."""
        return self.limits.max_model_len - len(context_ids) - len(self.assembler.generation_prompt)
