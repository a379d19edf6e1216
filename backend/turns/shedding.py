"""Optional checks dropped while this process writes many replies, in a stated order.

Under a burst every judge's prefill competes with the replies themselves for the engine: on
two CPU cores a turn's judges computed more prompt tokens than its reply (docs/benchmarks.md,
"Where a turn's time goes"). The checks a reply can do without go first, the one that decides
who answers last:

    samples      beside one other reply being written (it decodes several replies)
    supported    above `shed_checks_above` replies (the policy judge)
    sources      above it too (naming the article a reply used)
    line         above it too (quoting the line that answers, for "I don't know")
    unanswered   above twice as many (a run of unanswered replies hands over)
    handoff      above four times as many (does the customer ask for a person?)

What the deterministic checks (figures, grounding) find still holds a reply back, whatever
the load. Size `shed_checks_above` to the engine: replies in flight beyond what it computes
in a step or two only wait. Each check shed is counted (`prefixdesk_checks_shed` in
/metrics, and on the admin page).
"""

from backend.metrics.recorder import Metrics
from backend.turns.claims import ReplySlots

SHED_ORDER = ("samples", "supported", "sources", "line", "unanswered", "handoff")


class CheckShedding:
    def __init__(self, slots: ReplySlots, metrics: Metrics, *, above: int):
        self.slots = slots  # the replies queued or being written in this process, this one included
        self.metrics = metrics
        self.levels = {
            "samples": 1,
            "supported": above,
            "sources": above,
            "line": above,
            "unanswered": 2 * above,
            "handoff": 4 * above,
        }

    async def keeps(self, check: str) -> bool:
        """False (and counted) when the process is too busy for `check` now."""
        if self.slots.taken <= self.levels[check]:
            return True
        await self.metrics.check_shed(check)
        return False
