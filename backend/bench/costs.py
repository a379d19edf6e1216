"""Where a turn's time goes, under a workload: the CPU time of the server's own process and of
its engine's processes, and each kind of engine request the turns made (the reply, each
judge, each check: `engine/metered.py`), per turn.

Read before and after the workload; the difference, divided by its turns, is the table
`prefixdesk bench` prints and `latest.json` keeps (`<scenario>.ways.<way>.on.costs`).
"""

from collections import defaultdict
from collections.abc import Awaitable, Callable

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

# The metered engine's counters, by the name they get in the results.
ENGINE_METRICS = {
    "prefixdesk_engine_requests": "requests",
    "prefixdesk_engine_computed_tokens": "computed_tokens",
    "prefixdesk_engine_written_tokens": "written_tokens",
    "prefixdesk_engine_request_seconds": "seconds",
}

SHED_METRIC = "prefixdesk_checks_shed"  # the optional checks shed under load (turns/shedding.py)

Snapshot = dict[str, float]  # "cpu:app", "cpu:engine", "<kind>:<figure>", "shed:<check>"


def cpu_seconds(pid: int) -> Snapshot:
    """User and system CPU seconds of a process (the app and vLLM's front end) and of all its
    descendants (vLLM's engine core and worker), so far."""
    root = psutil.Process(pid)
    own = root.cpu_times()
    engine = 0.0
    for child in root.children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        engine += times.user + times.system
    return {"cpu:app": own.user + own.system, "cpu:engine": engine}


def engine_requests(metrics_text: str) -> Snapshot:
    """The metered engine's counters by kind, and the checks shed, from Prometheus text."""
    found: Snapshot = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            if family.name == SHED_METRIC:
                found[f"shed:{sample.labels['check']}"] = sample.value
            elif figure := ENGINE_METRICS.get(family.name):
                found[f"{sample.labels['kind']}:{figure}"] = sample.value
    return found


def app_costs_reader(client: httpx.AsyncClient, pid: int) -> Callable[[], Awaitable[Snapshot]]:
    async def read() -> Snapshot:
        text = (await client.get("/metrics")).text
        return {**cpu_seconds(pid), **engine_requests(text)}

    return read


def per_turn(before: Snapshot, after: Snapshot, turns: int) -> dict:
    """What the workload's turns cost, each on average: CPU seconds, and per kind of request."""
    if turns <= 0:
        return {}
    grown = {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after}
    kinds: dict[str, dict[str, float]] = defaultdict(dict)
    shed: dict[str, int] = {}
    for name, amount in grown.items():
        if name.startswith("shed:") and amount > 0:
            shed[name.removeprefix("shed:")] = int(amount)
        elif not name.startswith("cpu:") and amount > 0:
            kind, figure = name.split(":", 1)
            kinds[kind][figure] = round(amount / turns, 4)
    return {
        "turns": turns,
        "app_cpu_s": round(grown.get("cpu:app", 0.0) / turns, 4),
        "engine_cpu_s": round(grown.get("cpu:engine", 0.0) / turns, 4),
        "kinds": dict(sorted(kinds.items(), key=lambda item: -item[1].get("computed_tokens", 0.0))),
        "shed": shed,  # checks shed under load, in all (not per turn)
    }


def table(costs: dict) -> list[str]:
    """The per-turn costs as Markdown lines."""
    lines = [
        f"per turn ({costs['turns']} turns): app process CPU {costs['app_cpu_s']:.3f} s, "
        f"engine processes CPU {costs['engine_cpu_s']:.3f} s",
        "",
        "| request | per turn | computed tokens | written tokens | seconds (summed) |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind, figures in costs["kinds"].items():
        lines.append(
            f"| {kind} | {figures.get('requests', 0):.2f} | {figures.get('computed_tokens', 0):.1f} "
            f"| {figures.get('written_tokens', 0):.1f} | {figures.get('seconds', 0):.2f} |"
        )
    if shed := costs.get("shed"):
        lines += ["", "checks shed under load: " + ", ".join(f"{check} {n}" for check, n in shed.items())]
    return lines
