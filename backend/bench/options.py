"""What `prefixdesk bench` is asked to run, in groups: which runs, the load, and each scenario's own."""

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Selection:
    """Which runs: each scenario on each of its ways, with each caching mode."""

    scenarios: tuple[str, ...]
    ways: tuple[str, ...]
    caching: tuple[bool, ...] = (False, True)
    # All scenarios of one way and mode in one process: fewer engine loads, for quick checks only.
    group_by_way: bool = False


@dataclass(frozen=True)
class LoadShape:
    """The load scenarios' traffic (`article`, `random`, `multiturn`, `support`; `speculative`
    takes the requests, rates and window too)."""

    requests: int = 100
    conversations: int = 8
    turns: int = 4
    rates: tuple[float, ...] = (0.5, 1.0, 2.0)
    window_s: float = 30.0
    max_tokens: int = 24  # the reply length cap, the same for every way

    def as_spec(self) -> dict:
        return {
            "requests": self.requests,
            "conversations": self.conversations,
            "turns": self.turns,
            "rates": list(self.rates),
            "window_s": self.window_s,
            "max_tokens": self.max_tokens,
        }


@dataclass(frozen=True)
class KnowledgeOptions:
    """`knowledge`: first-turn questions to the help-center bot, one at a time and at each
    concurrency (`rounds` rounds each); with caching off each question computes the whole help
    center again, so that run asks fewer (one round at each of its levels). And the same bot on the
    retrieval path: multi-turn conversations, caching on."""

    questions: int = 8
    concurrency: tuple[int, ...] = (2, 4)
    rounds: int = 2
    off_questions: int = 3
    off_concurrency: tuple[int, ...] = (2,)
    retrieval_conversations: int = 4
    retrieval_turns: int = 6

    def as_spec(self) -> dict:
        return {
            "questions": self.questions,
            "concurrency": list(self.concurrency),
            "rounds": self.rounds,
            "off_questions": self.off_questions,
            "off_concurrency": list(self.off_concurrency),
            "retrieval_conversations": self.retrieval_conversations,
            "retrieval_turns": self.retrieval_turns,
        }


@dataclass(frozen=True)
class CapacityOptions:
    """`capacity`: live conversations at each checkpoint, customers returning at each, KV cache size."""

    conversations: tuple[int, ...] = (16, 24, 28, 32, 40, 48, 56, 64)
    returning: int = 2
    turns: int = 2
    at_once: int = 8
    message_chars: int = 3600
    kv_gib: float = 1.0
    max_tokens: int = 48
    tiers: tuple[str, ...] = ("off", "on")  # the KV tier (PREFIXDESK_KV_TIER) off, on: a run each

    def as_spec(self) -> dict:
        """The plan a worker builds its `capacity.CapacityPlan` from."""
        return {
            "conversations": list(self.conversations),
            "returning": self.returning,
            "turns": self.turns,
            "at_once": self.at_once,
            "message_chars": self.message_chars,
        }


@dataclass(frozen=True)
class BenchOptions:
    selection: Selection
    load: LoadShape = field(default_factory=LoadShape)
    speculative_max_tokens: int = 128  # replies long enough for their speed to show
    knowledge: KnowledgeOptions = field(default_factory=KnowledgeOptions)
    capacity: CapacityOptions = field(default_factory=CapacityOptions)
    out: Path = Path("bench/results/latest.json")
    plots_dir: Path | None = None  # default: beside `out`
