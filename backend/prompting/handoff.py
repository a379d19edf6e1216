"""When a bot hands a conversation to a human: rules read from a bot's `[handoff]` table."""

import re
from dataclasses import dataclass
from typing import Any

DEFAULTS: dict[str, dict[str, Any]] = {
    "en": {
        "request_phrases": [
            "human",
            "a person",
            "real person",
            "agent",
            "representative",
            "operator",
            "talk to someone",
            "speak to someone",
        ],
        "unanswered_phrases": [
            "i don't know",
            "i do not know",
            "i'm not sure",
            "cannot answer",
            "can't answer",
            "human colleague",
        ],
        "message": "I'm passing you to a colleague from our support team; they will reply here shortly.",
    },
    "zh": {
        "request_phrases": ["人工", "真人", "客服人员"],
        "unanswered_phrases": ["不知道", "无法回答", "不清楚", "转接人工"],
        "message": "正在为您转接人工客服，请稍候。",
    },
}


@dataclass(frozen=True)
class HandoffRules:
    request_phrases: tuple[str, ...]  # the customer asks for a person
    unanswered_phrases: tuple[str, ...]  # the bot says it cannot answer
    max_unanswered: int  # hand over after this many such replies in a row
    message: str  # what the bot says when it hands over

    @classmethod
    def from_config(cls, language: str, config: dict[str, Any]) -> "HandoffRules":
        merged = {**DEFAULTS.get(language, DEFAULTS["en"]), **config}
        return cls(
            request_phrases=tuple(merged["request_phrases"]),
            unanswered_phrases=tuple(merged["unanswered_phrases"]),
            max_unanswered=int(merged.get("max_unanswered", 2)),
            message=merged["message"],
        )

    def asks_for_human(self, text: str) -> bool:
        return _mentions(text, self.request_phrases)

    def is_unanswered(self, reply: str) -> bool:
        return _mentions(reply, self.unanswered_phrases)


def _mentions(text: str, phrases: tuple[str, ...]) -> bool:
    lowered = text.lower()
    for phrase in phrases:
        # Whole words for scripts with spaces; plain containment for Chinese and the like.
        if phrase.isascii():
            if re.search(rf"\b{re.escape(phrase.lower())}\b", lowered):
                return True
        elif phrase in text:
            return True
    return False
