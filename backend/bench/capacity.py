"""How many live conversations a KV cache keeps: returning customers' cache hits against N.

Customers of the `shop-en` bot open conversations, `at_once` at a time, each with a few long
messages (order details pasted in, as customers do) so that the cache fills at a reachable N.
Whenever N conversations have been opened (N in a growing list), the customers who have been
away longest come back with a short follow-up, one at a time: what share of their history the
cache still served (cached / cacheable tokens) and how long their first token took.

The customers returning at the k-th checkpoint are the k-th group of the first ones opened:
the groups before them have come back since, so at every checkpoint the returning customers
are the least recently used of the N live conversations, the first the cache evicts.
"""

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from backend.bench.load import Record, send_turn
from backend.bench.questions import SHOP_EN
from backend.bench.targets import Target
from backend.bench.workloads import BOT, Conversation

_PRODUCTS = (
    ("Trail Runner 2 rain jacket", 129.0),
    ("Fjord 3-season tent, 2 person", 349.0),
    ("Glacier down sleeping bag, -5 C", 219.0),
    ("Ridge 40 L backpack", 119.0),
    ("Merino base layer top", 69.0),
    ("Canyon leather hiking boots", 179.0),
    ("Harbor fleece jacket", 89.0),
    ("Summit carbon trekking poles", 59.0),
    ("Delta insulated bottle, 0.75 L", 29.0),
    ("Meadow compact camping stove", 79.0),
    ("Tundra insulated gloves", 39.0),
    ("Willow wide-brim sun hat", 25.0),
    ("Basalt softshell trousers", 99.0),
    ("Kelp quick-dry towel", 22.0),
    ("Lagoon waterproof stuff sack set", 35.0),
    ("Prairie self-inflating sleeping mat", 89.0),
)
_COLOURS = ("black", "olive", "navy", "rust red", "stone grey", "sand", "forest green")
_SIZES = ("XS", "S", "M", "L", "XL", "EU 41", "EU 42", "EU 43", "EU 44", "one size")
_CITIES = ("Hamburg", "Rotterdam", "Lyon", "Vienna", "Ghent", "Aarhus", "Utrecht", "Graz", "Bremen")
# What customers write around their question: context, not requests for a person.
_STORY = (
    "I ordered everything on the same evening, mostly for a hiking trip with my family next month.",
    "The parcel came in two boxes and one had a small dent in the corner, but the contents looked fine.",
    "I tried the jacket on at home with a thick jumper and it felt a little tight across the shoulders.",
    "My partner thinks the colour looks different from the photos on your website, a bit darker in daylight.",
    "We have not used any of it outdoors yet, the tags are still attached and everything is back in its bag.",
    "I paid with my credit card and I still have the confirmation e-mail with the order number.",
    "The delivery driver left the parcel with a neighbour, who only gave it to me two days later.",
    "I would like to keep the rest of the order, as the other items fit well and we are happy with them.",
    "Last year I bought a similar tent from you and it has been great, so I trust the brand.",
    "The sleeping bag is warmer than I expected, which is good, but it is also larger when packed.",
    "I checked the size chart before ordering, but I was between two sizes and picked the smaller one.",
    "Our trip starts on a Saturday, so I am trying to sort this out well before then.",
    "The boots feel comfortable around the house, but I have only worn them for an hour or so on carpet.",
    "I am not in a hurry, I mainly want to understand how it works before I send anything back.",
    "The invoice in the parcel shows the prices with VAT, and I think one line is listed twice.",
    "I live in a flat on the third floor, so it is easiest for me if a courier can collect from the door.",
    "My daughter will use the backpack for school trips, so it needs to last a few years of regular use.",
    "The stove worked fine on the balcony when I tested it, and I used the gas canister from my old set.",
    "I have kept all the original packaging, including the plastic bags and the cardboard inserts.",
    "I read the care label on the trousers and washed them once at 30 degrees as it says.",
    "The gloves are warm, but the stitching on the left thumb already looks a little loose.",
    "I noticed that the tent poles are a slightly different shade of grey than the ones shown in the video.",
    "We usually camp at sites with electricity, so the stove is mostly for longer walks away from the car.",
    "I have a discount code from your newsletter that I did not manage to use when I placed this order.",
    "The tracking page showed the parcel as delivered a day before it actually arrived at my door.",
    "My brother recommended your shop, he has bought most of his climbing gear from you for years.",
    "The trekking poles are lighter than my old ones, which is exactly what I was hoping for.",
    "The bottle keeps drinks cold for the whole day, although the lid is a bit hard to open with gloves.",
    "I have attached nothing to this message, but I can send photos of the items if that is useful.",
    "I am usually at work during the day, so any pickup would have to be in the evening or on Saturday.",
    "The size M fleece fits my son well, he is fourteen and about one metre seventy tall.",
    "I compared the weight of the sleeping mat with the product page and it is about what you list.",
    "We are planning a second trip in the autumn, so I might order a few more things later this year.",
    "The box also contained a leaflet about your repair service, which I found interesting.",
    "I do not have a printer at home, so a return label on paper would be difficult for me.",
    "The hat is perfect, it is light and folds into the side pocket of the backpack without creasing.",
)


@dataclass(frozen=True)
class CapacityPlan:
    levels: tuple[int, ...]  # live conversations at each checkpoint, growing
    returning: int = 2  # customers returning at each checkpoint, one at a time
    turns: int = 2  # messages of each conversation when it is opened
    at_once: int = 8  # conversations being opened at the same time
    message_chars: int = 3600  # each opening message's length (the widget takes 4,000)

    def __post_init__(self) -> None:
        if not self.levels or list(self.levels) != sorted(set(self.levels)) or self.levels[0] < 1:
            raise ValueError("capacity: the conversation counts must be a growing list of positive numbers")
        if self.levels[0] < len(self.levels) * self.returning:
            raise ValueError(
                f"capacity: the first count ({self.levels[0]}) must hold every checkpoint's returning "
                f"customers ({len(self.levels)} checkpoints x {self.returning}): they are the first opened"
            )


