"""A second try when a reply opens with a yes or no that the policy does not give.

A reply's first tokens are held until the gates pass (turn.py); when its bot has an opening
judge, they are held until its first words show whether it commits to yes or no
(`prompting/openings.py`). If it does, the opening judge is asked at the end of the
conversation itself, whose tokens the reply's own prefill has just put in the prefix cache:
going by the policy, is the answer yes? When the judge answers the other way, the reply is
dropped before the customer sees any of it, and, as the bot's `[second_try] action` says,
it is written again after a system note that gives the policy's best-matching lines
explicitly (the note joins the conversation's context, which stays append-only), or the
conversation goes to a person. Replies that open some other way are not held any longer.
"""

import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass

from backend.engine.interface import Engine, GenerationResult, StreamAccumulator
from backend.prompting.assembler import PromptAssembler
from backend.prompting.openings import Opening
from backend.turns.decisions import AcceptedMessage
from backend.turns.writing import ReplyJob, pass_on

logger = logging.getLogger(__name__)

RETRY_LINES = 3  # the policy lines a second try is given explicitly


@dataclass(frozen=True)
class Contradiction:
    """The reply opened with `opening` (a yes when `said_yes`); the judge's P(yes) said otherwise."""

    opening: str
    said_yes: bool
    p_yes: float

    @property
    def reason(self) -> str:
        answer = "no" if self.said_yes else "yes"
        return f"opened with {self.opening!r}; the policy check answered {answer} (p_yes={self.p_yes:.2f})"


async def contradicted(
    engine: Engine, message: AcceptedMessage, opening: Opening, word: str
) -> Contradiction | None:
    """The opening judge's answer, if it goes against the reply's opening (a yes or a no)."""
    bot = message.bot
    judge = bot.judges["opening"]
    judgement = await judge.labels.ask(
        engine,
        judge.prompt_after(message.context_ids),
        judge.threshold,
        request_id=f"opening-{message.user.id}",
        cache_salt=bot.cache_salt,
        affinity_key=message.conversation.id,
    )
    said_yes = opening == Opening.YES
    logger.debug(
        "message %s opened with %r; the opening judge's p_yes=%.3f", message.user.id, word, judgement.p_yes
    )
    if judgement.answer == said_yes:
        return None
    return Contradiction(word, said_yes, judgement.p_yes)


def retry_note_ids(
    assembler: PromptAssembler, message: AcceptedMessage, contradiction: Contradiction
) -> list[int]:
    """The system note a second try is written after: what went wrong, and the policy's lines
    that best match the customer's message."""
    second_try = message.bot.definition.second_try
    assert second_try is not None, "only a bot with an opening judge has a second try"
    text = second_try.retry_note.replace("{opening}", contradiction.opening)
    if lines := message.bot.definition.reference.matching(message.user.text, RETRY_LINES):
        text += "\n\n" + "\n".join(f"- {line}" for line in lines)
    return assembler.format.message(assembler.format.system, text)


async def write_again(
    job: ReplyJob, assembler: PromptAssembler, max_model_len: int, note_ids: list[int], started: float
) -> GenerationResult:
    """The reply written again after a note with the policy's lines. Its timings count from
    the first try's start (`started`), as the customer waited from then."""
    prompt = assembler.prompt_for_reply([*job.message.context_ids, *note_ids])
    retried_at = time.perf_counter() - started
    said = StreamAccumulator(len(prompt))
    max_tokens = min(job.reply.max_tokens, max_model_len - len(prompt))
    items = job.tokens(prompt, max_tokens, f"reply-{job.reply.message_id}-again")
    async with contextlib.aclosing(items):
        result = await pass_on(items, said, job)
    if result.finish_reason == "interrupted":
        return result
    return dataclasses.replace(result, ttft_s=retried_at + result.ttft_s, total_s=retried_at + result.total_s)
