"""The judges against labelled sets: precision and recall of "asks for a person", "did not
answer" and "this policy line answers the question".

The sets are TOML files of labelled items (tests/quality/): customer messages, each with
whether it asks for a person; bot replies, each with whether it answered; questions beside
one policy line each, with whether the line answers. Each language is
judged with the judge prompts a bot of that language gets (prompts/_judges by default).
"""

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.engine.interface import Engine
from backend.judges.yes_no import YesNoJudge
from backend.prompting.chat_format import ChatFormat
from backend.prompting.judge_prompts import format_item, shared_judge_prompts

# judge -> (file, table of an item, the item's fields as the judge reads them, its label, is "yes")
SETS = {
    "handoff": ("handoff_requests.toml", "message", ("text",), "asks_for_human", True),
    "unanswered": ("unanswered_replies.toml", "reply", ("question", "reply"), "answered", False),
    "line_answers": ("line_answers.toml", "pair", ("question", "line"), "answers", True),
}


@dataclass(frozen=True)
class Scored:
    truth: bool  # the judge should say yes
    p_yes: float
    item: str
    p_offer_accepted: float | None = None  # the handoff set's answers to a bot message: the
    # `offer_accepted` judge's P(yes), asked beside the handoff judge as the app asks it
    p_offer_made: float | None = None  # and the `offer_made` judge's, of the bot's message
    made_threshold: float = 0.5  # the `offer_made` judge's own


def said_yes(scored: Scored, threshold: float, offer_threshold: float | None = None) -> bool:
    """The app's answer: the judge's yes, or for the handoff set, the offer judges' yes to both
    "did the bot offer a person" and "did the customer agree"."""
    offer, made = scored.p_offer_accepted, scored.p_offer_made
    accepted = offer_threshold is not None and offer is not None and offer > offer_threshold
    offered = made is not None and made > scored.made_threshold
    return scored.p_yes > threshold or (accepted and offered)


async def score_set(
    engine: Engine, chat_format: ChatFormat, prompts_dir: Path, labelled_dir: Path, judge_name: str
) -> dict[str, Any]:
    """Per language: precision and recall of the judge's "yes" at its threshold, and what it cost."""
    return {
        language: summary(scored.items, scored.threshold, scored.offer_threshold) | scored.costs
        for language, scored in (
            await judged_items(engine, chat_format, prompts_dir, labelled_dir, judge_name)
        ).items()
    }


@dataclass(frozen=True)
class JudgedSet:
    """A labelled set's items in one language with the judge's P(yes) for each."""

    items: list[Scored]
    threshold: float  # the judge's own
    costs: dict[str, float]
    offer_threshold: float | None = None  # the `offer_accepted` judge's own, for the handoff set


