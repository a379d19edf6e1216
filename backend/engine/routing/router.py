"""Which replica serves a request: the cache-aware policy and the round-robin baseline.

Cache-aware, in order:
1. A conversation goes to the replica already assigned to it, which holds its history.
2. Unless that replica is overloaded: more than `abs_threshold` requests above the least
   loaded one and more than `rel_threshold` times its load. Then the least loaded replica
   takes it over (one cache miss now, balance after); SGLang's router uses the same test.
3. A conversation without a live assignment (new, or its replica died) is placed by
   consistent hashing with bounded load, among the replicas already warm with its bot's
   prefix if there are any.
"""

import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from backend.engine.routing import ring
from backend.engine.routing.assignments import Assignments

logger = logging.getLogger(__name__)

Policy = Literal["cache_aware", "round_robin"]


@dataclass(frozen=True)
class Balance:
    load_factor: float = 1.25
    abs_threshold: int = 8
    rel_threshold: float = 1.5

    def overloaded(self, replica: str, loads: Mapping[str, float], replicas: Sequence[str]) -> bool:
        least = min(loads.get(r, 0) for r in replicas)
        load = loads.get(replica, 0)
        return load - least > self.abs_threshold and load > self.rel_threshold * least


class Router:
    def __init__(self, policy: Policy, assignments: Assignments, balance: Balance = Balance()):
        self.policy = policy
        self.assignments = assignments
        self.balance = balance
        self._turns = itertools.count()

    async def choose(
        self,
        key: str | None,
        replicas: Sequence[str],
        loads: Mapping[str, float],
        warm: Sequence[str] = (),
    ) -> str:
        """The replica for a request with affinity `key` among the routable `replicas`.

        `warm` lists the replicas known to hold the request's bot prefix.
        """
        if not replicas:
            raise LookupError("no replica is available")
        if self.policy == "round_robin":
            return replicas[next(self._turns) % len(replicas)]
        if key is None:
            return least_loaded([r for r in replicas if r in warm] or replicas, loads)
        try:
            return await self._sticky(key, replicas, loads, warm)
        except Exception as error:  # Redis away: hashing alone still agrees across processes
            logger.warning("routing state unavailable, hashing %s: %s", key, error)
            return ring.lookup(key, replicas, loads, self.balance.load_factor)

    async def _sticky(
        self, key: str, replicas: Sequence[str], loads: Mapping[str, float], warm: Sequence[str]
    ) -> str:
        current = await self.assignments.get(key)
        if current is not None and current in replicas:
            if not self.balance.overloaded(current, loads, replicas):
                return current
            target = least_loaded(replicas, loads)
            logger.info("conversation %s moves %s -> %s for balance", key, current, target)
        else:
            preferred = [r for r in replicas if r in warm] or list(replicas)
            target = ring.lookup(key, preferred, loads, self.balance.load_factor)
        if current is None:
            chosen = await self.assignments.claim(key, target)
        else:
            chosen = await self.assignments.move(key, current, target)
        # Another process may have just chosen a replica this one thinks is down.
        return chosen if chosen in replicas else target


def least_loaded(replicas: Sequence[str], loads: Mapping[str, float]) -> str:
    return min(replicas, key=lambda r: loads.get(r, 0))
