"""Do other replies the model could have written assert the same thing?

A model that knows the answer says it whatever the sampling; one that guesses says something
else each time. Beside the greedy reply, `n` replies are sampled from the same prompt in one
request (its blocks are shared: the prefill is paid once) and compared on what can be
compared without a model: a plain yes or no, and the figures. A reply whose figures fewer
than half of the samples give too is doubted; one that says yes or no, unless three in four
samples say the same (a yes or no is one of two: half of them repeat a guess by chance).

As served, the samples are asked for when the reply is, so that they decode in the same
engine steps as the reply (on a CPU a step of five sequences costs little more than one of
one); when a turn's requests go one at a time (the eval), after it. The reply so far (its
sentences checked as they end, `release.py`) is compared with as much of each sample as a
reply that long needs, once the samples have written it.
"""

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from backend.engine.interface import Engine, SampleProgress
from backend.prompting.openings import Opening, Openings
from backend.turns import figures
from backend.turns.checks import FinishedReply, Review
from backend.turns.decisions import AcceptedMessage

TEMPERATURE = 0.8
# The share of samples that must assert what the reply asserts. A guessed figure is rarely
# guessed again; a yes or no is one of two, so half the samples repeat a guess by chance.
MIN_AGREEMENT = 0.5
MIN_YES_NO_AGREEMENT = 0.75
MAX_SAMPLE_TOKENS = 64  # the yes or no and the figures come early in a reply
MIN_SAMPLE_TOKENS = 16
SEED = 0  # the same conversation samples the same replies on every run


# Whether the samples written so far (and which of them ended) settle the comparison already.
Settled = Callable[[list[str], list[bool]], bool]


@dataclass(frozen=True)
class Claims:
    """What a reply asserts that can be compared: its yes or no, and its figures."""

    opening: Opening
    figures: frozenset[figures.Figure]

    @property
    def empty(self) -> bool:
        return self.opening is Opening.NEITHER and not self.figures

    def backed_by(self, other: "Claims") -> bool:
        """`other` says the same yes or no (if this says one) and every figure this gives."""
        same_opening = self.opening is Opening.NEITHER or other.opening is self.opening
        return same_opening and self.figures <= other.figures


def claims_of(text: str, openings: Openings | None) -> Claims:
    opening = openings.answer(text) if openings is not None else Opening.NEITHER
    return Claims(opening, figures.claimed(text))


# The end of a sample still being written: a word it may go on with ("12" of "120", "No" of
# "Nothing"), then a figure it may go on with or give a unit to ("4." of "4.95", "120 " of
# "120 days").
UNFINISHED_WORD = re.compile(r"[0-9A-Za-z%'-]+$")
UNFINISHED_FIGURE = re.compile(r"\d[\d.,]*\s*$")


def claims_so_far(text: str, openings: Openings | None) -> Claims:
    """What a sample still being written asserts already, whatever it writes next: its yes or
    no once its first words settle it, the figures it has finished. Whatever these back, the
    whole sample backs too (`claims_of`)."""
    opening = openings.of(text)[0] if openings is not None else Opening.NEITHER
    finished = UNFINISHED_FIGURE.sub("", UNFINISHED_WORD.sub("", text))
    return Claims(opening, figures.claimed(finished))


def settled_so_far(
    reply: Claims, written: list[str], ended: list[bool], openings: Openings | None, needed: float
) -> bool:
    """Whether what the samples have written settles the comparison, however they go on:
    enough of them back the reply already, or too few still can (a sample that ended without
    backing it cannot, nor one that opens with the other yes or no)."""
    so_far = [
        claims_of(text, openings) if done else claims_so_far(text, openings)
        for text, done in zip(written, ended, strict=True)
    ]
    cannot = sum(_cannot_back(reply, claims, done) for claims, done in zip(so_far, ended, strict=True))
    return agreement(reply, so_far) >= needed or (len(written) - cannot) / len(written) < needed


# The openings of a sample that, once written, no continuation makes the reply's.
SETTLED_THE_OTHER_WAY = {
    Opening.YES: (Opening.NO, Opening.NEITHER),
    Opening.NO: (Opening.YES, Opening.NEITHER),
}


def _cannot_back(reply: Claims, sample_so_far: Claims, ended: bool) -> bool:
    if reply.backed_by(sample_so_far):
        return False
    return ended or sample_so_far.opening in SETTLED_THE_OTHER_WAY.get(reply.opening, ())


def agreement(reply: Claims, samples: list[Claims]) -> float:
    return sum(reply.backed_by(sample) for sample in samples) / len(samples) if samples else 1.0


