"""How often each way of matching a bot's lines puts first the line that answers a question.

The labelled pairs of the `line_answers` sets (tests/quality/, a development set and a
held-out one) hold questions and the one line that answers each, among lines of the same
topics that do not. Per set and language, all of the set's lines make one policy, and each
question that has an answering line is matched against it: by shared words alone, and by
words and meaning fused, as the bots match their policies; the line first (the note's one
line), and among the first two (the lines quoted in place of a doubted reply) and three (the
`line_answers` judge's candidates).
"""

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backend.evaluation.cases import Case
from backend.prompting.definitions import Bot
from backend.prompting.reference import MATCHING, PolicyLines

PAIRS = "line_answers.toml"
WITHIN = (2, 3)  # besides first: among the first two (quoted) and three (judged)


def first_line_hits(labelled: Path) -> dict[str, dict[str, Any]]:
    """Per language: the questions, the lines, and per way of matching how many questions got
    their answering line first."""
    pairs = tomllib.loads(labelled.read_text(encoding="utf-8"))["pair"]
    report: dict[str, dict[str, Any]] = {}
    for language in sorted({pair["language"] for pair in pairs}):
        in_language = [pair for pair in pairs if pair["language"] == language]
        lines = list(dict.fromkeys(pair["line"] for pair in in_language))
        policy = "\n".join(f"- {line}" for line in lines)
        answered = [pair for pair in in_language if pair["answers"]]
        figures: dict[str, Any] = {"questions": len(answered), "lines": len(lines)}
        for matching in MATCHING:
            reference = PolicyLines.of(policy, language, matching=matching)
            figures[matching] = sum(reference.matching(p["question"], 1) == [p["line"]] for p in answered)
            for count in WITHIN:
                found = sum(p["line"] in reference.matching(p["question"], count) for p in answered)
                figures[f"{matching} in {count}"] = found
        report[language] = figures
    return report


def first_line_hits_on_cases(bot: Bot, cases: list[Case]) -> dict[str, Any]:
    """The same on a bot's eval cases: of those whose expected facts all stand in one line of
    its policy (the last message's answer, the handoff cases left out), how many got such a
    line first."""
    answerable = [case for case in cases if case.expect and not case.handoff and _lines_holding(bot, case)]
    figures: dict[str, Any] = {"questions": len(answerable), "lines": len(bot.reference.lines)}
    for matching in MATCHING:
        reference = bot.reference.matched_by(matching)
        for count in (1, *WITHIN):
            found = sum(
                bool(_lines_holding(bot, case, reference.matching(case.turns[-1], count)))
                for case in answerable
            )
            figures[matching if count == 1 else f"{matching} in {count}"] = found
    return figures


def _lines_holding(bot: Bot, case: Case, lines: Sequence[str] | None = None) -> list[str]:
    """The lines (of `lines`, or of the bot's policy) that hold a spelling of every expected fact."""
    return [
        line
        for line in (bot.reference.lines if lines is None else lines)
        if all(any(spelling.casefold() in line.casefold() for spelling in group) for group in case.expect)
    ]
