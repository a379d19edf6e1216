"""A policy line quoted instead of "I don't know".

The small default model often says it does not know (copying its worked example) when a line
of its policy answers the question. A reply's first tokens are held until the gates pass
(turn.py); when its bot asks the `line_answers` judge, they are also held while they may yet
say "I don't know" (`prompting/quoting.py`). If they do, the policy lines that match the
customer's message best are judged side by side, each with a short cached few-shot prompt:
does this line alone answer the question? The likeliest yes above the judge's threshold is
quoted, in the bot's words, before the customer sees anything of the first reply; if no
line answers, the reply goes on as written (it is honest). The quote joins the conversation
like any reply, so later turns stay append-only and cached.
"""

import asyncio
import logging
from dataclasses import dataclass

from backend.engine.interface import Engine, GenerationResult, StreamAccumulator
from backend.prompting.chat_format import ChatFormat
from backend.prompting.judge_prompts import format_item
from backend.turns.decisions import AcceptedMessage
from backend.turns.shedding import CheckShedding
from backend.turns.writing import ReplyJob

logger = logging.getLogger(__name__)

CANDIDATES = 3  # lines judged: the one that answers is often not the first (docs/quality.md)


@dataclass(frozen=True)
class Quote:
    line: str
    p_yes: float

    @property
    def reason(self) -> str:
        return f"said it did not know; quoted the policy line that answers (p_yes={self.p_yes:.2f})"


async def answering_line(engine: Engine, message: AcceptedMessage) -> Quote | None:
    """The line of the bot's policy that answers the customer's message, if the judge finds one."""
    bot = message.bot
    judge = bot.judges["line_answers"]
    lines = await asyncio.to_thread(bot.definition.reference.shown, message.user.text, CANDIDATES)
    try:
        judgements = await asyncio.gather(
            *(
                judge.ask(
                    engine,
                    format_item({"question": message.user.text, "line": line}, bot.definition.language),
                    request_id=f"line-{message.user.id}-{n}",
                    cache_salt=bot.cache_salt,
                    affinity_key=message.conversation.id,
                )
                for n, line in enumerate(lines)
            )
        )
    except Exception:  # the reply as written is honest: a failed judgement lets it through
        logger.exception("judging the policy lines for message %s failed", message.user.id)
        return None
    logger.debug("message %s: lines judged %s", message.user.id, [round(j.p_yes, 3) for j in judgements])
    best = max(range(len(lines)), key=lambda n: judgements[n].p_yes, default=None)
    if best is None or not judgements[best].answer:
        return None
    return Quote(lines[best], judgements[best].p_yes)


async def quoted_reply(
    job: ReplyJob, format: ChatFormat, quote: Quote, said: StreamAccumulator
) -> GenerationResult:
    """The reply that quotes a policy line, in place of the first one, which nobody saw: the
    line the judge found, then the lines that match the question best (those a doubted reply's
    quote gives, `finish.py`), should the judge have picked the wrong one. The lines are the
    policy's own words, so the quote is shown unchecked, at once. Its first token is the whole
    quote, timed from the turn's start (gates included); the model wrote none of it, so it has
    no prompt of its own."""
    definition = job.message.bot.definition
    quoting = definition.quoting
    assert quoting is not None, "only a bot with a line_answers judge quotes"
    best = await asyncio.to_thread(definition.lines_to_quote, job.message.user.text)
    text = quoting.quote("\n".join(dict.fromkeys([quote.line, *best])))
    said.prompt_tokens = 0
    ids = format.encode_text(text)
    said.add(text, ids)
    if not job.checks.held:  # else `finish.py` shows it, past the checks the model's words get
        job.show(text, ids)
    logger.info("reply to message %s: %s", job.message.user.id, quote.reason)
    return said.result()


class LinesJudged:
    """The policy lines judged for one reply, at most once: early, beside its opening's next
    tokens (so the verdict is nearly in when the opening says it does not know), or then."""

    def __init__(self, engine: Engine, message: AcceptedMessage, shedding: CheckShedding | None = None):
        self.engine = engine
        self.message = message
        self.shedding = shedding  # under load the lines are not judged: the reply goes on as written
        self.task: asyncio.Task[Quote | None] | None = None

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._judged())

    async def _judged(self) -> Quote | None:
        if self.shedding is not None and not await self.shedding.keeps("line"):
            return None
        return await answering_line(self.engine, self.message)

    def found_none(self) -> bool:
        """They were judged, and none answers."""
        task = self.task
        return task is not None and task.done() and not task.cancelled() and task.result() is None

    async def verdict(self) -> Quote | None:
        return await (self.task if self.task is not None else self._judged())

    def cancel(self) -> None:
        """The opening went another way: the judges' engine requests are aborted."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
