"""What one bot's eval cases came to: outcomes, handoffs, doubts, sources, timings."""

from typing import Any

from backend.evaluation.outcomes import Outcome
from backend.evaluation.transcript import SHOWN, SHOWN_AS_WRITTEN, CaseResult

LAST_TIMINGS = ("ttft_ms", "held_ms", "checks_ms", "total_ms", SHOWN)


def _handoffs(results: list[CaseResult]) -> dict[str, Any]:
    expected = [r for r in results if r.case.handoff]
    handed = [r for r in results if r.said.handed_off]
    true_handoffs = sum(r.case.handoff and r.said.handed_off for r in results)
    return {
        "expected": len(expected),
        "happened": len(handed),
        "precision": round(true_handoffs / len(handed), 3) if handed else None,
        "recall": round(true_handoffs / len(expected), 3) if expected else None,
    }


def _doubts(results: list[CaseResult]) -> dict[str, int]:
    answered = [r for r in results if not r.said.handed_off]  # replies the bot wrote and the checks saw
    wrong = [r for r in answered if not r.passed]
    right = [r for r in answered if r.passed]
    return {
        "wrong_replies": len(wrong),
        "wrong_flagged": sum(r.said.doubt is not None for r in wrong),
        "right_replies": len(right),
        "right_flagged": sum(r.said.doubt is not None for r in right),
        "withheld": sum(r.said.withheld for r in results),  # last replies the checks did not show
    }


def summarise(results: list[CaseResult], seconds: float) -> dict[str, Any]:
    prompt = sum(r.said.prompt_tokens for r in results)
    held, checks, ttft, total, shown, as_written = (
        sorted(ms for r in results for ms in r.said.timings[name])
        for name in ("held_ms", "checks_ms", "ttft_ms", "total_ms", SHOWN, SHOWN_AS_WRITTEN)
    )
    retried = [r for r in results if r.said.second_tries]
    return {
        "cases": len(results),
        "passed": sum(r.passed for r in results),
        "outcomes": {outcome.value: sum(r.outcome is outcome for r in results) for outcome in Outcome},
        "handoff": _handoffs(results),
        "doubt": _doubts(results),
        "sources": citations(results),
        "cached_share": round(sum(r.said.cached_tokens for r in results) / prompt, 3) if prompt else None,
        "ttft_ms_p50": _p50(ttft),
        "total_ms_p50": _p50(total),
        "first_token_shown_ms_p50": _p50(shown, digits=1),
        # Without the replies a second try or a quote replaced (shown whole, once decided).
        "first_token_shown_as_written_ms_p50": _p50(as_written, digits=1),
        "second_tries": {"cases": len(retried), "passed": sum(r.passed for r in retried)},
        "first_token_held_ms_mean": round(sum(held) / len(held), 1) if held else None,
        "checks_ms_mean": round(sum(checks) / len(checks), 1) if checks else None,
        "seconds": round(seconds, 1),
        "failures": [
            {
                "case": r.case.name,
                "reasons": r.reasons,
                "outcome": r.outcome.value,
                "reply": r.said.reply[:400],
            }
            for r in results
            if not r.passed
        ],
        "wrong": [
            {"case": r.case.name, "why": r.why, "reply": r.said.reply[:400]}
            for r in results
            if r.outcome is Outcome.WRONG
        ],
        "flagged": [{"case": r.case.name, "doubt": r.said.doubt} for r in results if r.said.doubt],
        # Every case's last reply and its outcome: what a new check would have caught, read offline.
        "answers": [
            {
                "case": r.case.name,
                "outcome": r.outcome.value,
                "withheld": r.said.withheld,
                "reply": r.said.reply[:400],
                # The last reply's: where a case's time to its first shown word went.
                "ms": {name: r.said.timings[name][-1] for name in LAST_TIMINGS if r.said.timings[name]},
            }
            for r in results
        ],
        "retried": [
            {"case": r.case.name, "why": r.said.second_tries, "passed": r.passed, "reply": r.said.reply[:200]}
            for r in retried
        ],
    }


def _p50(ordered: list[float], digits: int | None = None) -> float | None:
    """The median of sorted timings (the upper one of an even count), rounded if asked."""
    if not ordered:
        return None
    middle = ordered[len(ordered) // 2]
    return middle if digits is None else round(middle, digits)


def citations(results: list[CaseResult]) -> dict[str, int]:
    """How the bot's replies cite its help center: of the cases that name the articles answering
    them, how many replies cited one of those, only others, or none (reported, not judged)."""
    named = [r for r in results if r.case.sources and not r.said.handed_off]
    right = sum(bool(set(r.said.sources) & set(r.case.sources)) for r in named)
    uncited = sum(not r.said.sources for r in named)
    return {
        "replies_citing": sum(bool(r.said.sources) for r in results),
        "cases_naming_sources": len(named),
        "cited_an_answering_article": right,
        "cited_only_others": len(named) - right - uncited,
        "cited_none": uncited,
    }