def long_message(conversation: int, turn: int, chars: int) -> str:
    """A customer's long message about their order: distinct from its first words on, about
    `chars` characters (never more), ending in a question the policy answers."""
    rng = random.Random(f"capacity-{conversation}-{turn}")  # noqa: S311 (reproducible text)
    order = f"NW-{4000 + conversation:05d}"
    ask = SHOP_EN[(conversation * 3 + turn) % len(SHOP_EN)]
    opening = (
        f"Order {order}, message {turn + 1}: hello, I am writing from {rng.choice(_CITIES)} about my order. "
        "Here is what I received:"
    )
    lines = []
    for line in range(rng.randint(4, 7)):
        name, price = rng.choice(_PRODUCTS)
        quantity = rng.randint(1, 3)
        lines.append(
            f"- line {line + 1}: {quantity} x {name}, {rng.choice(_COLOURS)}, size {rng.choice(_SIZES)}, "
            f"{quantity * price:.2f} EUR"
        )
    head = "\n".join([opening, *lines, ""])
    tail = f"\nSo my question: {ask}"
    story: list[str] = []
    sentences = list(_STORY)
    rng.shuffle(sentences)
    for sentence in sentences:
        if len(head) + len(" ".join([*story, sentence])) + len(tail) > chars:
            break
        story.append(sentence)
    return (head + " ".join(story) + tail)[:chars]


def follow_up(conversation: int) -> str:
    """A returning customer's short message."""
    ask = SHOP_EN[conversation % len(SHOP_EN)]
    return f"Thanks. One more thing about order NW-{4000 + conversation:05d}: {ask}"


@dataclass
class Customer:
    index: int
    conversation: Conversation
    state: Any = None
    shared: int = 0  # tokens computed before this customer's next turn
    turns: int = 0


@dataclass
class _CapacityRun:
    """One capacity run: its target and meters, and every customer who has opened a conversation."""

    plan: CapacityPlan
    target: Target
    block_size: int
    peaks_of: Callable[[], AbstractAsyncContextManager[Any]]
    counters: Callable[[], Awaitable[dict[str, int]]]
    customers: list[Customer] = field(default_factory=list)

    def arrive(self, level: int, prefix_tokens: int) -> list[Customer]:
        """New customers, up to `level` in all, each with long messages about an order."""
        plan = self.plan
        fresh = [
            Customer(
                i,
                Conversation(
                    f"cap{i}", tuple(long_message(i, t, plan.message_chars) for t in range(plan.turns)), BOT
                ),
                shared=prefix_tokens,
            )
            for i in range(len(self.customers), level)
        ]
        self.customers += fresh
        return fresh

    async def talk(self, customer: Customer, texts: Sequence[str]) -> list[Record]:
        records = []
        for text in texts:
            record, customer.shared = await send_turn(
                self.target,
                customer.state,
                customer.conversation.key,
                customer.turns,
                text,
                customer.shared,
                self.block_size,
            )
            customer.turns += 1
            records.append(record)
        return records

    async def open_one(self, customer: Customer, slots: asyncio.Semaphore) -> list[Record]:
        async with slots:
            customer.state = await self.target.open(customer.conversation)
            return await self.talk(customer, customer.conversation.turns)

    async def open_all(self, fresh: list[Customer]) -> list[Record]:
        slots = asyncio.Semaphore(self.plan.at_once)
        found = await asyncio.gather(*(self.open_one(c, slots) for c in fresh))
        return [r for records in found for r in records]

    async def come_back(self, back: list[Customer]) -> list[Record]:
        records = []
        for customer in back:  # one at a time: each first token is the customer's own
            records += await self.talk(customer, [follow_up(customer.index)])
        return records

    async def phase(self, part: str, level: int, run: Callable[[], Awaitable[list[Record]]]) -> dict:
        load_avg = os.getloadavg()[0]
        before = await self.counters()
        async with self.peaks_of() as peaks:
            started = time.perf_counter()
            records = await run()
            total_s = time.perf_counter() - started
        after = await self.counters()
        return {
            "scenario": "capacity",
            "part": part,
            "level": level,
            "rate": None,
            "label": f"capacity:{part}@{level}",
            "total_s": total_s,
            "load_avg_1m_at_start": load_avg,
            "records": [asdict(r) for r in records],
            "engine_counters": {key: after[key] - before.get(key, 0) for key in after},
            **peaks.as_dict(),
        }


async def measure(
    plan: CapacityPlan,
    target: Target,
    *,
    prefix_tokens: int,
    block_size: int,
    peaks_of: Callable[[], AbstractAsyncContextManager[Any]],
    counters: Callable[[], Awaitable[dict[str, int]]],
) -> list[dict]:
    """Open conversations up to each checkpoint, then bring the longest-away customers back.
    One run per phase (`part` "open" or "return", `level` its checkpoint)."""
    capacity_run = _CapacityRun(plan, target, block_size, peaks_of, counters)
    runs = []
    for checkpoint, level in enumerate(plan.levels):
        fresh = capacity_run.arrive(level, prefix_tokens)
        runs.append(await capacity_run.phase("open", level, partial(capacity_run.open_all, fresh)))
        back = capacity_run.customers[checkpoint * plan.returning : (checkpoint + 1) * plan.returning]
        runs.append(await capacity_run.phase("return", level, partial(capacity_run.come_back, back)))
    return runs
