"""Where a reply's sentences and clauses end, in any script: the unit a held reply is checked
and shown in, and the points inside a sentence where what it asserts so far is whole enough to
be found wrong for good (`release.py`); the first sentence a plain yes or no is read by
(`grounding.py`)."""

import re

# A sentence ends in one of these followed by a space, or in a full-width stop or a line break.
STOPS = ".!?…"
CLOSED_STOPS = "。！？\n"
# A clause ends in one of these followed by a space ("3," goes on as "3,000"), or a full-width one.
CLAUSE_STOPS = ",;:"
CLOSED_CLAUSE_STOPS = "，；：、"
_ENDS = re.compile(rf"(?<=[{re.escape(STOPS)}])\s+|(?<=[{CLOSED_STOPS}])")


def first_sentence(text: str) -> str:
    """The text up to its first sentence end ("3.5" goes on); the whole text if it has none."""
    return next((part for part in _ENDS.split(text) if part.strip()), text)


def completes_sentence(before: str, piece: str) -> bool:
    """A stream whose last piece was `before` has a whole sentence once `piece` comes: the
    moment a held reply's first sentence can be checked and shown."""
    return ended_before(before, piece) or ends_with(piece)


def ends_with(piece: str) -> bool:
    """A sentence ends with this piece: a full-width stop or a line break, or a stop and a space."""
    return _closes(piece, STOPS, CLOSED_STOPS)


def ended_before(before: str, after: str) -> bool:
    """A sentence ended with the piece `before`, as the next one (`after`) shows: a stop then a
    space ("3.5" is a figure, "3. " an end)."""
    return _closed_before(before, after, STOPS)


def clause_ends_with(piece: str) -> bool:
    """A clause ends with this piece: a full-width comma, or a comma (semicolon, colon) and a space."""
    return _closes(piece, CLAUSE_STOPS, CLOSED_CLAUSE_STOPS)


def clause_ended_before(before: str, after: str) -> bool:
    """A clause ended with the piece `before`, as the next one shows: a comma then a space."""
    return _closed_before(before, after, CLAUSE_STOPS)


def _closes(piece: str, stops: str, closed_stops: str) -> bool:
    """The piece ends in one of `closed_stops`, or in one of `stops` and a space."""
    return piece[-1:] in tuple(closed_stops) or (piece[-1:].isspace() and piece.rstrip()[-1:] in tuple(stops))


def _closed_before(before: str, after: str, stops: str) -> bool:
    return before[-1:] in tuple(stops) and after[:1].isspace()
