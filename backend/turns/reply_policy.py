"""How a process writes its replies, from its settings: which stages run, which checks."""

import dataclasses
import functools
import logging
from dataclasses import dataclass

from backend.config import Settings
from backend.prompting.answers import AnswerChecks

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplyPolicy:
    second_tries: bool = True  # check a reply's yes or no opening (bots with an opening judge)
    quotes: bool = True  # quote a policy line for "I don't know" (bots with a line_answers judge)
    # No two of the turn's requests share an engine step, so the same conversation gets the
    # same reply every time (the eval's own app): the gates are asked before the reply's
    # request starts, not beside its prefill, and the policy lines are judged only once the
    # reply has said it does not know, not while it may yet.
    one_request_at_a_time: bool = False
    answer_checks: str = "bot"  # "bot": as each bot says; else this setting for every bot
    answer_samples: int | None = None  # None: as each bot says; else this many for every bot
    # No samples whatever a bot says: they are the model's, off with its judges.
    samples_off: bool = False

    @classmethod
    def of(cls, settings: Settings) -> "ReplyPolicy":
        samples_off = not settings.model_judges
        if samples_off and settings.answer_samples:
            _warn_once(SAMPLES_OFF)
        return cls(
            second_tries=settings.model_judges and settings.second_try,
            quotes=settings.model_judges,
            one_request_at_a_time=settings.one_request_at_a_time,
            answer_checks=settings.answer_checks,
            answer_samples=settings.answer_samples,
            samples_off=samples_off,
        )

    def checks_of(self, bot: AnswerChecks) -> AnswerChecks:
        checks = bot if self.answer_checks == "bot" else dataclasses.replace(bot, checks=self.answer_checks)
        if self.answer_samples is not None:
            checks = dataclasses.replace(checks, samples=self.answer_samples)
        if self.samples_off and checks.samples:
            _warn_once(SAMPLES_OFF)
            checks = dataclasses.replace(checks, samples=0)
        return checks


SAMPLES_OFF = "answer samples are off: they need the model's judges on (PREFIXDESK_MODEL_JUDGES)"


@functools.cache
def _warn_once(message: str) -> None:
    logger.warning(message)
