"""The prompt's own scaffolding kept out of what a customer reads as it streams.

A small model now and then opens its reply by repeating the heading of the note it was given
("The policy lines that best match ..."). The stored reply drops such headings
(`PromptAssembler.without_note_headings`); the stream must not show them either, so text that
may yet become one is held back until it can no longer."""

from collections.abc import Sequence


class ScaffoldFilter:
    def __init__(self, phrases: Sequence[str]):
        self.phrases = tuple(phrase for phrase in phrases if phrase)
        self.pending = ""  # text that may be the start of a phrase, not shown yet

    def feed(self, text: str) -> str:
        """What of the stream so far may be shown now."""
        self.pending += text
        for phrase in self.phrases:
            self.pending = self.pending.replace(phrase, "")
        keep = self._partial_phrase_at_end()
        shown = self.pending[: len(self.pending) - keep]
        self.pending = self.pending[len(shown) :]
        return shown

    def rest(self) -> str:
        """The reply has ended: what was held back cannot become a phrase any more."""
        rest, self.pending = self.pending, ""
        return rest

    def _partial_phrase_at_end(self) -> int:
        """The length of the longest end of the pending text that starts a phrase."""
        longest = 0
        for phrase in self.phrases:
            for length in range(min(len(phrase) - 1, len(self.pending)), longest, -1):
                if self.pending.endswith(phrase[:length]):
                    longest = length
                    break
        return longest
