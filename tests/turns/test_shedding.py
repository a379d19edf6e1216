"""Optional checks shed under load (turns/shedding.py), in their order, counted in the metrics
the admin page reads; the handoff judge last."""

from backend.metrics.recorder import Metrics
from backend.metrics.store import MemoryMetricsStore
from backend.metrics.summary import summarize
from backend.turns.claims import ReplySlots
from backend.turns.shedding import SHED_ORDER, CheckShedding
from tests.helpers import RecordsRequests, done_of, open_conversation, take_turn
from tests.turns.test_agreement import QUESTION, turn_with_samples


async def test_under_load_the_samples_are_shed_and_counted(make_services, tiny_engine):
    services, engine, _ = await turn_with_samples(make_services, tiny_engine, [], shed_checks_above=1)
    slots = services.turns.claims.slots
    async with slots.take():  # another reply being written
        cid = (await open_conversation(services)).conversation.id
        done = done_of(await take_turn(services, cid, QUESTION))
    assert len(engine.asked) == 1 and not done.withheld  # the first turn's samples only
    summary = await summarize(services.metrics.store, 3600)
    assert summary.checks_shed["samples"] == 1


async def test_checks_are_shed_in_their_order():
    store = MemoryMetricsStore()
    slots = ReplySlots(64)
    shedding = CheckShedding(slots, Metrics(store), above=2)
    kept = {}
    for busy in (1, 2, 3, 5, 9):
        slots.taken = busy
        kept[busy] = [check for check in SHED_ORDER if await shedding.keeps(check)]
    slots.taken = 0
    assert kept == {
        1: ["samples", "supported", "sources", "line", "unanswered", "handoff"],
        2: ["supported", "sources", "line", "unanswered", "handoff"],
        3: ["unanswered", "handoff"],
        5: ["handoff"],
        9: [],
    }
    buckets = await store.buckets(10, 0, 10**10)
    assert sum(bucket.get("shed:samples", 0) for bucket in buckets.values()) == 4
    assert sum(bucket.get("shed:handoff", 0) for bucket in buckets.values()) == 1


async def test_far_beyond_the_bound_the_handoff_judge_is_shed_too(make_services, tiny_engine):
    engine = RecordsRequests(tiny_engine)
    services = await make_services(engine=engine, shed_checks_above=1, answer_checks="off")
    slots = services.turns.claims.slots
    cid = (await open_conversation(services)).conversation.id
    slots.taken += 4  # four other replies being written: this one is the fifth
    try:
        done = done_of(await take_turn(services, cid, "I want to talk to a human"))
    finally:
        slots.taken -= 4
    assert not done.handoff and not engine.requests("start", "handoff-")
    assert (await summarize(services.metrics.store, 3600)).checks_shed["handoff"] == 1
    done = done_of(await take_turn(services, cid, "I want to talk to a human"))
    assert done.handoff  # the load gone, the judge reads the message again
