"""Where a reply's sentences end, in any script: the unit a held reply is checked and shown in
(`release.py`), and the first sentence a plain yes or no is read by (`grounding.py`)."""

import re

# A sentence ends in one of these followed by a space, or in a full-width stop or a line break.
STOPS = ".!?…"
CLOSED_STOPS = "。！？\n"
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
    return piece[-1:] in tuple(CLOSED_STOPS) or (piece[-1:].isspace() and piece.rstrip()[-1:] in tuple(STOPS))


def ended_before(before: str, after: str) -> bool:
    """A sentence ended with the piece `before`, as the next one (`after`) shows: a stop then a
    space ("3.5" is a figure, "3. " an end)."""
    return before[-1:] in tuple(STOPS) and after[:1].isspace()
