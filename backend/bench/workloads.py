"""The benchmark's scenarios as plain data: who says what, and when.

A workload is a set of conversations, each a list of customer messages. Closed-loop
workloads submit every conversation at once and send each next turn as soon as the
previous reply is complete; open-loop ones (`support`) give every message an arrival time
drawn from a Poisson process, as real customers arrive regardless of how busy the bot is.
"""

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from backend.bench.questions import SHOP_EN

BOT = "shop-en"
# The bot with a long help center, whole in its fixed prefix when the context window allows.
KNOWLEDGE_BOT = "tallybook-en"
SCENARIOS = ("article", "random", "multiturn", "support", "speculative", "knowledge", "capacity")
# `speculative`: closed loops of this many conversations at once.
CONCURRENCY = (1, 4, 16, 32)

# Filler for the `random` scenario: unrelated documents of about a bot prefix's length.
_VOCABULARY = (
    "amber basalt canyon delta ember fjord glacier harbor island jungle kelp lagoon meadow "
    "nebula orchard prairie quarry reef savanna tundra upland valley willow xenon yarrow zephyr "
    "anchor beacon compass dynamo engine furnace gearbox hinge ingot joist kiln lathe mortar "
    "nozzle piston quench rivet spindle turbine valve winch yoke zinc apricot barley cassava "
    "durian endive fennel guava hazel indigo jicama kumquat lentil mango nutmeg okra papaya "
    "quince radish sorrel tamarind walnut"
)


@dataclass(frozen=True)
class Conversation:
    key: str
    turns: tuple[str, ...]  # the customer's messages, in order
    bot: str | None = BOT  # None: no bot prefix; `system_text` opens the prompt instead
    system_text: str | None = None
    arrivals: tuple[float, ...] | None = None  # open loop: seconds after the start, per turn


@dataclass(frozen=True)
class Workload:
    scenario: str
    conversations: tuple[Conversation, ...]
    rate: float | None = None  # open loop: arrivals per second
    part: str | None = None  # one of a scenario's several workloads (`speculative`: "c4", "article")
    concurrency: int | None = None  # at most this many conversations at once (None: all of them)

    @property
    def requests(self) -> int:
        return sum(len(c.turns) for c in self.conversations)

    @property
    def label(self) -> str:
        name = self.scenario if self.part is None else f"{self.scenario}:{self.part}"
        return name if self.rate is None else f"{name}@{self.rate:g}"


def question(index: int) -> str:
    """A distinct customer question for every index (the policy answers the base question)."""
    base = SHOP_EN[index % len(SHOP_EN)]
    round_ = index // len(SHOP_EN)
    # The order number comes first: repeated questions then share no full cache block of their
    # own beyond the bot's prefix, so "cacheable" counts the prefix's full blocks. (The note of
    # matching policy lines before a question opens alike every time, so a first turn may find
    # a block more: cached tokens are at least, not exactly, the cacheable ones.)
    return base if round_ == 0 else f"Order NW-{round_}{index:04d}: {base}"


def article(requests: int) -> Workload:
    """The article's experiment: many requests sharing one bot's prefix, each its own question."""
    return Workload("article", tuple(Conversation(f"a{i}", (question(i),)) for i in range(requests)))


def random_documents(requests: int, *, words: int = 400, seed: int = 7) -> Workload:
    """Requests that share nothing but the chat template's opening tokens."""
    rng = random.Random(seed)  # noqa: S311 (reproducible text, not secrets)
    vocabulary = _VOCABULARY.split()
    conversations = []
    for i in range(requests):
        text = " ".join(rng.choice(vocabulary) for _ in range(words))
        conversations.append(
            Conversation(f"r{i}", (question(i),), bot=None, system_text=f"Document {i}: {text}")
        )
    return Workload("random", tuple(conversations))


def multiturn(conversations: int, turns: int) -> Workload:
    """`conversations` customers talking at once, `turns` messages each."""
    return Workload(
        "multiturn",
        tuple(
            Conversation(f"m{c}", tuple(question(c * turns + t + 7) for t in range(turns)))
            for c in range(conversations)
        ),
    )