async def judged_items(
    engine: Engine, chat_format: ChatFormat, prompts_dir: Path, labelled_dir: Path, judge_name: str
) -> dict[str, JudgedSet]:
    file, table, fields, label, label_means_yes = SETS[judge_name]
    items = tomllib.loads((labelled_dir / file).read_text(encoding="utf-8"))[table]
    judged: dict[str, JudgedSet] = {}
    for language in sorted({item["language"] for item in items}):
        # A bot of this language gets these judges unless it brings its own.
        prompt = shared_judge_prompts(prompts_dir, language, (judge_name,))[judge_name]
        judge = YesNoJudge(prompt, chat_format)
        offer_judge = made_judge = None
        if judge_name == "handoff":  # the app asks all three about a message that answers the bot
            offer_prompts = shared_judge_prompts(prompts_dir, language, ("offer_made", "offer_accepted"))
            offer_judge = YesNoJudge(offer_prompts["offer_accepted"], chat_format)
            made_judge = YesNoJudge(offer_prompts["offer_made"], chat_format)
        made_threshold = made_judge.threshold if made_judge else 0.5
        scored, seconds, cached, prompt_tokens, offer_seconds = [], 0.0, 0, 0, []
        for n, item in enumerate(i for i in items if i["language"] == language):
            text = format_item({key: str(item.get(key, "")) for key in fields}, language)
            judgement = await judge.ask(
                engine, text, request_id=f"labelled-{judge_name}-{language}-{n}", cache_salt="labelled"
            )
            p_offer = p_made = None
            previous_reply = str(item.get("previous_reply", ""))
            if offer_judge is not None and made_judge is not None and previous_reply.strip():
                answer = format_item({"previous_reply": previous_reply, "text": str(item["text"])}, language)
                offer = await offer_judge.ask(
                    engine, answer, request_id=f"labelled-offer-{language}-{n}", cache_salt="labelled"
                )
                made = await made_judge.ask(
                    engine,
                    format_item({"previous_reply": previous_reply}, language),
                    request_id=f"labelled-made-{language}-{n}",
                    cache_salt="labelled",
                )
                p_offer, p_made = offer.p_yes, made.p_yes
                offer_seconds.append(offer.seconds + made.seconds)
                text = answer  # what a reader of the errors needs
            truth = bool(item[label]) == label_means_yes
            scored.append(Scored(truth, judgement.p_yes, text, p_offer, p_made, made_threshold))
            seconds += judgement.seconds
            cached += judgement.cached_tokens
            prompt_tokens += judgement.prompt_tokens
        costs = {
            "judge_ms_mean": round(seconds / len(scored) * 1000, 1),
            "new_tokens_mean": round((prompt_tokens - cached) / len(scored), 1),
            "prefix_tokens": len(judge.prefix_ids),
        }
        if offer_seconds:  # both offer judges, one after the other here; the app asks all at once
            costs["offer_judges_ms_mean"] = round(sum(offer_seconds) / len(offer_seconds) * 1000, 1)
        offer_threshold = offer_judge.threshold if offer_judge else None
        judged[language] = JudgedSet(scored, judge.threshold, costs, offer_threshold)
    return judged


def calibrated_threshold(scored: list[Scored]) -> float:
    """The threshold (in hundredths) at which the most items are judged right; of equals, the
    one nearest 0.5. Chosen on a development set, then measured on a held-out one."""
    grid = [n / 100 for n in range(1, 100)]
    return max(grid, key=lambda t: (accuracy(scored, t), -abs(t - 0.5)))


def calibrated_offer_threshold(scored: list[Scored], threshold: float) -> float | None:
    """The `offer_accepted` judge's threshold, chosen as above with the handoff judge's fixed
    (None where no item was asked it)."""
    if not any(s.p_offer_accepted is not None for s in scored):
        return None
    grid = [n / 100 for n in range(1, 100)]
    return max(grid, key=lambda t: (accuracy(scored, threshold, t), -abs(t - 0.5)))


def accuracy(scored: list[Scored], threshold: float, offer_threshold: float | None = None) -> float:
    return sum(said_yes(s, threshold, offer_threshold) == s.truth for s in scored) / len(scored)


def summary(scored: list[Scored], threshold: float, offer_threshold: float | None = None) -> dict[str, Any]:
    """Precision and recall of "yes" (P(yes) above `threshold`, or for the handoff set the
    `offer_accepted` judge's above `offer_threshold`), and the items judged wrong."""
    said = [said_yes(s, threshold, offer_threshold) for s in scored]
    true_yes = sum(s.truth and yes for s, yes in zip(scored, said, strict=True))
    truly_yes = sum(s.truth for s in scored)
    figures: dict[str, Any] = {"items": len(scored), "threshold": threshold}
    if offer_threshold is not None:
        figures["offer_accepted_threshold"] = offer_threshold
        made = [s.made_threshold for s in scored if s.p_offer_made is not None]
        if made:
            figures["offer_made_threshold"] = made[0]
    return figures | {
        "precision": round(true_yes / sum(said), 3) if any(said) else None,
        "recall": round(true_yes / truly_yes, 3) if truly_yes else None,
        "accuracy": round(accuracy(scored, threshold, offer_threshold), 3),
        "errors": [
            {"item": s.item, "expected": "yes" if s.truth else "no", "p_yes": round(s.p_yes, 3)}
            | ({} if s.p_offer_accepted is None else {"p_offer_accepted": round(s.p_offer_accepted, 3)})
            | ({} if s.p_offer_made is None else {"p_offer_made": round(s.p_offer_made, 3)})
            for s, yes in zip(scored, said, strict=True)
            if s.truth != yes
        ],
    }
