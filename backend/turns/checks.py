"""Checks of a finished bot reply: did it answer, and may it be wrong?

Each check returns a `Review`; the turn merges them and settles the reply with the result
(a doubtful reply is marked with why; replies that did not answer, in a row, hand over).
The model's checks are cached classifications (`judges/yes_no.py`): the unanswered judge
has a fixed few-shot prefix; the policy check is asked at the end of the conversation
itself, whose every token but the question is already in the prefix cache.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from backend.engine.interface import Engine
from backend.prompting.judge_prompts import format_item
from backend.turns import figures, grounding
from backend.turns.decisions import AcceptedMessage

logger = logging.getLogger(__name__)

MATCHING_LINES = 3  # the source lines a strictly checked reply's figures must be in


@dataclass(frozen=True)
class Review:
    answered: bool = True  # False: the reply says it cannot answer, or answers something else
    doubts: tuple[str, ...] = ()  # why the reply may be wrong
    seconds: float = 0.0  # what the check took
    # Its doubts hold however the reply goes on (a figure given stays given): a reply so far
    # doubted so is stopped there (`release.py`).
    lasting: bool = False


@dataclass(frozen=True)
class FinishedReply:
    text: str
    token_ids: list[int]  # as they join the conversation's context
    written_tokens: int = 0  # of them, those the model wrote (not the note, not the turn's end)
    whole: bool = True  # False: the reply so far, up to a sentence's or a clause's end (`release.py`)
    mid_sentence: bool = False  # the reply so far ends at a clause's end, inside a sentence


ReplyCheck = Callable[[Engine, AcceptedMessage, FinishedReply], Awaitable[Review]]


async def answered_the_question(engine: Engine, message: AcceptedMessage, reply: FinishedReply) -> Review:
    bot = message.bot
    if "unanswered" not in bot.judges:
        return Review()
    item = format_item({"question": message.user.text, "reply": reply.text}, bot.definition.language)
    judgement = await bot.judges["unanswered"].ask(
        engine,
        item,
        request_id=f"unanswered-{message.user.id}",
        cache_salt=bot.cache_salt,
        affinity_key=message.conversation.id,
    )
    return Review(answered=not judgement.answer, seconds=judgement.seconds)


async def supported_by_policy(engine: Engine, message: AcceptedMessage, reply: FinishedReply) -> Review:
    bot = message.bot
    if "supported" not in bot.judges:
        return Review()
    judge = bot.judges["supported"]
    judgement = await judge.labels.ask(
        engine,
        judge.prompt_after([*message.context_ids, *reply.token_ids]),
        judge.threshold,
        request_id=f"supported-{message.user.id}",
        cache_salt=bot.cache_salt,
        affinity_key=message.conversation.id,
    )
    doubts = () if judgement.answer else (f"not supported by the policy (p={judgement.p_yes:.2f})",)
    return Review(doubts=doubts, seconds=judgement.seconds)


async def figures_in_sources(engine: Engine, message: AcceptedMessage, reply: FinishedReply) -> Review:
    """Amounts, durations and numbers the reply gives that nothing the model was shown states."""
    started = time.perf_counter()
    definition = message.bot.definition
    context = message.conversation.context or {}
    sources = (*definition.fixed_texts(), *map(str, context.values()))
    doubts = tuple(figures.unsupported(reply.text, *sources, message.previous_reply, message.user.text))
    return Review(doubts=doubts, seconds=time.perf_counter() - started, lasting=True)


async def figures_in_matching_lines(engine: Engine, message: AcceptedMessage, reply: FinishedReply) -> Review:
    """Amounts, durations and numbers the reply gives that the source lines matching the
    question do not state: a figure of another product or plan is in the sources too."""
    started = time.perf_counter()
    definition = message.bot.definition
    lines = definition.reference.matching(message.user.text, MATCHING_LINES)
    context = message.conversation.context or {}
    said = (*lines, *map(str, context.values()), message.previous_reply, message.user.text)
    # A figure the whole sources already refute is figures_in_sources' to report.
    refuted = {found.figure for found in figures.findings(reply.text, *definition.fixed_texts(), *said)}
    found = [found for found in figures.findings(reply.text, *said) if found.figure not in refuted]
    doubts = tuple(finding.describe("the lines that match the question") for finding in found)
    return Review(doubts=doubts, seconds=time.perf_counter() - started, lasting=True)


async def grounded_in_matching_lines(
    engine: Engine, message: AcceptedMessage, reply: FinishedReply
) -> Review:
    """A reply whose words are mostly not those of the lines that match the question, that
    only restates the question, or that denies where the best of them does not (or the other
    way round): turns/grounding.py. A reply that opens with a plain yes or no is read by its
    first sentence, which no continuation changes: a yes or no turned around is lasting."""
    started = time.perf_counter()
    definition, question = message.bot.definition, message.user.text
    language, yes_no = definition.language, definition.yes_no
    yes_or_no = yes_no is not None and yes_no.answers_yes_or_no(reply.text)
    lines = definition.reference.matching(question, MATCHING_LINES)
    if not lines:  # nothing in the sources is about it: a plain yes or no is made up
        made_up = ("answers yes or no where nothing in the sources is about the question",)
        return Review(
            doubts=made_up if yes_or_no else (),
            seconds=time.perf_counter() - started,
            lasting=True,  # a reply's opening does not change
        )
    doubts = []
    if grounding.restates_the_question(reply.text, question, language):
        doubts.append("restates the question and adds nothing from the sources")
    share = grounding.grounded_share(reply.text, lines, question, language)
    if share < grounding.MIN_GROUNDED_SHARE:
        doubts.append(f"{share:.0%} of what it says is in the lines that match the question")
    best = definition.reference.matching(question, 1)
    turned = bool(best) and grounding.turned_around(reply.text, best[0], language, yes_no)
    if turned:
        doubts.append("denies or grants where the line that matches the question best says the opposite")
    # Inside the first sentence a yes may still be restricted ("Yes, but only ..."): not yet lasting.
    lasting = turned and yes_or_no and not reply.mid_sentence
    return Review(doubts=tuple(doubts), seconds=time.perf_counter() - started, lasting=lasting)


async def review_reply(
    checks: Sequence[ReplyCheck], engine: Engine, message: AcceptedMessage, reply: FinishedReply
) -> Review:
    """Every check at once, merged; a check that fails finds nothing. Their time is the
    wall time of all of them, since they run together (what the customer waits)."""
    started = time.perf_counter()
    reviews = await asyncio.gather(
        *(check(engine, message, reply) for check in checks), return_exceptions=True
    )
    for review in reviews:
        if isinstance(review, BaseException):
            logger.error("a reply check failed for message %s: %r", message.user.id, review)
    return merged([review for review in reviews if isinstance(review, Review)], started)


def merged(reviews: Sequence[Review], started: float) -> Review:
    """Reviews of one reply as one, timed from `started` (`time.perf_counter()`)."""
    return Review(
        answered=all(review.answered for review in reviews),
        doubts=tuple(doubt for review in reviews for doubt in review.doubts),
        seconds=time.perf_counter() - started,
        lasting=any(review.lasting and review.doubts for review in reviews),
    )