def support(
    rate: float,
    window_s: float,
    *,
    first_question: int = 0,
    new_share: float = 0.7,
    max_turns: int = 4,
    seed: int = 11,
) -> Workload:
    """Open-loop support traffic: mostly new conversations (greeting, then a short question).

    Arrivals come at `rate` per second for `window_s` seconds; each is a new conversation with
    probability `new_share`, otherwise the next message of an earlier, still short one.
    Questions are numbered from `first_question`, so windows run one after another on the same
    engine never repeat a prompt.
    """
    rng = random.Random(f"{seed}-{rate}")  # noqa: S311 (reproducible arrivals)
    turns: list[list[tuple[float, str]]] = []
    now, asked = 0.0, first_question
    while True:
        now += rng.expovariate(rate)
        if now >= window_s:
            break
        open_ = [t for t in turns if len(t) < max_turns]
        target = rng.choice(open_) if open_ and rng.random() >= new_share else None
        if target is None:
            target = []
            turns.append(target)
        target.append((now, question(asked)))
        asked += 1
    return Workload(
        "support",
        tuple(
            Conversation(f"s{i}", tuple(q for _, q in t), arrivals=tuple(a for a, _ in t))
            for i, t in enumerate(turns)
        ),
        rate=rate,
    )


def concurrent(conversations: int, turns: int, *, first_question: int) -> Workload:
    """`conversations` customers at once, each asking `turns` questions one after another."""
    return Workload(
        "concurrent",
        tuple(
            Conversation(
                f"c{conversations}-{c}",
                tuple(question(first_question + c * turns + t) for t in range(turns)),
            )
            for c in range(conversations)
        ),
    )


def speculative(requests: int, rates, window_s: float) -> list[Workload]:
    """Reply speed, for speculative decoding off vs on: 1 to 32 conversations at once (at
    least 8 replies each, 2 turns a conversation or more), then the article's and the
    support traffic."""
    loads = [
        replace(concurrent(c, max(2, 8 // c), first_question=100 * c), scenario="speculative", part=f"c{c}")
        for c in CONCURRENCY
    ]
    loads.append(replace(article(requests), scenario="speculative", part="article"))
    loads += [
        replace(
            support(rate, window_s, first_question=1000 * (i + 1)), scenario="speculative", part="support"
        )
        for i, rate in enumerate(rates)
    ]
    return loads


def knowledge_question(questions: Sequence[str], index: int) -> str:
    """The help-center bot's question for every index: its eval questions, then numbered again."""
    base = questions[index % len(questions)]
    round_ = index // len(questions)
    # The account number comes first, as in `question`: a repeated question shares no block.
    return base if round_ == 0 else f"Account TB-{round_}{index:04d}: {base}"


def knowledge(
    questions: Sequence[str],
    *,
    single: int,
    concurrency: Sequence[int],
    rounds: int,
    first_concurrent: int,
    offsets_of: Sequence[int] = (),
    offsets_rounds: int | None = None,
) -> list[Workload]:
    """First-turn questions to the help-center bot, each a new conversation: `single` one at a
    time, then `rounds` rounds at each concurrency (closed loop: a new customer as soon as one
    is answered).

    Questions are numbered so that runs with different counts ask the same ones first: the
    single-stream part from 0, each concurrency `c` from `first_concurrent` plus the questions
    of the lower levels of `offsets_of` (the caching-on run's levels, `offsets_rounds` rounds).
    """
    bot = KNOWLEDGE_BOT
    loads = [
        Workload(
            "knowledge",
            tuple(Conversation(f"k1-{i}", (knowledge_question(questions, i),), bot) for i in range(single)),
            part="c1",
            concurrency=1,
        )
    ]
    levels = sorted({*offsets_of, *concurrency})
    per_level = offsets_rounds if offsets_rounds is not None else rounds
    for c in concurrency:
        first = first_concurrent + sum(level * per_level for level in levels if level < c)
        loads.append(
            Workload(
                "knowledge",
                tuple(
                    Conversation(f"k{c}-{i}", (knowledge_question(questions, first + i),), bot)
                    for i in range(c * rounds)
                ),
                part=f"c{c}",
                concurrency=c,
            )
        )
    return loads


def knowledge_retrieval(questions: Sequence[str], conversations: int, turns: int) -> Workload:
    """Customers asking the help-center bot `turns` questions each, one after another (its eval
    questions in order, which run topic by topic), all conversations at once."""
    return Workload(
        "knowledge",
        tuple(
            Conversation(
                f"kr{c}",
                tuple(knowledge_question(questions, c * turns + t) for t in range(turns)),
                KNOWLEDGE_BOT,
            )
            for c in range(conversations)
        ),
        part="retrieval",
    )


def build(scenario: str, *, requests: int, conversations: int, turns: int, rates, window_s: float):
    """The workloads of one scenario (`support` has one per arrival rate)."""
    if scenario == "article":
        return [article(requests)]
    if scenario == "random":
        return [random_documents(requests)]
    if scenario == "multiturn":
        return [multiturn(conversations, turns)]
    if scenario == "support":
        return [support(rate, window_s, first_question=1000 * (i + 1)) for i, rate in enumerate(rates)]
    if scenario == "speculative":
        return speculative(requests, rates, window_s)
    raise ValueError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
