"""A reply held until checked, shown a sentence at a time: each sentence once the reply up to
its end has passed every check a whole reply must pass.

The customer reads the first sentence while the model writes the next, instead of waiting for
the whole reply. Whatever is shown has passed the checks: the reply up to a sentence's end is
reviewed as if it ended there (its samples compared as far as they have been written to that
length, `agreement.py`). A doubt no continuation can lift (a figure given stays given,
`Review.lasting`) stops the reply there, and so does any doubt of an opening that says
something of its own while nothing is shown yet (of the question or its lines, or that the bot
does not know), or of a plain yes or no's first sentence: the reply would open with the doubted
words whatever followed (the customer acts on the yes), so its source lines are quoted at once
instead of after a whole reply. An opening that has only greeted or thanked ("Sure!", "Great
question!") waits for the sentence that does. Once something is shown, a doubt shows nothing
more for now; the next sentence's review may pass (a claim the next sentence restricts). Inside
a sentence, the reply so far is reviewed too at each clause's end ("No, ", "within 14 days, "),
where a figure has its unit and a yes or no is said; nothing is shown there, and only a lasting
doubt counts (a grant may still be restricted: "Yes, but only ..."), so a wrong figure or a
guessed yes stops the reply before its sentence ends. Once the reply is written, it is reviewed
whole; if that doubts it, the rest is not shown, and its source lines are quoted after what was
(`finish.py`). A reply that opens with a plain yes or no is shown only whole: the customer acts
on the yes, and a reply the checks doubt further on is no ground for it.

When a turn's requests go one at a time (the eval), nothing is checked while the reply is
written (a check would share its steps); its sentences and clauses are reviewed after it, in
order (`replay`), and what is shown is the same as if they had been checked as they came.
"""

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from backend.engine.interface import TokenDelta
from backend.turns.checks import FinishedReply, ReplyCheck, Review
from backend.turns.events import Token, TurnStream
from backend.turns.sentences import clause_ended_before, clause_ends_with, ended_before, ends_with


