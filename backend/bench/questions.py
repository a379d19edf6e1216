"""Customer questions for the benchmarks: distinct, short, answered by the bots' policies.

None asks for a person: the app would hand the conversation over instead of replying.
"""

import tomllib
from pathlib import Path

SHOP_EN = [
    "How many days do I have to return an item?",
    "Is return shipping free in Germany?",
    "How long does a refund take?",
    "Can I return a used sleeping bag?",
    "Can I return a gift card?",
    "When will my order ship if I order at 10:00?",
    "How much is standard delivery?",
    "Is delivery free for a 75 EUR order?",
    "How fast is express delivery to Belgium?",
    "Do you ship to Switzerland?",
    "Do you ship to the United States?",
    "How do I track my parcel?",
    "How long is the warranty on a jacket?",
    "Is a broken tent zip repaired for free?",
    "Does the warranty cover fire damage?",
    "Can I pay with PayPal?",
    "Do you offer pay later?",
    "Can I cancel my order?",
    "Can I combine two discount codes?",
    "Can I add a discount code after ordering?",
    "Do prices include VAT?",
    "Which sizes do your clothes use?",
    "When will an out-of-stock item be back?",
    "What is your phone number?",
    "What happens if I write at night?",
    "Where is your warehouse?",
    "How much does return shipping cost in Norway?",
    "Can I return an item without tags?",
    "Is express delivery available in France?",
    "Do you accept Klarna?",
    "How long is the warranty on a tent?",
    "Can I change my delivery address after packing?",
    "Is a backpack covered for 3 years?",
    "Do you accept iDEAL?",
    "What if my parcel never arrives?",
]


def eval_questions(bot_folder: Path) -> list[str]:
    """A bot's eval questions that open a conversation: the first turns of its single-turn
    cases, without those that ask for a person (the bot would hand over instead of replying)."""
    cases = tomllib.loads((bot_folder / "eval.toml").read_text(encoding="utf-8")).get("case", [])
    found: list[str] = []
    for case in cases:
        turns = case.get("turns", [])
        if len(turns) == 1 and not case.get("handoff", False) and turns[0] not in found:
            found.append(turns[0])
    return found
