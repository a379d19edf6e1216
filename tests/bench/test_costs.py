"""Where a turn's time goes (bench/costs.py): the metered engine's counters read from /metrics
text, CPU times of a process and its children, and their growth per turn."""

import os
import subprocess
import sys
import time

from prometheus_client import CollectorRegistry, Counter, generate_latest

from backend.bench.costs import cpu_seconds, engine_requests, per_turn, table


def metrics_text(replies: int, judges: int) -> str:
    registry = CollectorRegistry()
    requests = Counter("prefixdesk_engine_requests", "", ["kind"], registry=registry)
    computed = Counter("prefixdesk_engine_computed_tokens", "", ["kind"], registry=registry)
    requests.labels("reply").inc(replies)
    requests.labels("handoff").inc(judges)
    computed.labels("reply").inc(40 * replies)
    computed.labels("handoff").inc(12 * judges)
    shed = Counter("prefixdesk_checks_shed", "", ["check"], registry=registry)
    shed.labels("samples").inc(replies)
    return generate_latest(registry).decode()


def test_the_counters_grow_per_turn_by_kind():
    before = {**engine_requests(metrics_text(2, 2)), "cpu:app": 1.0, "cpu:engine": 10.0}
    after = {**engine_requests(metrics_text(12, 12)), "cpu:app": 3.0, "cpu:engine": 30.0}
    costs = per_turn(before, after, 10)
    assert costs["app_cpu_s"] == 0.2 and costs["engine_cpu_s"] == 2.0
    assert costs["kinds"] == {
        "reply": {"requests": 1.0, "computed_tokens": 40.0},
        "handoff": {"requests": 1.0, "computed_tokens": 12.0},
    }
    assert list(costs["kinds"]) == ["reply", "handoff"]  # the costliest prefill first
    assert costs["shed"] == {"samples": 10}  # in all, not per turn
    printed = "\n".join(table(costs))
    assert "| handoff | 1.00 | 12.0 |" in printed and "checks shed under load: samples 10" in printed


def test_a_processs_children_count_as_the_engine():
    # As vLLM's engine core and worker are the app process's children.
    busy = subprocess.Popen([sys.executable, "-c", "import time\nsum(range(10**7))\ntime.sleep(5)"])
    try:
        time.sleep(1.5)
        spent = cpu_seconds(os.getpid())
        assert spent["cpu:engine"] > 0.05 and spent["cpu:app"] > 0
    finally:
        busy.kill()
        busy.wait()