def agreement_needed(reply: Claims) -> float:
    return MIN_AGREEMENT if reply.opening is Opening.NEITHER else MIN_YES_NO_AGREEMENT


def enough_tokens(reply_tokens: int) -> int:
    """What each sample needs to say what the reply says: as many tokens, and a quarter more
    (phrasings differ in length), within the samples' bounds."""
    return min(MAX_SAMPLE_TOKENS, max(MIN_SAMPLE_TOKENS, reply_tokens + reply_tokens // 4))


class Samples:
    """The samples of one reply: asked for beside it (`start`), or once it is written.

    Beside it, they are written up to MAX_SAMPLE_TOKENS until the reply ends; then only as
    far as the reply's length asks (`enough_tokens`), so that a short reply does not wait
    for long samples."""

    def __init__(self, engine: Engine, message: AcceptedMessage, n: int):
        self.engine, self.message, self.n = engine, message, n
        self.task: asyncio.Task[list[str]] | None = None
        self.shed = False  # the load was too high for them when the reply started
        self.progress = SampleProgress(n)
        self._enough = MAX_SAMPLE_TOKENS

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.create_task(self._ask())

    async def texts(self, reply_tokens: int, settled: Settled | None = None) -> list[str]:
        """The samples, written as far as a whole reply of `reply_tokens` needs, or as far as
        they are once `settled` says the rest cannot change the comparison."""
        self._enough = enough_tokens(reply_tokens)
        return await self._written(lambda: False, settled, within=None)

    async def texts_so_far(self, reply_tokens: int, settled: Settled | None = None) -> list[str]:
        """As much of each sample as a reply that has written `reply_tokens` so far needs, once
        the samples have written that much (all of them, from an engine that writes them whole),
        or once `settled` says the rest cannot change the comparison."""
        needed = enough_tokens(reply_tokens)
        return await self._written(lambda: self.progress.reached(needed), settled, within=needed)

    async def _written(
        self, reached: Callable[[], bool], settled: Settled | None, within: int | None
    ) -> list[str]:
        self.start()
        assert self.task is not None
        while not self.task.done() and not reached():
            if settled is not None and not self.progress.empty:
                written, ended = self.progress.texts(within), self.progress.ended_within(within)
                if settled(written, ended):
                    return written
            self.progress.changed.clear()
            changed = asyncio.ensure_future(self.progress.changed.wait())
            try:
                await asyncio.wait((self.task, changed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
        if self.progress.empty or within is None:
            return await self.task
        return self.progress.texts(within=within)

    def cancel(self) -> None:
        """Not needed after all (a handover, a failure, nothing to compare): aborted."""
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def _ask(self) -> list[str]:
        message = self.message
        return await self.engine.sample(
            message.context_ids,
            n=self.n,
            max_tokens=self._enough,
            temperature=TEMPERATURE,
            seed=SEED,
            request_id=f"samples-{message.user.id}",
            cache_salt=message.bot.cache_salt,
            affinity_key=message.conversation.id,
            enough=lambda: self._enough,
            progress=self.progress,
        )


@dataclass(frozen=True)
class SamplesAgree:
    """The samples check of one reply (`samples_agree`), told apart from its other checks: a
    whole reply the others doubt does not wait for it (`finish.py`)."""

    samples: Samples

    async def __call__(self, engine: Engine, message: AcceptedMessage, reply: FinishedReply) -> Review:
        return await samples_agree(engine, message, reply, samples=self.samples)


async def samples_agree(
    engine: Engine, message: AcceptedMessage, reply: FinishedReply, *, samples: Samples
) -> Review:
    """Doubts a reply whose yes or no, or figures, fewer than half of the samples repeat."""
    started = time.perf_counter()
    openings = message.bot.definition.yes_no
    claimed = claims_of(reply.text, openings)
    if claimed.empty:  # nothing it says can be compared
        if reply.whole:
            samples.cancel()
        return Review()
    needed = agreement_needed(claimed)

    def settled(written: list[str], ended: list[bool]) -> bool:
        return settled_so_far(claimed, written, ended, openings, needed)

    if not reply.whole:
        texts = await samples.texts_so_far(reply.written_tokens, settled)
    else:
        try:
            texts = await samples.texts(reply.written_tokens, settled)
        finally:
            samples.cancel()
    share = agreement(claimed, [claims_of(text, openings) for text in texts])
    said = f"{share:.0%} of {samples.n} samples assert what it asserts"
    doubts = () if share >= needed else (said,)
    # What the reply asserts so far it goes on asserting: lasting, as far as the samples read.
    return Review(doubts=doubts, seconds=time.perf_counter() - started, lasting=True)
