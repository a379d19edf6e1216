"""What `prefixdesk eval` prints of its results, and the bots a baseline shows got worse."""

from typing import Any

WRONG_MARGIN = 1  # wrong answers a bot may gain against the baseline: the CPU's float rounding


def regressions(results: dict[str, Any], baseline: dict[str, Any], margin: int) -> list[str]:
    """The bots whose answers got worse: more wrong ones (beyond one), or fewer right ones
    (beyond `margin`); against a baseline without outcomes, fewer passed cases."""
    worse = []
    for slug, result in results.items():
        before = baseline.get(slug)
        if before is None:
            continue
        now, then = result.get("outcomes"), before.get("outcomes")
        if then is None or now is None:
            if result["passed"] < before["passed"] - margin:
                worse.append(
                    f"  {slug}: {result['passed']}/{result['cases']} passed, baseline {before['passed']}"
                )
            continue
        if now["wrong"] > then["wrong"] + WRONG_MARGIN:
            worse.append(f"  {slug}: {now['wrong']} wrong answers, baseline {then['wrong']}")
        if now["right"] < then["right"] - margin:
            worse.append(f"  {slug}: {now['right']}/{result['cases']} right, baseline {then['right']}")
    return worse


def table(results: dict[str, Any]) -> str:
    lines = []
    for slug, result in results.items():
        handoff, doubt = result["handoff"], result["doubt"]
        lines += [
            f"\n{slug}: {result['passed']}/{result['cases']} passed in {result['seconds']} s, "
            f"cached share {result['cached_share']}",
            "  answers: {right} right, {held_back} held back, {wrong} wrong".format(**result["outcomes"]),
            f"  handoff precision {handoff['precision']} recall {handoff['recall']} "
            f"({handoff['happened']} handed over, {handoff['expected']} expected)",
            f"  doubt flags: {doubt['wrong_flagged']}/{doubt['wrong_replies']} wrong replies, "
            f"{doubt['right_flagged']}/{doubt['right_replies']} right ones; "
            f"{doubt.get('withheld', 0)} not shown, their sources quoted instead",
            f"  first token after {result['ttft_ms_p50']} ms, shown after "
            f"{result['first_token_shown_ms_p50']} ms "
            f"({result.get('first_token_shown_as_written_ms_p50')} ms for the replies shown as written; "
            "p50s); held for the gate and the opening check "
            f"{result['first_token_held_ms_mean']} ms, checks after the reply "
            f"{result['checks_ms_mean']} ms (means)",
            f"  second tries: {result['second_tries']['cases']} cases, "
            f"{result['second_tries']['passed']} of them passed",
        ]
        sources = result.get("sources", {})
        if sources.get("cases_naming_sources"):
            lines.append(
                f"  sources: {sources['cited_an_answering_article']}/{sources['cases_naming_sources']} "
                f"replies named an article that answers the case ({sources['cited_only_others']} only "
                f"others, {sources['cited_none']} none)"
            )
        for failure in result["wrong"]:
            reply = failure["reply"].replace("\n", " ")[:120]
            lines.append(f"  WRONG {failure['case']}: {failure['why']} | {reply}")
        for failure in result["failures"]:
            if failure.get("outcome") == "held_back":
                reply = failure["reply"].replace("\n", " ")[:120]
                lines.append(f"  HELD BACK {failure['case']}: {'; '.join(failure['reasons'])} | {reply}")
    return "\n".join(lines)