class CheckedRelease:
    def __init__(self, stream: TurnStream, *, live: bool = True):
        self.stream = stream
        self.live = live  # checked as the sentences end; else only `replay`ed, after the reply
        self.deltas: list[TokenDelta] = []
        # How many deltas each sentence or clause so far ends after, and whether a sentence does.
        self.ends: list[tuple[int, bool]] = []
        self.shown = ""  # the reply's readable text the customer has been shown
        self.first_shown_at: float | None = None  # time.perf_counter() of its first word
        self.checks: list[ReplyCheck] | None = None  # the reply's checks, chosen once (`finish.py`)
        self.doubt: Review | None = None  # a lasting doubt of the reply so far: it stops there
        self._readable: Callable[[str], str] = str
        self._review: Callable[[FinishedReply], Awaitable[Review]] | None = None
        self._reply_ids: Callable[[list[int]], list[int]] = list
        self._answers_yes_or_no: Callable[[str], bool] = lambda text: False
        self._says_something: Callable[[str], bool] = lambda text: True
        self._decode: Callable[[list[int]], str] | None = None
        self._checked = 0  # the sentence end last reviewed, in deltas
        self._checking: asyncio.Task[None] | None = None

    def attach(
        self,
        readable: Callable[[str], str],
        review: Callable[[FinishedReply], Awaitable[Review]],
        reply_ids: Callable[[list[int]], list[int]],
        answers_yes_or_no: Callable[[str], bool],
        says_something: Callable[[str], bool],
        decode: Callable[[list[int]], str] | None = None,
    ) -> None:
        """How the reply's raw text is read by the customer, how it is reviewed, the token ids
        of a reply that ends with given ones (what a model's check reads after the prompt),
        whether a reply opens with a plain yes or no, whether it says something of its own
        (of the question or its lines, or that the bot does not know), and how generated tokens
        read as text (to find the ends inside a piece of several)."""
        self._readable, self._review, self._reply_ids = readable, review, reply_ids
        self._answers_yes_or_no, self._says_something = answers_yes_or_no, says_something
        self._decode = decode

    def feed(self, delta: TokenDelta) -> None:
        """The reply's next tokens; a sentence or clause that ended before them or among them is
        checked there. Drafted tokens come several to a step: "know. Would" holds an end."""
        for piece in token_pieces(delta, self._decode):
            self._feed_piece(piece)

    def _feed_piece(self, delta: TokenDelta) -> None:
        before = self.deltas[-1].text if self.deltas else ""
        if ended_before(before, delta.text):
            self._ended(sentence=True)
        elif clause_ended_before(before, delta.text):
            self._ended(sentence=False)
        self.deltas.append(delta)
        if ends_with(delta.text):
            self._ended(sentence=True)
        elif clause_ends_with(delta.text):
            self._ended(sentence=False)

    def _ended(self, *, sentence: bool) -> None:
        self.ends.append((len(self.deltas), sentence))
        if self.live and (self._checking is None or self._checking.done()):
            self._checking = asyncio.create_task(self._check_latest())

    async def settle(self) -> None:
        """The reply is written: a check still running is dropped (it is reviewed whole now)."""
        if self._checking is not None and not self._checking.done():
            self._checking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checking
        self._checking = None

    async def replay(self) -> None:
        """Each sentence and clause end reviewed in order, as `feed` would have as they came."""
        for end, sentence in self.ends:
            if self.doubt is not None:
                return
            await self._check(end, sentence)

    def rest(self, whole: str) -> str:
        """What of the whole reply's readable text is still to be shown."""
        return whole[len(self.shown) :] if whole.startswith(self.shown) else ""

    def mark_shown(self, text: str) -> None:
        self.shown += text
        if text and self.first_shown_at is None:
            self.first_shown_at = time.perf_counter()

    async def _check_latest(self) -> None:
        while self.ends[-1][0] > self._checked and self.doubt is None:
            await self._check(*self.ends[-1])

    async def _check(self, end: int, sentence: bool) -> None:
        assert self._review is not None, "attach() first"
        self._checked = end
        deltas = self.deltas[:end]
        raw, ids = "".join(d.text for d in deltas), [i for d in deltas for i in d.token_ids]
        text = self._readable(raw)
        if not text.startswith(self.shown) or not text[len(self.shown) :].strip():
            return  # nothing new to read (or a heading the whole reply will drop)
        so_far = FinishedReply(
            text, self._reply_ids(ids), written_tokens=len(ids), whole=False, mid_sentence=not sentence
        )
        review = await self._review(so_far)
        if review.doubts:
            # A plain yes or no is read by its first sentence, the answer the customer acts on.
            first = not any(ended and at < end for at, ended in self.ends)
            says = self._says_something(text) or (first and self._answers_yes_or_no(text))
            opening = sentence and not self.shown and says
            if review.lasting or opening:
                self.doubt = review
        elif sentence and not self._answers_yes_or_no(text):
            new = text[len(self.shown) :]
            self.stream.put(Token(new))
            self.mark_shown(new)


def token_pieces(delta: TokenDelta, decode: Callable[[list[int]], str] | None) -> list[TokenDelta]:
    """A piece of several tokens cut after each token that ends a whole character of its text:
    the points where a sentence or clause inside it can end. Whole if it cannot be cut so (its
    first character began in the piece before, or the text is not its tokens' alone)."""
    ids = delta.token_ids
    if decode is None or len(ids) < 2 or decode(ids) != delta.text:
        return [delta]
    pieces, cut, taken = [], 0, 0
    for count in range(1, len(ids)):
        text = decode(ids[:count])
        if delta.text.startswith(text) and len(text) > taken:
            pieces.append(TokenDelta(text[taken:], ids[cut:count]))
            cut, taken = count, len(text)
    pieces.append(TokenDelta(delta.text[taken:], ids[cut:]))
    return pieces
