"""Whether a reply's first words may be shown: a pure state machine over its token deltas.

A bot with an opening judge holds a reply's first words until they show whether it commits
to a plain yes or no (`prompting/openings.py`); if it does, the judge must agree
(`second_try.py`). A bot with a line_answers judge holds them while they may yet say it does
not know (`prompting/quoting.py`); if they do, a policy line that answers is quoted instead
(`quotes.py`). The watch decides; its driver (`reply.py`) asks the judges and feeds their
verdicts back:

    see(delta)          -> Hold | AskOpening | AskLines | Release
    opening_judged(c)   -> Contradicted | AskLines | Release
    lines_judged(q)     -> Quoted | Release
"""

from dataclasses import dataclass, field

from backend.engine.interface import TokenDelta
from backend.prompting.openings import Opening, Openings, Start
from backend.prompting.quoting import Quoting
from backend.turns.quotes import Quote
from backend.turns.second_try import Contradiction

MAX_HELD_TOKENS = 24  # a reply's first tokens held while its opening is unsettled, at most


@dataclass(frozen=True)
class Hold:
    """Nothing to show yet: more tokens will tell."""

    judge_lines: bool = False  # the opening may yet say it does not know: judge the lines beside it


@dataclass(frozen=True)
class AskOpening:
    """The reply opens with a plain yes or no: the opening judge must agree."""

    opening: Opening
    word: str


@dataclass(frozen=True)
class AskLines:
    """The reply opens by saying it does not know: is there a policy line that answers?"""


@dataclass(frozen=True)
class Release:
    """Show the held tokens; the rest of the reply is passed on as it comes."""

    held: list[TokenDelta]


@dataclass(frozen=True)
class Contradicted:
    """The opening judge went against the reply's yes or no: the reply is dropped unseen."""

    contradiction: Contradiction


@dataclass(frozen=True)
class Quoted:
    """The reply said it does not know and a policy line answers: the line is quoted instead."""

    quote: Quote


Step = Hold | AskOpening | AskLines | Release


@dataclass
class OpeningWatch:
    openings: Openings | None  # the yes and no openings, for a bot with an opening judge
    quoting: Quoting | None  # the "I don't know" openings, for a bot with a line_answers judge
    judge_lines_early: bool = True  # judge the lines while the opening may yet say it does not know
    held: list[TokenDelta] = field(default_factory=list)
    _opening: tuple[Opening, str] = (Opening.NEITHER, "")
    _unknown: Start = Start.NO
    _lines_asked: bool = False
    _no_line_answers: bool = False

    @property
    def watching(self) -> bool:
        return self.openings is not None or self.quoting is not None

    def no_line_answers(self) -> None:
        """The lines judged early came back: none answers, so the reply goes on as written."""
        self._no_line_answers = True

    def see(self, delta: TokenDelta | None, *, ended: bool = False, stopping: bool = False) -> Step:
        """The next delta of the reply (None when the reply `ended` without one)."""
        if delta is not None:
            self.held.append(delta)
        said = "".join(d.text for d in self.held) + (" " if ended else "")
        self._opening = self.openings.of(said) if self.openings else (Opening.NEITHER, "")
        self._unknown = self.quoting.opening_of(said) if self.quoting else Start.NO
        judge_lines = (
            self.judge_lines_early
            and not self._lines_asked
            and self._unknown is Start.UNDECIDED
            and bool(said.strip())
        )
        self._lines_asked = self._lines_asked or judge_lines
        if self._no_line_answers:
            self._unknown = Start.NO
        undecided = self._opening[0] is Opening.UNDECIDED or self._unknown is Start.UNDECIDED
        held_tokens = sum(len(d.token_ids) for d in self.held)
        # Only blank text is undecided for long: an opening is a few words.
        if undecided and not ended and not stopping and held_tokens < MAX_HELD_TOKENS:
            return Hold(judge_lines)
        opening, word = self._opening
        if opening in (Opening.YES, Opening.NO):
            return AskOpening(opening, word)
        return self._after_opening()

    def opening_judged(self, contradiction: Contradiction | None) -> Contradicted | AskLines | Release:
        if contradiction is not None:
            return Contradicted(contradiction)
        return self._after_opening()

    def lines_judged(self, quote: Quote | None) -> Quoted | Release:
        return Quoted(quote) if quote is not None else Release(self.held)

    def _after_opening(self) -> AskLines | Release:
        return AskLines() if self._unknown is Start.YES else Release(self.held)
