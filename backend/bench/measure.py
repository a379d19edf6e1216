"""A target's workloads run one after another, each with its peaks and speculative drafts."""

import os

from backend.bench.costs import per_turn
from backend.bench.load import drive
from backend.bench.targets import Target
from backend.bench.workloads import Conversation

WARMUP = Conversation("warmup", ("Hello, are you open on Sundays?",))


async def warm_up(target: Target) -> None:
    """One untimed request first: connections, lazy imports and first-call caches are not what
    the benchmark measures."""
    await target.send(await target.open(WARMUP), WARMUP.turns[0])


async def measure(
    workloads, target, peaks_of, drafts_of, prefix_tokens, block_size, costs_of=None
) -> list[dict]:
    """`drafts_of()`: speculative decoding's (draft tokens, accepted tokens) so far; `costs_of()`
    (if given): the CPU times and engine requests so far (`costs.py`)."""
    await warm_up(target)
    runs = []
    for workload in workloads:
        load_avg = os.getloadavg()[0]
        drafted, accepted = await drafts_of()
        spent = await costs_of() if costs_of else None
        async with peaks_of() as peaks:
            total_s, records = await drive(
                workload, target, prefix_tokens=prefix_tokens, block_size=block_size
            )
        drafted_after, accepted_after = await drafts_of()
        costs = per_turn(spent, await costs_of(), len(records)) if costs_of and spent is not None else None
        runs.append(
            {
                "scenario": workload.scenario,
                "part": workload.part,
                "rate": workload.rate,
                "label": workload.label,
                "total_s": total_s,
                "load_avg_1m_at_start": load_avg,
                "records": records,
                "draft_tokens": drafted_after - drafted,
                "accepted_tokens": accepted_after - accepted,
                **peaks.as_dict(),
                **({"costs": costs} if costs else {}),
            }
        )
    return runs
