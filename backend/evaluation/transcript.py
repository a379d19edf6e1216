"""What one eval case came to: the conversation's last reply, what its replies cost, its outcome."""

from dataclasses import dataclass, field
from typing import Any

from backend.evaluation.cases import Case
from backend.evaluation.outcomes import Outcome

TIMINGS = ("ttft_ms", "total_ms", "held_ms", "checks_ms")  # from each reply's done event
# The first word as the customer sees it: from the message sent, through the gates, the
# writing and the checks, to its first token event, as the eval's client received it.
SHOWN = "shown_ms"
SHOWN_AS_WRITTEN = "shown_as_written_ms"  # the same, of the replies shown as the model wrote them


@dataclass
class Transcript:
    """What a case's conversation came to: its last reply, and what the replies cost."""

    reply: str = ""
    handed_off: bool = False
    doubt: str | None = None
    withheld: bool = False  # the checks did not show the model's reply: its sources were quoted
    prompt_tokens: int = 0
    cached_tokens: int = 0
    sources: tuple[str, ...] = ()  # the articles the last reply cited
    second_tries: list[str] = field(default_factory=list)  # why replies were dropped and written again
    timings: dict[str, list[float]] = field(
        default_factory=lambda: {name: [] for name in (*TIMINGS, SHOWN, SHOWN_AS_WRITTEN)}
    )

    def add_done(self, done: dict[str, Any], shown_ms: float | None = None) -> None:
        """A reply's `done` event: it is the last reply now, and what it cost is added.
        `shown_ms`: from the message sent to its first visible word, as the client saw it."""
        self.reply, self.doubt, self.withheld = done["text"], done.get("doubt"), bool(done.get("withheld"))
        self.sources = tuple(source["id"] for source in done.get("sources") or [])
        self.handed_off = self.handed_off or bool(done.get("handoff"))
        self.prompt_tokens += done.get("prompt_tokens") or 0
        self.cached_tokens += done.get("cached_tokens") or 0
        for name in TIMINGS:
            if done.get(name) is not None:
                self.timings[name].append(done[name])
        if done.get("ttft_ms") is not None:
            held = done["ttft_ms"] + (done.get("held_ms") or 0.0)  # a streamed reply's first word
            shown = round(shown_ms or done.get("shown_ms") or held, 1)
            self.timings[SHOWN].append(shown)
            if not done.get("second_try"):
                self.timings[SHOWN_AS_WRITTEN].append(shown)
        if done.get("second_try"):
            self.second_tries.append(done["second_try"])


@dataclass
class CaseResult:
    case: Case
    said: Transcript
    reasons: list[str]  # why it failed; none when it passed
    outcome: Outcome = Outcome.RIGHT  # right, held back or wrong (outcomes.py)
    why: str = ""  # why it is not right

    @property
    def passed(self) -> bool:
        return not self.reasons
