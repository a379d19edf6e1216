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

from backend.engine.interface import Engine
from backend.prompting.judge_prompts import format_item
from backend.turns.decisions import AcceptedMessage

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
    lines = bot.definition.reference.matching(message.user.text, CANDIDATES)
    language = bot.definition.language.split("-")[0]
    try:
        judgements = await asyncio.gather(
            *(
                judge.ask(
                    engine,
                    format_item({"question": message.user.text, "line": line}, language),
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
