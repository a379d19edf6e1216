"""What a check of the bots or of the model reports."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    kind: str  # e.g. "request-variable", "date-time", "unstable-render", "not-append-only"
    file: str  # "system.j2", "policy.md", "bot.toml", or "chat_template" for the model
    detail: str
