"""How a bot's answers are checked before a customer reads them: `[answers]` in its bot.toml.

    [answers]
    checks = "strict"     # "strict", "balanced" or "off"
    quote_lines = 2       # the best-matching source lines quoted when a reply is not shown
    samples = 4           # replies sampled beside it, to compare what they assert

- `off`: a reply streams as the model writes it; the checks after it only flag it.
- `balanced`: a reply is held until checked and shown a sentence at a time, each once the
  reply up to its end passes the checks (the customer sees the typing dots until then); what
  the checks doubt is not shown: the source lines that best match the question are quoted
  instead (after the sentences already shown), with the offer of a person.
- `strict`: as balanced; besides, every figure the reply gives must be in the lines that
  match the question, not merely somewhere in the bot's sources.

`samples` (0 to 8; 4 unless set) is independent of the three: a held reply whose figures
fewer than half of that many sampled replies repeat, or whose plain yes or no fewer than
three in four repeat, is doubted (`turns/agreement.py`). Under load it is the first check
shed. It needs the model's judges on (`PREFIXDESK_MODEL_JUDGES`; with them off the samples
are not asked for, and the app says so once).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHECKS = ("strict", "balanced", "off")
DEFAULT_CHECKS = "strict"
DEFAULT_QUOTE_LINES = 2
DEFAULT_SAMPLES = 4
MAX_SAMPLES = 8


class AnswersError(ValueError):
    """An `[answers]` table that does not say what is accepted; names the file and line."""


@dataclass(frozen=True)
class AnswerChecks:
    checks: str = DEFAULT_CHECKS
    quote_lines: int = DEFAULT_QUOTE_LINES
    samples: int = DEFAULT_SAMPLES

    @property
    def held(self) -> bool:
        """The reply is shown only once checked."""
        return self.checks != "off"

    @property
    def strict(self) -> bool:
        return self.checks == "strict"


def load_answer_checks(table: dict[str, Any], bot_toml: Path, source: str) -> AnswerChecks:
    unknown = sorted(set(table) - {"checks", "quote_lines", "samples"})
    if unknown:
        raise AnswersError(
            f"{bot_toml}, line {_line_of(source, unknown[0])}: [answers] has no {unknown[0]!r}"
        )
    checks = table.get("checks", DEFAULT_CHECKS)
    if checks not in CHECKS:
        raise AnswersError(
            f"{bot_toml}, line {_line_of(source, 'checks')}: [answers] checks = {checks!r}; "
            f"accepted: {', '.join(map(repr, CHECKS))}"
        )
    lines = table.get("quote_lines", DEFAULT_QUOTE_LINES)
    if not isinstance(lines, int) or isinstance(lines, bool) or not 1 <= lines <= 5:
        where = f"{bot_toml}, line {_line_of(source, 'quote_lines')}"
        raise AnswersError(f"{where}: [answers] quote_lines is 1 to 5, not {lines!r}")
    samples = table.get("samples", DEFAULT_SAMPLES)
    if not isinstance(samples, int) or isinstance(samples, bool) or not 0 <= samples <= MAX_SAMPLES:
        where = f"{bot_toml}, line {_line_of(source, 'samples')}"
        raise AnswersError(f"{where}: [answers] samples is 0 to {MAX_SAMPLES}, not {samples!r}")
    return AnswerChecks(checks, lines, samples)


def _line_of(source: str, key: str) -> int | str:
    """The line of `key` in the `[answers]` table of a bot.toml's text ("?" if not found)."""
    table = ""
    for number, line in enumerate(source.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            table = stripped
        elif table == "[answers]" and stripped.split("=", 1)[0].strip() == key:
            return number
    return "?"
